"""Grids: several --task and --model (or YAML lists) run as one resumable set of runs, reported together."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ebmeval._util.errors import ConfigError, UsageError
from ebmeval.runner import grid_from_flags, load_config, load_grid
from ebmeval.store import RunStore
from tests.helpers.chat_server import chat_server, completion
from tests.helpers.cli import ebmeval

GRID = ["--task", "pubmedqa", "--task", "mirage/bioasq", "--limit", "3", "--concurrency", "1", "--store", "g.sqlite"]


def slow_answer(_body: dict[str, object], _headers: dict[str, str]) -> tuple[int, dict[str, object]]:
    """An OpenAI-compatible server answering "Answer: yes" after a pause."""
    time.sleep(0.7)
    return completion("Answer: yes")


@pytest.fixture
def slow_server() -> Iterator[str]:
    with chat_server(slow_answer, models=("slow",)) as (url, _received):
        yield url


def slow_run_answered(store: Path) -> bool:
    """Whether the run on the slow model has stored an answer (the store may not be made yet)."""
    try:
        runs = RunStore(store, read_only=True)
    except UsageError:
        return False
    slow = [r.run_id for r in runs.list_runs() if r.model.startswith("openai-compatible")]
    return any(runs.count_generations(run_id)[0] for run_id in slow)


def test_flags_and_yaml_lists_make_one_config_per_pair(tmp_path: Path) -> None:
    configs = grid_from_flags(task=["pubmedqa", "mirage/bioasq"], model=["baseline/random", "scripted:A"])
    assert [(c.task, c.model) for c in configs] == [
        ("pubmedqa", "baseline/random"),
        ("pubmedqa", "scripted:A"),
        ("mirage/bioasq", "baseline/random"),
        ("mirage/bioasq", "scripted:A"),
    ]
    (tmp_path / "grid.yaml").write_text("task: [pubmedqa, mirage/bioasq]\nmodel: baseline/random\nlimit: 2\n")
    assert [(c.task, c.limit) for c in load_grid(tmp_path / "grid.yaml")] == [("pubmedqa", 2), ("mirage/bioasq", 2)]
    with pytest.raises(ConfigError, match="names 2 runs"):
        load_config(tmp_path / "grid.yaml")
    with pytest.raises(ConfigError, match="'pubmedqa' is listed twice"):
        grid_from_flags(task=["pubmedqa", "pubmedqa"])


def test_two_tasks_run_both_not_only_the_last(tmp_path: Path) -> None:
    result = ebmeval("run", *GRID, "--model", "baseline/random", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    runs = RunStore(tmp_path / "g.sqlite", read_only=True).list_runs()
    assert sorted(r.task for r in runs) == ["mirage/bioasq", "pubmedqa"]
    assert "2 runs" in result.stdout


def test_yaml_grid_runs_every_pair(tmp_path: Path) -> None:
    (tmp_path / "grid.yaml").write_text(
        "task: [pubmedqa, mirage/bioasq]\nmodel: [baseline/random, baseline/first-option]\nlimit: 2\nstore: y.sqlite\n"
    )
    result = ebmeval("run", "grid.yaml", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert sorted((r["task"], r["model"]) for r in payload["runs"]) == [
        ("mirage/bioasq", "baseline/first-option"),
        ("mirage/bioasq", "baseline/random"),
        ("pubmedqa", "baseline/first-option"),
        ("pubmedqa", "baseline/random"),
    ]


def test_a_2x2_grid_interrupted_and_resumed_is_reported_together(tmp_path: Path, slow_server: str) -> None:
    args = [*GRID, "--model", "baseline/random", "--model", f"openai-compatible:slow@{slow_server}", "--no-cache"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "OPENAI_API_KEY": "unused", "COLUMNS": "200"}
    proc = subprocess.Popen(
        [sys.executable, "-c", "from ebmeval.cli import main; main()", "run", *args],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    store = tmp_path / "g.sqlite"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not slow_run_answered(store):  # interrupt inside the second run
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "resume with:" in err
    first = {(r.task, r.model.split("/")[0]): r.status for r in RunStore(store, read_only=True).list_runs()}
    assert first == {("pubmedqa", "baseline"): "complete", ("pubmedqa", "openai-compatible"): "interrupted"}

    resumed = ebmeval("run", *args, cwd=tmp_path, timeout=180)
    assert resumed.returncode == 0, resumed.stderr
    assert "0 new, 3 resumed" in resumed.stderr  # the finished run is not redone
    assert "4 runs" in resumed.stdout
    runs = RunStore(store, read_only=True).list_runs()
    assert len(runs) == 4 and all(r.status == "complete" for r in runs)
    for run in runs:
        assert run.run_id in resumed.stdout


def test_compare_takes_n_runs_and_refuses_runs_sharing_no_sample(tmp_path: Path) -> None:
    grid = ebmeval("run", *GRID, "--model", "baseline/random", "--model", "baseline/first-option", cwd=tmp_path)
    assert grid.returncode == 0, grid.stderr
    runs = {(r.task, r.model): r.run_id for r in RunStore(tmp_path / "g.sqlite", read_only=True).list_runs()}
    pubmedqa = [runs[("pubmedqa", "baseline/random")], runs[("pubmedqa", "baseline/first-option")]]
    bioasq = runs[("mirage/bioasq", "baseline/random")]

    three = ebmeval("compare", *pubmedqa, bioasq, "--store", "g.sqlite", "--json", cwd=tmp_path)
    assert three.returncode == 0, three.stderr
    pairs = {(c["run_a"], c["run_b"]) for c in json.loads(three.stdout)}
    assert pairs == {tuple(pubmedqa)}
    assert "share no sample: not compared" in three.stderr

    apart = ebmeval("compare", pubmedqa[0], bioasq, "--store", "g.sqlite", cwd=tmp_path)
    assert apart.returncode == 2
    assert "the runs share no sample, so nothing can be compared" in apart.stderr
    assert "Traceback" not in apart.stderr


@pytest.mark.parametrize(
    "args",
    [("list", "models"), ("list", "scorers"), ("list", "tasks"), ("describe", "synthesis"), ("describe", "pubmedqa")],
)
def test_list_and_describe_print_plain_text(tmp_path: Path, args: tuple[str, ...]) -> None:
    result = ebmeval(*args, "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert not re.search(r"``|:(class|func|mod|meth|attr|data):`", result.stdout), result.stdout
