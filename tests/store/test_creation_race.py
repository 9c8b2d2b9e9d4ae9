"""Two processes opening the same brand-new run store at the same moment, many times over."""

from __future__ import annotations

import multiprocessing
import sys
from pathlib import Path

import pytest

from ebmeval.store import RunStore

TRIALS = 200


def _opener(folder: Path, barrier: multiprocessing.synchronize.Barrier, failures: multiprocessing.Queue) -> None:
    for trial in range(TRIALS):
        barrier.wait()
        try:
            RunStore(folder / f"race{trial}.sqlite").close()
        except Exception as exc:  # every failure is the finding
            failures.put(f"{trial}: {type(exc).__name__}: {exc}")
    failures.put(None)


@pytest.mark.skipif(sys.platform == "win32", reason="uses fork")
def test_two_processes_creating_one_store_never_fail(tmp_path: Path) -> None:
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(2)
    failures = context.Queue()
    workers = [context.Process(target=_opener, args=(tmp_path, barrier, failures)) for _ in range(2)]
    for w in workers:
        w.start()
    found, finished = [], 0
    while finished < 2:
        item = failures.get(timeout=120)
        if item is None:
            finished += 1
        else:
            found.append(item)
    for w in workers:
        w.join(30)
    assert found == [], f"{len(found)} of {2 * TRIALS} openings failed: {found[:3]}"
    for trial in range(TRIALS):
        store = RunStore(tmp_path / f"race{trial}.sqlite", read_only=True)
        assert store.list_runs() == []
        store.close()
