"""MedThink-Bench under the paper's settings, through a real HTTP server on 127.0.0.1 that logs every request."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ebmeval.builtin_tasks.medthink_reasoning import AnswerAccuracy, gold_letter, load_medthink_reasoning, options_of
from ebmeval.cli._app import app
from ebmeval.report import collect
from ebmeval.scorers.text import Bleurt
from ebmeval.store import RunStore
from ebmeval.tasks import Generation, ParsedAnswer, Sample
from tests.helpers.bleurt import write_checkpoint
from tests.helpers.cli import ebmeval
from tests.helpers.openai_server import openai_server, without_preflight

JUDGE_REPLY = json.dumps({"supported": True, "required": 3, "covered": 2, **{str(i): True for i in range(1, 40)}})


def answer_for(prompt: str) -> str:
    """The model under test: reasons, then names option A by its letter only (the gold is 'A. <text>')."""
    return "The findings point to the first option.\nFinal answer: A"


@pytest.fixture
def server() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    def reply(body: dict[str, Any]) -> str:
        return JUDGE_REPLY if body["model"] == "judge" else answer_for(body["messages"][-1]["content"])

    with openai_server(reply) as served:
        yield served


def test_paper_settings_reach_the_judge_and_accuracy_and_steps_come_from_one_run(
    server: tuple[str, list[dict[str, Any]]], tmp_path: Path
) -> None:
    url, bodies = server
    result = CliRunner().invoke(
        app,
        [
            "run",
            "--task",
            "medthink/reasoning",
            "--task-arg",
            "prompts=medthink-paper",
            "--task-arg",
            "text_metrics=false",
            "--model",
            f"openai-compatible:model@{url}",
            "--role",
            f"judge=openai-compatible:judge@{url}",
            "--limit",
            "3",
            "--no-shuffle",
            "--store",
            str(tmp_path / "runs.sqlite"),
            "--no-cache",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    judged = [b for b in without_preflight(bodies) if b["model"] == "judge"]
    answered = [b for b in without_preflight(bodies) if b["model"] == "model"]
    assert len(answered) == 3 and judged
    assert {(b["temperature"], b["max_tokens"], b["seed"]) for b in judged} == {(0.1, 4096, 42)}
    assert {(b["temperature"], b["max_tokens"], b["seed"]) for b in answered} == {(0.0, 4096, 42)}
    summary = json.loads(result.stdout[result.stdout.index("{") :])
    metrics = {(m["scorer"], m["metric"]): m for m in summary["metrics"] if m.get("group") is None}
    # the first three questions' gold answers are A. IGF1, A. HRCT, B. Serum lipase; the model says "A"
    assert metrics[("medthink/accuracy", "accuracy")]["value"] == pytest.approx(2 / 3)
    assert metrics[("judge/steps-without-reference[judge=judge]", "steps_covered")]["value"] == pytest.approx(2 / 3)
    assert metrics[("judge/steps-with-reference-single[judge=judge]", "steps_supported")]["value"] == 1.0

    # the judges' calls, tokens, time and cost in the report (MedThink Fig. 5c)
    store = RunStore(tmp_path / "runs.sqlite", read_only=True)
    report = collect(store, [summary["run_id"]], prices={"openai-compatible/judge": (1.0, 2.0)})
    store.close()
    usage = report.calls[summary["run_id"]]
    assert {u.role for u in usage} == {"judge"} and sum(u.calls for u in usage) == len(judged)
    assert sum(u.input_tokens for u in usage) == 10 * len(judged) and sum(u.output_tokens for u in usage) == 5 * len(
        judged
    )
    table = report.calls_table()
    assert table.title == "Judge and role calls" and all(
        row[1:3] == ["judge", "openai-compatible/judge"] for row in table.rows
    )
    assert sum(row[-1] for row in table.rows) == pytest.approx(20 * len(judged) / 1e6)


@pytest.mark.parametrize(
    ("reply", "correct"),
    [("A", True), ("A. IGF1", True), ("(A)", True), ("IGF1", True), ("**A. IGF1**", True), ("B. ACTH", False)],
)
async def test_accuracy_reads_a_letter_or_an_option_text_as_the_option(reply: str, correct: bool) -> None:
    sample = Sample(id="1", input="Which test? A. IGF1 B. ACTH C. TSH D. Serum coisol", target="A. IGF1")
    generation = Generation(sample_id="1", output=f"Final answer: {reply}", answer=ParsedAnswer(value=reply))
    score = await AnswerAccuracy()(sample, generation, None)  # type: ignore[arg-type]
    assert score.values == {"accuracy": float(correct)}


def test_options_in_sequence_only() -> None:
    question = "Next test? (A) HIV test (B) CD4 count (C) NAAT for C. trachomatis and N. gonorrhea"
    assert options_of(question) == {"A": "HIV test", "B": "CD4 count", "C": "NAAT for C. trachomatis and N. gonorrhea"}
    assert gold_letter("C. NAAT for C. trachomatis and N. gonorrhea", options_of(question)) == "C"


def test_request_seed_is_sent_literally(server: tuple[str, list[dict[str, Any]]], tmp_path: Path) -> None:
    url, bodies = server
    args = ["run", "--task", "medthink/reasoning", "--task-arg", "judges=false", "--task-arg", "text_metrics=false"]
    args += ["--model", f"openai-compatible:model@{url}", "--limit", "2", "--store", str(tmp_path / "r.sqlite")]
    args += ["--no-cache", "--temperature", "0.7"]
    result = CliRunner().invoke(app, [*args, "--request-seed", "42"])
    assert result.exit_code == 0, result.output
    assert [b["seed"] for b in without_preflight(bodies)] == [
        42,
        42,
    ]  # without the flag each sample gets its own derived seed


def test_sweep_command_prints_one_row_per_judge_and_prompt(tmp_path: Path) -> None:
    store = str(tmp_path / "r.sqlite")
    args = ["run", "--task", "medthink/reasoning", "--task-arg", "judges=false", "--task-arg", "text_metrics=false"]
    done = CliRunner().invoke(
        app, [*args, "--model", "scripted:Final answer: A", "--limit", "3", "--store", store, "--json"]
    )
    assert done.exit_code == 0, done.output
    run_id = json.loads(done.stdout[done.stdout.index("{") :])["run_id"]
    judges = ["--judge", f"strict=scripted:{JUDGE_REPLY}", "--judge", "lenient=scripted:no"]
    swept = CliRunner().invoke(
        app, ["sweep", run_id, *judges, "--prompt", "p1", "--prompt", "p2", "--store", store, "--json"]
    )
    assert swept.exit_code == 0, swept.output
    rows = json.loads(swept.stdout)
    assert [(r["judge"], r["prompt"]) for r in rows] == [("strict", "p1"), ("lenient", "p1"), ("strict", "p2")]
    assert [r["mean"] for r in rows] == [1.0, 0.0, 1.0] and all(r["n"] == 3 for r in rows)
    again = CliRunner().invoke(app, ["sweep", run_id, *judges, "--prompt", "p1", "--store", store, "--json"])
    assert [r["scored"] for r in json.loads(again.stdout)] == [0, 0]  # stored scores are reused, nothing judged twice
    table = CliRunner().invoke(app, ["sweep", run_id, *judges, "--prompt", "p1", "--store", store]).stdout
    assert table.splitlines()[0].startswith("| strategy | judge | prompt | mean [95% CI]")


def test_bleurt_from_a_checkpoint_scores_the_rationale_against_the_expert_steps(tmp_path: Path) -> None:
    checkpoint = write_checkpoint(tmp_path / "BLEURT-tiny")
    reply = "The patient has a fever and cough.\nFinal answer: A"
    base = ["run", "--task", "medthink/reasoning", "--task-arg", "judges=false", "--task-arg", "text_metrics=false"]
    base += ["--model", f"scripted:{reply}", "--limit", "2", "--no-shuffle", "--store", str(tmp_path / "r.sqlite")]
    result = CliRunner().invoke(app, [*base, "--task-arg", f"bleurt={checkpoint}", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout[result.stdout.index("{") :])
    metrics = {(m["scorer"], m["metric"]): m["value"] for m in summary["metrics"] if m.get("group") is None}
    samples = load_medthink_reasoning()[:2]
    expected = Bleurt(checkpoint).score(
        [" ".join(s.metadata["scoring_points"]) for s in samples], [reply.split("\n")[0]] * 2
    )
    assert metrics[("text/bleurt", "bleurt")] == pytest.approx(sum(expected) / 2)

    # The same checkpoint under another path is the same run and score set, all reused.
    copy = tmp_path / "elsewhere" / "copy"
    shutil.copytree(checkpoint, copy)
    again = CliRunner().invoke(app, [*base, "--task-arg", f"bleurt={copy}/", "--json"])
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout[again.stdout.index("{") :])["run_id"] == summary["run_id"]
    store = RunStore(tmp_path / "r.sqlite", read_only=True)
    sets = [s for s in store.score_sets(summary["run_id"]) if s.spec["name"] == "text/bleurt"]
    store.close()
    assert len(sets) == 1 and sets[0].spec["args"]["identity"] == Bleurt(checkpoint).checkpoint.identity


def test_bleurt_rescores_a_stored_run_as_the_task_option_does(tmp_path: Path) -> None:
    checkpoint = write_checkpoint(tmp_path / "BLEURT-tiny")
    reply = "Fever and cough point to an infection.\nFinal answer: A"
    store = ["--store", str(tmp_path / "r.sqlite")]
    args = ["run", "--task", "medthink/reasoning", "--task-arg", "judges=false", "--task-arg", "text_metrics=false"]
    done = CliRunner().invoke(
        app, [*args, "--model", f"scripted:{reply}", "--limit", "2", "--no-shuffle", *store, "--json"]
    )
    run_id = json.loads(done.stdout[done.stdout.index("{") :])["run_id"]
    texts = ["prediction=metadata:rationale", "reference=metadata:scoring_points", f"checkpoint={checkpoint}"]
    options = [value for text in texts for value in ("--scorer-arg", text)]
    rescored = CliRunner().invoke(app, ["rescore", run_id, "--scorer", "text/bleurt", *options, *store, "--json"])
    assert rescored.exit_code == 0, rescored.output
    db = RunStore(tmp_path / "r.sqlite", read_only=True)
    (bleurt_set,) = db.score_sets_of(run_id, "text/bleurt")
    values = [score.values["bleurt"] for _, _, _, score in db.scores(run_id, bleurt_set.id)]
    db.close()
    samples = load_medthink_reasoning()[:2]
    steps = [" ".join(s.metadata["scoring_points"]) for s in samples]
    assert sorted(values) == pytest.approx(sorted(Bleurt(checkpoint).score(steps, [reply.split("\n")[0]] * 2)))


def test_bleurt_that_cannot_be_computed_is_refused_and_never_substituted(tmp_path: Path) -> None:
    base = ["run", "--task", "medthink/reasoning", "--task-arg", "judges=false", "--model", "scripted:Final answer: A"]
    store = ["--limit", "1", "--store", str(tmp_path / "r.sqlite")]
    missing = ebmeval(*base, *store, "--task-arg", f"bleurt={tmp_path / 'nowhere'}", cwd=tmp_path)
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert f"field 'bleurt': no BLEURT checkpoint at {tmp_path / 'nowhere'}" in missing.stderr
    other = write_checkpoint(tmp_path / "bert", model_type="bert")
    wrong = ebmeval(*base, *store, "--task-arg", f"bleurt={other}", cwd=tmp_path)
    assert wrong.returncode == 2 and "model_type is 'bert', not 'bleurt'" in wrong.stderr
    assert not (tmp_path / "r.sqlite").exists()  # nothing ran under another metric's name
