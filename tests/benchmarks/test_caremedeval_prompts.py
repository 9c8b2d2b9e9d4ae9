"""CareMedEval's own prompt (the paper's physician-role instruction) as a prompt set, in French and English."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ebmeval import create_task
from tests.helpers.cli import ebmeval

FIGURE_1 = (
    "You are a physician capable of rigorously interpreting data from medical studies. Based on the given "
    "article, answer the following multiple-choice question. Provide only the letter(s) corresponding to the "
    "correct answer(s) among: A, B, C, D, E. Your answer must strictly follow the exact format: one or more "
    "letters, separated by commas (e.g., B, E)."
)
"""The instruction of the paper's Figure 1 (Bonzi et al., 2025), as printed."""

ITEM = "350275dda4a98c339efab437f4748327ca09f139cd9007c836e9fb98483b9f5c"
ENGLISH = re.compile(r"\b(Answer|Answers|Options|Reply|Context|correct|Question:)\b")


def _prompt(tmp_path: Path, *args: str) -> str:
    done = ebmeval("show-prompt", "caremedeval", "--sample", ITEM, *args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_show_prompt_renders_the_french_prompt_set(tmp_path: Path) -> None:
    shown = _prompt(
        tmp_path, "--task-arg", "language=fr", "--task-arg", "prompt_set=paper", "--task-arg", "context=none"
    )
    assert shown.startswith("=== direct ===\n[user]\nVous êtes un médecin capable d'interpréter rigoureusement")
    assert "parmi : A, B, C, D, E." in shown and "(par exemple : B, E)" in shown
    assert "\nQuestion :\nQuelle est la principale limite de cette étude ?\n\nRéponses :\nA. La randomisation" in shown
    assert not ENGLISH.search(shown), ENGLISH.search(shown)
    cot = _prompt(
        tmp_path, *("--task-arg", "language=fr", "--task-arg", "prompt_set=paper", "--task-arg", "strategy=cot")
    )
    assert "Article :\n" in cot and "« Réponse : »" in cot
    assert not ENGLISH.search(cot.split("Article :\n", 1)[0] + cot.split("Question :", 1)[1])


def test_the_english_prompt_set_is_figure_1(tmp_path: Path) -> None:
    shown = _prompt(tmp_path, "--task-arg", "prompt_set=paper", "--task-arg", "context=none")
    assert shown.partition("=== model calls ===")[0] == (
        f"=== direct ===\n[user]\n{FIGURE_1}\n\nQuestion:\nWhat is the main limitation of this study?\n\nAnswers:\n"
        "A. The 2:1 randomization\nB. The choice of the primary outcome\nC. The number of subjects included\n"
        "D. The quantity of antibodies contained in the plasma\nE. The conducting of the study in Argentina\n\n"
    )


def test_each_prompt_set_is_its_own_task_version() -> None:
    versions = {
        (language, prompts): create_task("caremedeval", language=language, prompt_set=prompts).version
        for language in ("en", "fr")
        for prompts in ("default", "paper")
    }
    # the questions' language is a task option of its own; the prompt set's wording changes the version
    assert versions[("fr", "default")] == versions[("en", "default")] == create_task("caremedeval").version
    assert len({versions[("en", "default")], versions[("en", "paper")], versions[("fr", "paper")]}) == 3


@pytest.mark.parametrize(
    ("option", "message"),
    [("strategy=cot-refine", "not strategy 'cot-refine'"), ("answer_format=strict", "not answer_format='strict'")],
)
def test_what_the_paper_does_not_word_is_refused(tmp_path: Path, option: str, message: str) -> None:
    done = ebmeval("show-prompt", "caremedeval", "--task-arg", "prompt_set=paper", "--task-arg", option, cwd=tmp_path)
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr


def test_baselines_read_the_paper_prompt_in_both_languages(tmp_path: Path) -> None:
    import json

    for language in ("fr", "en"):
        args = ("run", "--task", "caremedeval", "--model", "baseline/most-frequent-2", "--json")
        options = ("--task-arg", f"language={language}", "--task-arg", "prompt_set=paper", "--task-arg", "context=none")
        done = ebmeval(*args, *options, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        summary = json.loads(done.stdout)
        values = {m["metric"]: round(m["value"], 4) for m in summary["metrics"]}
        assert values == {"exact_match": 0.0337, "f1": 0.4515, "hamming": 0.3329, "lca": 0.1948}
        assert summary["failing"] == 0
