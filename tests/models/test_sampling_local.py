"""Repeated sampling with the real small model: epochs at a temperature are independent draws."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.models import requires_small_model

pytestmark = [requires_small_model, pytest.mark.local_model]

EBMEVAL = str(Path(sys.executable).parent / "ebmeval")


def _run(tmp: Path, *extra: str) -> dict[str, object]:
    args = [EBMEVAL, "run", "--task", "pubmedqa", "--task-arg", "strategy=cot", "--model", "local:smollm2"]
    args += ["--model-arg", "n_threads=1", "--model-arg", "n_ctx=2048", "--limit", "1", "--epochs", "3"]
    args += ["--max-tokens", "24", "--store", str(tmp / "runs.sqlite"), "--json", *extra]
    env = {**os.environ, "EBMEVAL_CACHE_DIR": str(tmp / "cache")}
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_three_epochs_at_temperature_give_three_draws_and_greedy_epochs_come_from_the_cache(tmp_path: Path) -> None:
    sampled = _run(tmp_path, "--temperature", "0.9")
    assert sampled["invocation"]["model_calls"] == 3 and sampled["invocation"]["cache_hits"] == 0
    with sqlite3.connect(tmp_path / "runs.sqlite") as db:
        outputs = [
            row[0] for row in db.execute("SELECT output FROM generations WHERE run_id = ?", (sampled["run_id"],))
        ]
    assert len(outputs) == 3 and len(set(outputs)) == 3
    greedy = _run(tmp_path, "--temperature", "0")
    assert greedy["run_id"] != sampled["run_id"]
    assert greedy["invocation"]["model_calls"] == 3 and greedy["invocation"]["cache_hits"] == 2
    assert any("temperature 0" in note for note in greedy["notes"])
