"""docs/extending.md: its files are the example package's, and every command it shows runs."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from importlib.metadata import distribution
from pathlib import Path

import pytest

from ebmeval import RunStore, summarize

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "extending.md"
FILE_BLOCK = re.compile(r"<!-- file: (?P<path>\S+) -->\n```\w+\n(?P<text>.*?)```", re.DOTALL)
CONSOLE_BLOCK = re.compile(r"```console\n(?P<text>.*?)```", re.DOTALL)


def files() -> dict[str, str]:
    return {m["path"]: m["text"] for m in FILE_BLOCK.finditer(PAGE.read_text(encoding="utf-8"))}


def commands() -> list[str]:
    blocks = CONSOLE_BLOCK.finditer(PAGE.read_text(encoding="utf-8"))
    return [line[2:] for b in blocks for line in b["text"].splitlines() if line.startswith("$ ")]


def test_the_package_files_shown_are_the_example_package() -> None:
    shown = {path: text for path, text in files().items() if path.startswith("tests/plugin_package/")}
    assert len(shown) == 5
    for path, text in shown.items():
        assert text == (ROOT / path).read_text(encoding="utf-8"), f"docs/extending.md shows an old {path}"


def test_every_command_on_the_page_runs(tmp_path: Path) -> None:
    for path, text in files().items():
        if not path.startswith("tests/"):
            (tmp_path / path).write_text(text, encoding="utf-8")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    ran = 0
    for command in commands():
        if command.startswith("pip install ./tests/plugin_package"):
            try:  # scripts/test.sh installs it; installing here would change the environment under test
                distribution("ebmeval-plugin-example")
            except Exception:  # noqa: BLE001
                pytest.fail("install the example plugin first: pip install --no-deps ./tests/plugin_package")
            continue
        words = shlex.split(command)
        if words[0] == "python":
            words[0] = sys.executable
        done = subprocess.run(words, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"{command}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        ran += 1
    assert ran == len(commands()) - 1 >= 8
    store = RunStore(tmp_path / "runs.sqlite")
    runs = store.list_runs()
    assert sorted(r.task for r in runs) == ["example/evidence-quiz", "mine/evidence-quiz", "mine/evidence-quiz"]
    judged = {
        r.config["roles"]["judge"]["model"]: m.value
        for r in runs
        if r.task.startswith("mine/")
        for m in summarize(store, r.run_id).metrics
        if m.scorer.startswith("mine/says-yes[judge=")  # the score set names the judge its scorer declares
    }
    assert judged == {"scripted:yes": 1.0, "scripted:no": 0.0}
