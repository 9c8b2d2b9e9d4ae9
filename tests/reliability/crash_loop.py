"""Kill ``ebmeval run`` with SIGKILL at random points, then check the store and finish the run.

Each repetition starts a fresh store, starts ``ebmeval run`` against a delay server, waits
until a random number of generations (0 … n−1) is stored (0: it is killed during
start-up), sends SIGKILL, and then checks:

- ``PRAGMA integrity_check`` is ``ok`` right after the kill;
- re-running the same command exits 0 with the run ``complete``;
- every sample has exactly one generation and one score (none lost, none duplicated),
  and the response to a killed request is the only work repeated.

``python -m tests.reliability.crash_loop --repeats 20`` runs the long version and writes
``benchmarks/results/crash_loop.json``; ``test_crash.py`` runs five repetitions.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from ._support import (
    ROOT,
    cli_env,
    counts,
    delay_server,
    integrity,
    read_only,
    run_args,
    spawn,
    wait_for,
    write_questions,
)


@dataclass
class CrashOutcome:
    """What one kill-and-resume repetition found."""

    target: int
    """Generations stored before the kill was sent (0: killed during start-up)."""
    stored_at_kill: int
    """Generations actually stored when the process died (a few more may land while the signal is sent)."""
    integrity_after_kill: str
    rerun_exit: int
    status: str
    generations: int
    distinct_generations: int
    scores: int
    distinct_scores: int
    errors: int
    seconds: float

    def sound(self, n: int) -> bool:
        """Whether the store survived and the re-run finished every sample exactly once."""
        return (
            self.integrity_after_kill == "ok"
            and self.rerun_exit == 0
            and self.status == "complete"
            and self.generations == self.distinct_generations == n
            and self.scores == self.distinct_scores == n
        )


def crash_once(url: str, work: Path, n: int, rng: random.Random) -> CrashOutcome:
    """One repetition in ``work`` (a fresh folder)."""
    started = time.monotonic()
    questions = write_questions(work / "questions.jsonl", n)
    store = work / "runs.sqlite"
    args = run_args(questions, url, store, n=n, concurrency=4)
    env = cli_env(work)
    target = rng.randrange(n)
    process = spawn(args, env)
    try:
        if target:
            wait_for(lambda: counts(store, "generations")[0] >= target or process.poll() is not None, 300, 0.01)
        else:
            time.sleep(rng.uniform(0.0, 1.0))
        process.send_signal(signal.SIGKILL)
    finally:
        process.communicate()
    stored = counts(store, "generations")[0]
    verdict = integrity(store) if store.exists() else "ok"
    rerun = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600)
    with read_only(store) as db:
        status = db.execute("SELECT status FROM runs").fetchone()[0]
        errors = db.execute("SELECT count(*) FROM errors").fetchone()[0]
    generations, distinct_generations = counts(store, "generations")
    scores, distinct_scores = counts(store, "scores")
    return CrashOutcome(
        target=target,
        stored_at_kill=stored,
        integrity_after_kill=verdict,
        rerun_exit=rerun.returncode,
        status=str(status),
        generations=generations,
        distinct_generations=distinct_generations,
        scores=scores,
        distinct_scores=distinct_scores,
        errors=int(errors),
        seconds=time.monotonic() - started,
    )


def main() -> None:
    """Run the long version against a delay server of its own and write the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--n", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "crash_loop.json")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="ebmeval-crash-") as tmp:
        with delay_server(Path(tmp)) as url:
            outcomes = []
            for repeat in range(args.repeats):
                work = Path(tmp) / f"r{repeat}"
                work.mkdir()
                outcome = crash_once(url, work, args.n, rng)
                outcomes.append(outcome)
                print(f"#{repeat}: {asdict(outcome)} sound={outcome.sound(args.n)}", flush=True)
    sound = sum(o.sound(args.n) for o in outcomes)
    result = {
        "benchmark": "crash_loop",
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "load_average": os.getloadavg(),
        "settings": {"repeats": args.repeats, "n": args.n, "seed": args.seed},
        "outcomes": [asdict(o) for o in outcomes],
        "table": {
            "title": f"kill -9 at random points ({args.repeats} repetitions, {args.n} questions each)",
            "columns": ["repetitions", "store sound after kill", "re-runs complete", "samples lost or duplicated"],
            "rows": [
                [
                    str(len(outcomes)),
                    str(sum(o.integrity_after_kill == "ok" for o in outcomes)),
                    str(sum(o.rerun_exit == 0 and o.status == "complete" for o in outcomes)),
                    str(len(outcomes) - sound),
                ]
            ],
        },
    }
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"{sound}/{len(outcomes)} repetitions sound")


if __name__ == "__main__":
    main()
