"""Starting and stopping a run: two processes starting the same run at once; SIGTERM and SIGHUP."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ._support import cli_env, delay_server, read_only, run_args, spawn, wait_for

TRIALS = 200

STARTER = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    from ebmeval.store import RunStore

    path, folder, me, trials = sys.argv[1], Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    store = RunStore(path)
    outcomes = []
    for trial in range(trials):
        (folder / f"{me}-{trial}").touch()  # ready
        while not (folder / f"go-{trial}").exists():
            pass  # spin, so both processes leave the barrier within microseconds
        try:
            _, resumed = store.begin_run(
                run_id=f"run-{trial}", config_hash="h", config={}, task="t", model="m", seed=0, provenance={}
            )
            outcomes.append("resumed" if resumed else "created")
        except Exception as exc:
            outcomes.append(f"{type(exc).__name__}: {exc}")
    print(json.dumps(outcomes))
    """
)


@pytest.mark.slow
def test_two_processes_starting_the_same_run_at_once_never_fail(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    folder = tmp_path / "barrier"
    folder.mkdir()
    starters = [
        subprocess.Popen(
            [sys.executable, "-c", STARTER, str(store), str(folder), name, str(TRIALS)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("a", "b")
    ]
    for trial in range(TRIALS):
        ready = [folder / f"{name}-{trial}" for name in ("a", "b")]
        assert wait_for(lambda ready=ready: all(p.exists() for p in ready), 120, interval=0.001), f"trial {trial}"
        (folder / f"go-{trial}").touch()
    results = []
    for starter in starters:
        out, err = starter.communicate(timeout=300)
        assert starter.returncode == 0, err
        results.append(json.loads(out))
    failures = [(t, a, b) for t, (a, b) in enumerate(zip(*results, strict=True)) if {a, b} != {"created", "resumed"}]
    assert failures == [], f"{len(failures)} of {TRIALS} trials failed, e.g. {failures[:3]}"
    with read_only(store) as db:
        assert db.execute("SELECT count(*), count(DISTINCT run_id) FROM runs").fetchone() == (TRIALS, TRIALS)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_mark_the_run_interrupted_like_ctrl_c(
    signum: signal.Signals, questions: Path, tmp_path: Path
) -> None:
    store = tmp_path / "runs.sqlite"
    with delay_server(tmp_path, delay=0.2) as url:  # 40 answers take at least 8 s: the signal comes first
        process = spawn(run_args(questions, url, store, n=40, concurrency=1), cli_env(tmp_path))
        _interrupt_after_three_samples(process, store, signum)
        _, err = process.communicate(timeout=60)
    _assert_interrupted(process, err, store)


def _assert_interrupted(process: subprocess.Popen[str], err: str, store: Path) -> None:
    """The run stopped as Ctrl-C stops it: exit 130, one line, the run interrupted with no lock, not finished."""
    assert process.returncode == 130, err
    assert "Interrupted" in err and "Traceback" not in err
    with read_only(store) as db:
        assert db.execute("SELECT status FROM runs").fetchall() == [("interrupted",)]
        assert db.execute("SELECT count(*) FROM locks").fetchone()[0] == 0
        assert db.execute("SELECT count(*) FROM generations").fetchone()[0] < 40


def _interrupt_after_three_samples(process: subprocess.Popen[str], store: Path, signum: signal.Signals) -> None:
    def some_generated() -> bool:
        if not store.exists():
            return False
        with read_only(store) as db:
            try:
                return int(db.execute("SELECT count(*) FROM generations").fetchone()[0]) >= 3
            except Exception:
                return False

    assert wait_for(lambda: some_generated() or process.poll() is not None, 120)
    process.send_signal(signum)


def test_nohup_keeps_sighup_ignored(delay_url: str, questions: Path, tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    args = run_args(questions, delay_url, store, n=20, concurrency=1)
    process = subprocess.Popen(
        ["nohup", *args], env=cli_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert wait_for(lambda: store.exists() or process.poll() is not None, 120)
    process.send_signal(signal.SIGHUP)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    with read_only(store) as db:
        assert db.execute("SELECT status FROM runs").fetchall() == [("complete",)]


def test_sigterm_stops_a_run_that_inherited_sigint_ignored(questions: Path, tmp_path: Path) -> None:
    """A background job of a script (``ebmeval run … &``) starts with SIGINT ignored; SIGTERM must still stop it."""
    store = tmp_path / "runs.sqlite"

    def background_job() -> None:
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    with delay_server(tmp_path, delay=0.2) as url:
        process = subprocess.Popen(
            run_args(questions, url, store, n=40, concurrency=1),
            env=cli_env(tmp_path),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=background_job,
        )
        _interrupt_after_three_samples(process, store, signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    _assert_interrupted(process, err, store)
