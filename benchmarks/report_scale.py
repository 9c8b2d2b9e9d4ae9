"""How long a report over 100k stored samples takes, and how much memory it needs.

Fills a run store with two runs of N/2 samples each (outputs ~300 characters, one scorer
with two metrics), then times ``collect`` + ``write_report`` and records peak RSS growth.
Compares with the naive alternative of loading every row into memory first.

    python benchmarks/report_scale.py [--samples 100000]
"""

from __future__ import annotations

import argparse
import json
import resource
import sqlite3
import tempfile
import time
from pathlib import Path

from ebmeval.report import collect, write_report
from ebmeval.store import RunStore
from ebmeval.tasks import Generation, ParsedAnswer, Sample, Score


def fill(store: RunStore, run_id: str, n: int, seed: int) -> None:
    store.begin_run(
        run_id=run_id,
        config_hash=run_id,
        config={"task_args": {}},
        task="bench",
        model=f"m{seed}",
        seed=seed,
        provenance={},
    )
    text = "The evidence suggests a modest benefit of the intervention on the primary outcome. " * 4
    with store._lock:  # one transaction for speed: this is set-up, not what is measured
        store._db.execute("BEGIN")
        for i in range(n):
            sample = Sample(id=f"s{i}", input=f"question {i}", target="A", metadata={"label": f"L{i % 7}"})
            generation = Generation(sample_id=sample.id, output=text, answer=ParsedAnswer(value="A"))
            store.put_generation(run_id, sample, generation)
            correct = float((i * 7919 + seed) % 3 != 0)
            store.put_score(run_id, sample.id, 0, "accuracy", Score(values={"accuracy": correct, "f1": correct * 0.9}))
        store._db.execute("COMMIT")


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--out", default="benchmarks/results/report_scale.json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = RunStore(Path(tmp) / "runs.sqlite")
        half = args.samples // 2
        started = time.perf_counter()
        fill(store, "runa", half, 1)
        fill(store, "runb", half, 2)
        fill_s = time.perf_counter() - started

        before = rss_mb()
        started = time.perf_counter()
        report = collect(store, ["runa", "runb"], by="label")
        write_report(report, Path(tmp) / "report")
        report_s = time.perf_counter() - started
        streamed_peak = rss_mb() - before

        started = time.perf_counter()
        rows = sqlite3.connect(store.path).execute("SELECT * FROM generations").fetchall()
        naive_load_s = time.perf_counter() - started
        naive_peak = rss_mb() - before
        del rows

    result = {
        "samples": args.samples,
        "fill_seconds": round(fill_s, 2),
        "report_seconds": round(report_s, 2),
        "report_rss_growth_mb": round(streamed_peak, 1),
        "naive_fetchall_seconds": round(naive_load_s, 2),
        "naive_fetchall_rss_growth_mb": round(naive_peak, 1),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    print(f"report over {args.samples:,} samples: {report_s:.1f} s (goal: < 60 s)")


if __name__ == "__main__":
    main()
