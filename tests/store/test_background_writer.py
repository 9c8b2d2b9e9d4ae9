"""Writes committed off the caller's thread: batched, visible after flush, never lost at exit."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ebmeval._util import sqlite
from ebmeval._util.sqlite import BackgroundWriter, SQLiteError

SCHEMA = "CREATE TABLE items (id INTEGER PRIMARY KEY, label TEXT NOT NULL)"
INSERT = "INSERT INTO items (id, label) VALUES (?, ?)"


def new_file(tmp_path: Path) -> Path:
    path = tmp_path / "w.sqlite"
    with sqlite3.connect(path) as db:
        db.execute(SCHEMA)
    return path


def count(path: Path) -> int:
    with sqlite3.connect(path) as db:
        return int(db.execute("SELECT count(*) FROM items").fetchone()[0])


def test_flush_makes_every_write_visible_to_another_connection(tmp_path: Path) -> None:
    path = new_file(tmp_path)
    batches: list[int] = []
    writer = BackgroundWriter(path, what="test file", on_commit=lambda batch: batches.append(len(batch)))
    for i in range(2000):
        writer.write(INSERT, (i, f"item {i}"))
    writer.flush()
    assert count(path) == 2000
    assert sum(batches) == 2000
    assert len(batches) < 2000  # writes queued while a transaction commits share the next one
    writer.close()


def test_a_failing_write_keeps_the_others_and_is_raised_once_naming_the_table(tmp_path: Path) -> None:
    path = new_file(tmp_path)
    writer = BackgroundWriter(path, what="test file")
    writer.write(INSERT, (1, "one"))
    writer.write(INSERT, (2, None))  # NOT NULL
    writer.write(INSERT, (3, "three"))
    with pytest.raises(SQLiteError, match=r"test file error \(table items\).*NOT NULL"):
        writer.flush()
    writer.flush()  # reported once
    writer.write(INSERT, (4, "four"))
    writer.write(INSERT, (5, None))
    writer._queue.join()  # the failure is recorded: the next write reports it, and is kept itself
    with pytest.raises(SQLiteError, match="NOT NULL"):
        writer.write(INSERT, (6, "six"))
    writer.close()
    with sqlite3.connect(path) as db:
        assert [r[0] for r in db.execute("SELECT id FROM items ORDER BY id")] == [1, 3, 4, 6]


def test_the_thread_ends_when_idle_and_a_later_write_starts_it_again(tmp_path: Path) -> None:
    path = new_file(tmp_path)
    writer = BackgroundWriter(path, what="test file")
    writer.write(INSERT, (1, "one"))
    writer.flush()
    deadline = time.monotonic() + 5
    while any(t.name.startswith("sqlite writer") for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not any(t.name.startswith("sqlite writer") for t in threading.enumerate())
    writer.write(INSERT, (2, "two"))
    writer.flush()
    assert count(path) == 2
    writer.close()
    with pytest.raises(SQLiteError, match="closed"):
        writer.write(INSERT, (3, "three"))


def test_a_process_that_exits_without_closing_commits_what_it_wrote(tmp_path: Path) -> None:
    path = new_file(tmp_path)
    script = (
        "from pathlib import Path\n"
        "from ebmeval._util.sqlite import BackgroundWriter\n"
        f"writer = BackgroundWriter(Path({str(path)!r}), what='test file')\n"
        "for i in range(5000):\n"
        f"    writer.write({INSERT!r}, (i, 'x'))\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)
    assert count(path) == 5000


def test_run_store_writes_run_off_the_event_loop_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run records generations, steps and scores on the writer's thread, never on the loop's."""
    from ebmeval.runner import RunConfig, run
    from tests.helpers.toy import scripted_model, toy_task

    seen: list[tuple[str, str]] = []
    opened = sqlite.connect

    def traced(path: Path, **options: object) -> sqlite3.Connection:
        db = opened(path, **options)  # type: ignore[arg-type]
        db.set_trace_callback(lambda sql: seen.append((threading.current_thread().name, sql)))
        return db

    monkeypatch.setattr(sqlite, "connect", traced)
    config = RunConfig(task="toy", store=str(tmp_path / "runs.sqlite"), cache=False)
    result = run(config, task=toy_task(6), models={"model": scripted_model()})
    assert result.progress.done == 6
    inserts = [(thread, sql) for thread, sql in seen if sql.startswith("INSERT OR IGNORE INTO")]
    tables = {sql.split()[4] for _thread, sql in inserts}
    assert {"generations", "steps", "scores"} <= tables
    assert all(thread != threading.main_thread().name for thread, _sql in inserts)
