"""A stale index page (a lost write): caught when the store is opened, before a run inserts duplicates."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from ebmeval._util.sqlite import DamagedDatabaseError
from ebmeval.store import RunStore
from ebmeval.tasks import Generation, ParsedAnswer, Sample

INDEX = "sqlite_autoindex_generations_1"
"""The primary-key index of the generations table: what ``INSERT OR IGNORE`` and lookups by run use."""


def write(path: Path, samples: range) -> None:
    store = RunStore(path)
    store.begin_run(run_id="r1", config_hash="h", config={}, task="t", model="m", seed=0, provenance={})
    for i in samples:
        sample = Sample(id=f"s{i:03d}", input="q", target="A")
        store.put_generation("r1", sample, Generation(sample_id=sample.id, output="A", answer=ParsedAnswer(value="A")))
    store.close()


def page_of(path: Path, name: str) -> tuple[int, int]:
    """(root page number, page size) of ``name``, with the write-ahead log checkpointed into the file."""
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        root = db.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (name,)).fetchone()[0]
        return int(root), int(db.execute("PRAGMA page_size").fetchone()[0])


@pytest.fixture
def stale(tmp_path: Path) -> Path:
    """A store of 60 generations whose index page was put back as it was after the first 10."""
    path = tmp_path / "runs.sqlite"
    write(path, range(10))
    root, size = page_of(path, INDEX)
    with path.open("rb") as f:
        f.seek((root - 1) * size)
        old = f.read(size)
    write(path, range(10, 60))
    assert page_of(path, INDEX)[0] == root  # one leaf page still: the root
    with path.open("r+b") as f:
        f.seek((root - 1) * size)
        f.write(old)
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA quick_check").fetchall() == [("ok",)]  # what the opening checked before
        assert db.execute("SELECT count(*) FROM generations WHERE run_id = 'r1'").fetchone()[0] == 10
    return path


def test_a_stale_index_page_stops_the_opening_for_writing(stale: Path) -> None:
    with pytest.raises(DamagedDatabaseError, match=rf"table generations\): its index {INDEX} lists 10 of its 60 rows"):
        RunStore(stale)
    with sqlite3.connect(stale) as db:
        assert db.execute("SELECT count(*) FROM generations NOT INDEXED").fetchone()[0] == 60  # nothing inserted


def test_a_rerun_on_a_stale_index_is_one_line_and_inserts_nothing(stale: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", "from ebmeval.cli import main; main()", "store", "check", str(stale)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode != 0 and "Traceback" not in done.stderr
    rerun = subprocess.run(
        [sys.executable, "-c", "from ebmeval.cli import main; main()", "run", "--task", "pubmedqa"]
        + ["--model", "scripted:A", "--limit", "5", "--store", str(stale)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "EBMEVAL_CACHE_DIR": str(tmp_path / "cache")},
    )
    lines = rerun.stderr.strip().splitlines()
    assert rerun.returncode == 2 and len(lines) == 1 and "Traceback" not in rerun.stderr, rerun.stderr
    assert "the run store is damaged (table generations)" in lines[0] and "store salvage" in lines[0]
    with sqlite3.connect(stale) as db:
        assert db.execute("SELECT count(*) FROM generations NOT INDEXED").fetchone()[0] == 60


def test_a_sound_store_with_many_rows_opens(tmp_path: Path) -> None:
    write(tmp_path / "runs.sqlite", range(300))
    RunStore(tmp_path / "runs.sqlite").close()
