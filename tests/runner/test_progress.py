"""Progress counts a sample once its results are committed to the store, not when its requests return."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from ebmeval._util.sqlite import BackgroundWriter
from ebmeval.runner import Progress, RunConfig, rescore, run
from tests.helpers.toy import scripted_model, toy_task
from tests.runner.test_rescore_judges import VerdictJudge


def _slow_commits(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every batch of store writes takes 50 ms to commit, so results wait on the writer's thread."""
    commit = BackgroundWriter._commit

    def slow(self: BackgroundWriter, batch: list[tuple[str, tuple[object, ...]]]) -> None:
        time.sleep(0.05)
        commit(self, batch)

    monkeypatch.setattr(BackgroundWriter, "_commit", slow)


def _committed(path: Path, sql: str) -> int:
    with sqlite3.connect(path) as db:  # a connection of its own: it sees committed rows only
        return int(db.execute(sql).fetchone()[0])


def test_run_progress_advances_when_a_sample_is_committed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _slow_commits(monkeypatch)
    path = tmp_path / "runs.sqlite"
    seen: list[tuple[int, int]] = []

    def on_progress(progress: Progress) -> None:
        seen.append((progress.done, _committed(path, "SELECT count(*) FROM scores") if path.exists() else 0))

    config = RunConfig.model_validate({"task": "toy", "store": str(path), "cache": False, "concurrency": 4})
    run(config, task=toy_task(6), models={"model": scripted_model()}, on_progress=on_progress)
    assert seen[-1][0] == 6
    assert all(done <= committed for done, committed in seen), seen


def test_rescore_progress_advances_when_a_score_is_committed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "runs.sqlite"
    config = RunConfig.model_validate({"task": "toy", "store": str(path), "cache": False})
    result = run(config, task=toy_task(4), models={"model": scripted_model()})
    _slow_commits(monkeypatch)
    seen: list[tuple[int, int]] = []
    judged = "SELECT count(*) FROM scores s JOIN score_sets t USING (run_id, score_set) WHERE t.name = 'judge/verdicts'"

    def on_progress(progress: Progress) -> None:
        seen.append((progress.done, _committed(path, judged)))

    judge = scripted_model(lambda _m, _c: "Verdict: YES")
    rescore(str(path), result.run.run_id, [VerdictJudge()], {"judge": judge}, concurrency=4, on_progress=on_progress)
    assert seen[-1][0] == 4
    assert all(done <= committed for done, committed in seen), seen
