"""Every ``ebmeval`` command shown in README.md and docs/*.md runs, under the substitution rule below.

The rule (also in docs/design.md, "Documented commands"), applied to each command found in a
``bash`` code block:

* the model under evaluation and every role's model become ``scripted:Answer: A`` (a cheap
  model that answers every prompt alike; a second and third distinct ``--model`` of a grid become
  ``scripted:Answer: B`` and ``scripted:Answer: C``); a ``run`` without ``--model`` gets it too, and
  so does a role whose task default is a fixed model (``negated-rag``'s negator, the bundled model);
  a model placeholder elsewhere (``judges=NAME=SPEC``) becomes the first, and ``--paper-row SPEC=ROW``
  names the model that replaced SPEC;
* ``--limit N`` becomes ``--limit 2``, and a ``run`` or ``reproduce PRESET`` without a limit gets ``--limit 2``;
* ``../shared/data``, the project's data folder as seen from the repository root, is that folder
  (the command is skipped where it is absent);
* run-id placeholders (``RUN_ID``, ``RUN``, ``RUN_A``, ``RUN1``, ``CLOSED_BOOK_RUN`` …) become the
  ids of two runs made first; files a command reads (``my_questions.csv``, ``free_text.csv``,
  ``experiment.yaml``, ``abstracts.jsonl``) are written first, small;
* the commands of one page run in order, in one folder with one cache (a command may read what an
  earlier one made: a corpus, an index, a negation store); a command run alone runs the earlier
  ones of its page first;
* a command listed in ``ILLUSTRATIVE`` is not run, for the reason given there (a syntax summary
  with ``|`` or ``[…]``, a server that runs until stopped, a compile of minutes, data that is not
  shipped).

A command must then exit 0. A documented command that breaks fails this test.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from ebmeval.builtin_tasks.synthesis import load_synthesis
from ebmeval.cli._common import key_values
from ebmeval.models import default_cache_dir
from ebmeval.store import RunStore
from ebmeval.tasks import create_task
from tests.helpers.cli import ebmeval

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
"""The project's data folder, which the docs name ``../shared/data`` (relative to the repository root)."""
MODEL = "scripted:Answer: A"
MODELS = (MODEL, "scripted:Answer: B", "scripted:Answer: C")
SPEC = re.compile(r"\bSPEC\d*\b")
USER_CACHE = default_cache_dir()
"""The real cache directory, read before any test changes the environment."""
CACHE = ".ebmeval-cache"
"""The cache folder inside the docs' folder: each page's commands share one, as a user's session does."""
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
    "ebmeval factuality validate --run RUN_ID": "needs a factuality run (tests/factuality)",
    "ebmeval synthesis table RUN_A RUN_B": "needs synthesis runs (tests/synthesis)",
    "ebmeval corpus ingest pubmed.xml.gz --out corpus/ && ebmeval index build corpus/ --out index/": "no PubMed file",
    "ebmeval run --task mirage/bioasq --task-arg retrieval=index/ --task-arg k=8": "needs the index built above",
    "ebmeval run --task my_tasks.py@my_task": "a file of the reader's (docs/extending.md runs its own example)",
    "ebmeval rescore RUN_ID --scorer judge/steps-with-reference --role judge=local": "needs a medthink run",
    "ebmeval show RUN --sample 3": "needs a medthink/reasoning run",
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
    """The command's arguments under the rule of the module docstring (all but the roles of a task's defaults)."""
    args = shlex.split(command)[1:]
    out: list[str] = []
    placeholders = iter(runs * 3)
    models: dict[str, str] = {}
    skip = False
    for i, arg in enumerate(args):
        value = args[i + 1] if i + 1 < len(args) else ""
        if skip:
            skip = False
            continue
        skip = arg in ("--model", "--role", "--paper-row", "--limit", "--data-root") and bool(value)
        if arg == "--model" and skip:
            out += [arg, models.setdefault(value, MODELS[len(models)])]
        elif arg == "--role" and skip:
            out += [arg, f"{value.split('=', 1)[0]}={MODEL}"]
        elif arg == "--paper-row" and skip:
            spec, _, row = value.rpartition("=")
            out += [arg, f"{models.setdefault(spec, MODELS[len(models)])}={row}"]
        elif arg == "--limit" and skip:
            out += ["--limit", "2"]
        elif arg == "--data-root" and skip:
            out += [arg, str(DATA) if value.rstrip("/") == "../shared/data" else value]
        elif PLACEHOLDER.match(arg):
            out.append(next(placeholders))
        else:
            out.append(SPEC.sub(MODEL, arg))
    if out and out[0] == "run":
        out += [] if "--model" in out else ["--model", MODEL]
    if out[:1] == ["run"] or (out[:1] == ["reproduce"] and len(out) > 1 and not out[1].startswith("-")):
        out += [] if "--limit" in out else ["--limit", "2"]
    return out


def values(args: list[str], flag: str) -> list[str]:
    """The values that follow ``flag`` in ``args``."""
    return [value for option, value in zip(args, args[1:], strict=False) if option == flag]


def default_roles(args: list[str]) -> list[str]:
    """``--role ROLE=MODEL`` for each role of a ``run``'s tasks that defaults to a fixed model and is not given.

    Each task is built from the command's ``--task`` and ``--task-arg`` values in the current folder.
    """
    if args[:1] != ["run"]:
        return []
    given = {value.split("=", 1)[0] for value in values(args, "--role")}
    options = key_values(values(args, "--task-arg"), "--task-arg")
    fixed = {
        role
        for name in values(args, "--task")
        for role, default in create_task(name, **options).role_defaults.items()
        if not default.startswith("role:") and role not in given
    }
    return [arg for role in sorted(fixed) for arg in ("--role", f"{role}={MODEL}")]


@dataclass
class Page:
    """The folder (with its own cache) where one page's commands run in order, and how many of them have run."""

    folder: Path
    ran: int = 0


def abstracts() -> str:
    """JSONL of a short abstract for every PMID the shipped MedMeta items list (``abstracts=abstracts.jsonl``)."""
    pmids = sorted({str(p) for sample in load_synthesis("medmeta") for p in sample.metadata["study_pmids"]})
    rows = [{"id": p, "title": f"Trial {p}", "text": f"In trial {p} the treatment reduced the outcome."} for p in pmids]
    return "".join(json.dumps(row) + "\n" for row in rows)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """A folder with a cache of its own, a store holding two comparable runs and the small files the docs read."""
    root = tmp_path_factory.mktemp("docs")
    (root / CACHE).mkdir()
    for name in ("models", "engines"):  # the large files built once, as tests/conftest.py links them
        (USER_CACHE / name).mkdir(parents=True, exist_ok=True)
        (root / CACHE / name).symlink_to(USER_CACHE / name, target_is_directory=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EBMEVAL_CACHE_DIR", str(root / CACHE))
        for model in (MODEL, MODELS[1]):
            made = ebmeval("run", "--task", "pubmedqa", "--model", model, "--limit", "2", cwd=root)
            assert made.returncode == 0, made.stderr
    (root / "my_questions.csv").write_text(CSV)
    (root / "questions.csv").write_text(CSV)
    (root / "free_text.csv").write_text("id,question,reference\nf1,Why?,Because.\n")
    (root / "experiment.yaml").write_text(f"task: pubmedqa\nmodel: '{MODEL}'\n")
    (root / "abstracts.jsonl").write_text(abstracts())
    runs = [r.run_id for r in RunStore(root / "runs" / "ebmeval.sqlite", read_only=True).list_runs()]
    return root, runs


@pytest.fixture(scope="module")
def pages(workdir: tuple[Path, list[str]], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Page]:
    """Per documented page, a copy of ``workdir`` (its cache included) where the page's commands run."""
    root, _runs = workdir
    made = {}
    for source in dict(COMMANDS):
        folder = tmp_path_factory.mktemp("page")
        shutil.copytree(root, folder, symlinks=True, dirs_exist_ok=True)
        made[source] = Page(folder)
    return made


COMMANDS = documented_commands()


def test_the_documented_commands_are_found_and_each_runs_or_says_why_not() -> None:
    commands = {command for _file, command in COMMANDS}
    assert len(commands) >= 40
    assert not set(ILLUSTRATIVE) - commands, "an illustrative entry matches no documented command"


def run_documented(source: str, command: str, folder: Path, runs: list[str]) -> None:
    """Run ``command`` (each part of an ``&&`` chain) under the rule in ``folder``; it must exit 0."""
    for part in command.split(" && "):
        args = substituted(part, runs)
        if "--data-root" in args and not DATA.exists():
            pytest.skip(f"the project's data folder {DATA} is not here")
        args += default_roles(args)
        result = ebmeval(*args, cwd=folder, timeout=300)
        assert result.returncode == 0, f"{source}: {part}\n→ ebmeval {shlex.join(args)}\n{result.stderr[-2000:]}"


RUN = [(i, source, command) for i, (source, command) in enumerate(COMMANDS) if command not in ILLUSTRATIVE]


@pytest.mark.parametrize(("index", "source", "command"), RUN, ids=[f"{s}-{c[:60]}" for _i, s, c in RUN])
def test_documented_command_runs(
    index: int,
    source: str,
    command: str,
    workdir: tuple[Path, list[str]],
    pages: dict[str, Page],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _root, runs = workdir
    page = pages[source]
    monkeypatch.chdir(page.folder)  # where default_roles builds a task that reads a file the page names
    monkeypatch.setenv("EBMEVAL_CACHE_DIR", str(page.folder / CACHE))
    mine = [i for i, page_source, _command in RUN if page_source == source]
    position = mine.index(index)
    for earlier in mine[page.ran : position]:
        run_documented(source, COMMANDS[earlier][1], page.folder, runs)
    run_documented(source, command, page.folder, runs)
    page.ran = max(page.ran, position + 1)
