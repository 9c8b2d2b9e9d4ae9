"""How a run's end is recorded: status and lock in one transaction, the reserve file for a full disk."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from ebmeval._util.sqlite import SQLiteError
from ebmeval.store import RunStore


def begun(path: Path, *run_ids: str) -> RunStore:
    store = RunStore(path)
    for run_id in run_ids:
        store.begin_run(run_id=run_id, config_hash=run_id, config={}, task="t", model="m", seed=0, provenance={})
        store.acquire(run_id)
    return store


def state(path: Path) -> tuple[list[tuple[str, str]], int]:
    with sqlite3.connect(path) as db:
        runs = db.execute("SELECT run_id, status FROM runs ORDER BY run_id").fetchall()
        return runs, db.execute("SELECT count(*) FROM locks").fetchone()[0]


def test_the_reserve_lives_while_a_run_of_the_store_is_written(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    reserve = tmp_path / "runs.sqlite-reserve"
    store = begun(path, "a", "b")
    assert reserve.stat().st_size == 128 * 1024
    store.finish("a", "complete")
    assert reserve.exists()  # run b still writes
    store.release("b")
    assert not reserve.exists()
    store.close()
    assert state(path) == ([("a", "complete"), ("b", "running")], 0)


def test_a_failed_queued_write_ends_the_run_interrupted_without_its_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "runs.sqlite"
    store = begun(path, "a")
    assert store._writer is not None
    full = SQLiteError(f"{path}: the disk is full (or the run store reached its size limit); free space and run again")

    def flush() -> None:
        raise full

    monkeypatch.setattr(store._writer, "flush", flush)
    with pytest.raises(SQLiteError, match="the disk is full"):
        store.finish("a", "complete")
    monkeypatch.undo()
    store.close()
    assert state(path) == ([("a", "interrupted")], 0)
    assert not (tmp_path / "runs.sqlite-reserve").exists()
