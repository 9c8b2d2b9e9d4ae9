"""Re-run cost: what a repeated ``ebmeval run`` costs once its work is stored or cached.

Three invocations of the same config against the delay server, per repeat:

- ``first``: empty run store, empty response cache: every sample is sent;
- ``rerun``: the same store again: every sample is already finished;
- ``warm cache``: a new, empty store but the response cache of ``first``: every model
  call is answered from the cache.

Reported per case (median over repeats): process wall seconds, CPU seconds (user + system),
requests the server received, and ``speed-up`` = wall(first) / wall(case).

Usage::

    python benchmarks/rerun_cost.py --n 400 --delay 0.2 --concurrency 16 --repeats 2
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from harness_overhead import EBMEVAL_PYTHON, RESULTS, delay_server, http_json, write_questions

CASES = ("first", "rerun", "warm cache")


def invoke(work: Path, url: str, store: Path, cache: Path, args: argparse.Namespace) -> dict[str, float]:
    """One ``ebmeval run`` with the response cache on; its wall and CPU seconds and the requests it sent."""
    command = [str(Path(args.ebmeval_python).parent / "ebmeval"), "run", "--task", "mcq-file"]
    command += ["--task-arg", f"path={work / 'questions.jsonl'}", "--model", f"openai-compatible:delay@{url}/v1"]
    command += ["--limit", str(args.n), "--concurrency", str(args.concurrency), "--store", str(store), "--json"]
    env = {**os.environ, "EBMEVAL_CACHE_DIR": str(cache), "NO_PROXY": "127.0.0.1"}
    http_json(url + "/reset", "POST")
    started = time.time()
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _pid, status, usage = os.wait4(process.pid, 0)
    wall = time.time() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"ebmeval run failed: {' '.join(command)}")
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "requests": http_json(url + "/stats")["requests"]}


def main() -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--n", type=int, default=400)
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--ebmeval-python", default=str(EBMEVAL_PYTHON))
    parser.add_argument("--out", type=Path, default=RESULTS / "rerun_cost.json")
    args = parser.parse_args()

    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="ebmeval-rerun-") as tmp:
        work = Path(tmp)
        write_questions(work / "questions.jsonl", args.n)
        with delay_server(args.delay, work) as url:
            for repeat in range(args.repeats):
                base = work / f"r{repeat}"
                cache = base / "cache"
                load = os.getloadavg()[0]
                first = invoke(work, url, base / "a.sqlite", cache, args)
                rerun = invoke(work, url, base / "a.sqlite", cache, args)
                warm = invoke(work, url, base / "b.sqlite", cache, args)
                for case, figures in zip(CASES, (first, rerun, warm), strict=True):
                    runs.append({"case": case, "repeat": repeat, "load_before": load, **figures})
                    print(f"{case} #{repeat}: {figures} load {load:.1f}", flush=True)
    medians = []
    for case in CASES:
        group = [r for r in runs if r["case"] == case]
        medians.append(
            {key: statistics.median(r[key] for r in group) for key in ("wall_s", "cpu_s", "requests", "load_before")}
            | {"case": case}
        )
    first_wall = medians[0]["wall_s"]
    rows = [
        [
            m["case"],
            f"{m['wall_s']:.2f}",
            f"{m['cpu_s']:.2f}",
            f"{m['requests']:.0f}",
            f"{first_wall / m['wall_s']:.1f}×",
            f"{m['load_before']:.1f}",
        ]
        for m in medians
    ]
    result = {
        "benchmark": "rerun_cost",
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "settings": {"n": args.n, "delay": args.delay, "concurrency": args.concurrency, "repeats": args.repeats},
        "runs": runs,
        "medians": medians,
        "table": {
            "title": f"Re-run cost ({args.n} questions, delay {args.delay:g} s, "
            f"concurrency {args.concurrency}, medians)",
            "columns": ["case", "wall s", "CPU s", "server requests", "speed-up", "load"],
            "rows": rows,
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result["table"], indent=1))


if __name__ == "__main__":
    main()
