"""Two processes writing one run store at once."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ebmeval.runner import RunConfig, run
from ebmeval.store import RunLockedError

from ._support import cli_env, integrity, read_only, run_args, spawn, wait_for

WRITER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from ebmeval.store import RunStore
    from ebmeval.tasks import Generation, ParsedAnswer, Sample, Score

    path, run_id, go = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    store = RunStore(path)
    store.begin_run(run_id=run_id, config_hash=run_id, config={}, task="t", model="m", seed=0, provenance={})
    store.acquire(run_id)
    exact = store.register_score_set(run_id, {"name": "exact"}, "exact")
    while not go.exists():
        time.sleep(0.005)
    for i in range(300):
        sample = Sample(id=f"s{i}", input="q", target="A")
        generation = Generation(sample_id=sample.id, epoch=0, output="A", answer=ParsedAnswer(value="A", method="x"))
        store.put_generation(run_id, sample, generation)
        store.put_score(run_id, sample.id, 0, exact.id, Score(values={"accuracy": 1.0}))
        if i % 10 == 0:
            time.sleep(0.001)  # yield the write lock now and then, as a real run does between samples
    store.set_status(run_id, "complete")
    store.release(run_id)
    """
)


def test_two_processes_writing_different_runs_interleave_without_corruption(tmp_path: Path) -> None:
    store, go = tmp_path / "runs.sqlite", tmp_path / "go"
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(store), name, str(go)], stderr=subprocess.PIPE, text=True)
        for name in ("run-a", "run-b")
    ]

    def both_locked() -> bool:
        if not store.exists():
            return False
        with read_only(store) as db:
            try:
                return int(db.execute("SELECT count(*) FROM locks").fetchone()[0]) == 2
            except Exception:
                return False

    assert wait_for(both_locked, 120), "the writers did not start"
    go.touch()
    for writer in writers:
        _, err = writer.communicate(timeout=300)
        assert writer.returncode == 0, err
    assert integrity(store) == "ok"
    with read_only(store) as db:
        per_run = db.execute(
            "SELECT run_id, count(*), count(DISTINCT sample_id) FROM generations GROUP BY 1"
        ).fetchall()
        scores = db.execute("SELECT run_id, count(*) FROM scores GROUP BY 1 ORDER BY 1").fetchall()
        order = [r[0] for r in db.execute("SELECT run_id FROM generations ORDER BY rowid")]
        statuses = db.execute("SELECT run_id, status FROM runs ORDER BY 1").fetchall()
        locks = db.execute("SELECT count(*) FROM locks").fetchone()[0]
    assert sorted(per_run) == [("run-a", 300, 300), ("run-b", 300, 300)]
    assert scores == [("run-a", 300), ("run-b", 300)]
    assert statuses == [("run-a", "complete"), ("run-b", "complete")] and locks == 0
    switches = sum(a != b for a, b in zip(order, order[1:], strict=False))
    assert switches >= 2, "the two writers did not overlap"


def test_a_second_writer_of_the_same_run_gets_a_clear_lock_message(
    delay_url: str, questions: Path, tmp_path: Path
) -> None:
    store = tmp_path / "runs.sqlite"
    # One request at a time keeps the first writer busy long enough (40 × ≥ 20 ms).
    first = spawn(run_args(questions, delay_url, store, n=40, concurrency=1), cli_env(tmp_path))

    def locked() -> bool:
        if not store.exists():
            return False
        with read_only(store) as db:
            try:
                return db.execute("SELECT pid FROM locks").fetchone() is not None
            except Exception:
                return False

    assert wait_for(lambda: locked() or first.poll() is not None, 120)
    config = RunConfig(
        task="mcq-file",
        task_args={"path": str(questions)},
        model=f"openai-compatible:delay@{delay_url}/v1",
        store=str(store),
        cache=False,
    )
    try:
        with pytest.raises(RunLockedError, match=rf"is being written by process {first.pid} on .*; wait for it"):
            run(config)
    finally:
        _, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    assert integrity(store) == "ok"
    with read_only(store) as db:
        assert db.execute("SELECT count(*), count(DISTINCT sample_id) FROM generations").fetchone() == (40, 40)
        assert db.execute("SELECT status FROM runs").fetchall() == [("complete",)]
