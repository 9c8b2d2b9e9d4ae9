"""Every ``ebmeval`` command shown in README.md and docs/*.md runs, under the substitution rule below.

The rule (also in docs/design.md, "Documented commands"), applied to each command found in a
``bash`` code block:

* the model under evaluation and every role's model become ``scripted:Answer: A`` (a cheap
  model that answers every prompt alike; a second and third distinct ``--model`` of a grid become
  ``baseline/random`` and ``baseline/first-option``); a ``run`` without ``--model`` gets it too;
* ``--limit N`` becomes ``--limit 2``, and a ``run`` without a limit gets ``--limit 2``;
* run-id placeholders (``RUN_ID``, ``RUN``, ``RUN_A``, ``RUN1``, ``CLOSED_BOOK_RUN`` …) become the
  ids of two runs made first; files a command reads (``my_questions.csv``, ``free_text.csv``, ``experiment.yaml``)
  are written first, small;
* a command listed in ``ILLUSTRATIVE`` is not run, for the reason given there (a syntax summary
  with ``|`` or ``[…]``, a server that runs until stopped, a compile of minutes, data that is not
  shipped).

A command must then exit 0. A documented command that breaks fails this test.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from ebmeval.store import RunStore
from tests.helpers.cli import ebmeval

ROOT = Path(__file__).resolve().parents[1]
MODEL = "scripted:Answer: A"
MODELS = (MODEL, "baseline/random", "baseline/first-option")
ILLUSTRATIVE = {
    "ebmeval show RUN_ID [--by LABEL] [--sample ID] [--errors] [--json]": "syntax summary",
    "ebmeval compare RUN_A RUN_B [RUN_C …]": "syntax summary",
    "ebmeval export RUN_ID --format jsonl|csv|parquet": "syntax summary (each format is run in tests/store)",
    "ebmeval annotate create|serve|export|import|report|revoke": "syntax summary (docs/annotate.md; tests/annotate)",
    "ebmeval synthesis table RUN1 RUN2 … [--metric rubric --metric panel …] [--contrast panel] [--json]": "syntax",
    "ebmeval run --task caremedeval --task-arg context=none|abstract|full --limit 6": "syntax summary",
    "ebmeval run --task mirage/<name> --limit 10": "syntax summary",
    "ebmeval view": "a server that runs until stopped (tests/view runs it)",
    "ebmeval view --store runs/ebmeval.sqlite": "a server that runs until stopped (tests/view runs it)",
    "ebmeval serve-model --model local --port 8080": "a server that runs until stopped (tests/models)",
    "ebmeval engine build": "compiles llama.cpp for minutes (tests/models/test_engine.py)",
    "ebmeval score pubmedqa --predictions preds.jsonl": "needs another tool's predictions",
    "ebmeval arena RUN_A RUN_B --role judge=local": "needs long-form runs (tests/arena)",
    "ebmeval reproduce mrag --model openai-compatible:gpt-4o@http://127.0.0.1:8000/v1 --model "
    "openai-compatible:gpt-3.5-turbo@http://127.0.0.1:8001/v1 --condition liveqa --condition medicationqa "
    "--condition healthsearchqa --role judge=openai-compatible:judge@http://127.0.0.1:8002/v1 "
    "--preset-arg min_matches=80 --limit 50": "needs two long-form models and a judge (tests/reproduce/test_mrag.py)",
    "ebmeval factuality validate --run RUN_ID": "needs a factuality run (tests/factuality)",
    "ebmeval synthesis table RUN_A RUN_B": "needs synthesis runs (tests/synthesis)",
    "ebmeval corpus ingest pubmed.xml.gz --out corpus/ && ebmeval index build corpus/ --out index/": "no PubMed file",
    "ebmeval run --task mirage/bioasq --task-arg retrieval=index/ --task-arg k=8": "needs the index built above",
    "ebmeval run --task my_tasks.py@my_task": "a file of the reader's (docs/extending.md runs its own example)",
    "ebmeval rescore RUN_ID --scorer judge/steps-with-reference --role judge=local": "needs a medthink run",
    "ebmeval show RUN --sample 3": "needs a medthink/reasoning run",
    "ebmeval corpus ingest --builtin pubmedqa-contexts --data-root ../shared/data --out pqa-corpus": "test data path",
    "ebmeval corpus ingest --builtin bioasq-snippets --data-root ../shared/data --out bioasq-corpus": "test data path",
    "ebmeval index build pqa-corpus --out pqa-bm25": "needs the corpus above",
    "ebmeval index build bioasq-corpus --out bioasq-bm25": "needs the corpus above",
    "ebmeval run --task mirage/pubmedqa --task-arg retrieval=pqa-bm25 --limit 15": "needs the index above",
    "ebmeval run --task mcq-file --task-arg path=hf_folder/ --task-arg split=test "
    '--task-arg "fields={id: qid, question: prompt, options: choices, answer: label}"': "tests/tasks/test_own_data.py",
}
"""Documented commands not run here, and why."""
PLACEHOLDER = re.compile(r"^(RUN(_ID|_[A-C]|[0-9])?|[A-Z_]+_RUN)$")
CSV = "id,question,A,B,answer\nc1,Which drug is a statin?,atorvastatin,metformin,A\n"


def documented_commands() -> list[tuple[str, str]]:
    """(file, command) of every ``ebmeval`` line in a bash block, continuations joined, comments dropped."""
    found = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for block in re.findall(r"```(?:bash|sh|shell)\n(.*?)```", path.read_text(encoding="utf-8"), re.S):
            for line in block.replace("\\\n", " ").splitlines():
                command = re.sub(r"^(\$ )?(\.venv/bin/)?", "", line.strip())
                if command.startswith("ebmeval "):
                    command = re.sub(r"\s+#.*$", "", command)
                    found.append((str(path.relative_to(ROOT)), " ".join(command.split())))
    return found


def substituted(command: str, runs: list[str]) -> list[str]:
    """The command's arguments under the rule of the module docstring."""
    args = shlex.split(command)[1:]
    out: list[str] = []
    placeholders = iter(runs * 3)
    models: dict[str, str] = {}
    skip = False
    for i, arg in enumerate(args):
        if skip:
            skip = False
            continue
        if arg in ("--model", "--role") and i + 1 < len(args):
            value = args[i + 1]
            if arg == "--model":
                out += [arg, models.setdefault(value, MODELS[len(models)])]
            else:
                out += [arg, f"{value.split('=', 1)[0]}={MODEL}"]
            skip = True
        elif arg == "--limit" and i + 1 < len(args):
            out += ["--limit", "2"]
            skip = True
        elif PLACEHOLDER.match(arg):
            out.append(next(placeholders))
        else:
            out.append(arg)
    if out and out[0] == "run":
        out += [] if "--model" in out else ["--model", MODEL]
        out += [] if "--limit" in out else ["--limit", "2"]
    return out


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """A folder with a store holding two comparable runs and the small files the docs read."""
    root = tmp_path_factory.mktemp("docs")
    for model in (MODEL, "baseline/random"):
        made = ebmeval("run", "--task", "pubmedqa", "--model", model, "--limit", "2", cwd=root)
        assert made.returncode == 0, made.stderr
    (root / "my_questions.csv").write_text(CSV)
    (root / "questions.csv").write_text(CSV)
    (root / "free_text.csv").write_text("id,question,reference\nf1,Why?,Because.\n")
    (root / "experiment.yaml").write_text(f"task: pubmedqa\nmodel: '{MODEL}'\n")
    runs = [r.run_id for r in RunStore(root / "runs" / "ebmeval.sqlite", read_only=True).list_runs()]
    return root, runs


COMMANDS = documented_commands()


def test_the_documented_commands_are_found_and_each_runs_or_says_why_not() -> None:
    commands = {command for _file, command in COMMANDS}
    assert len(commands) >= 40
    assert not set(ILLUSTRATIVE) - commands, "an illustrative entry matches no documented command"


@pytest.mark.parametrize(
    ("source", "command"), [c for c in COMMANDS if c[1] not in ILLUSTRATIVE], ids=lambda value: value[:60]
)
def test_documented_command_runs(source: str, command: str, workdir: tuple[Path, list[str]]) -> None:
    root, runs = workdir
    for part in command.split(" && "):
        args = substituted(part, runs)
        result = ebmeval(*args, cwd=root, timeout=300)
        assert result.returncode == 0, f"{source}: {part}\n→ ebmeval {shlex.join(args)}\n{result.stderr[-2000:]}"
