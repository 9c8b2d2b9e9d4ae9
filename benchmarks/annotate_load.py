"""Loopback load test of the annotation app: simulated annotators saving answers concurrently.

Starts uvicorn on 127.0.0.1 over a PostgreSQL database (a throwaway cluster unless --db is given),
lets N annotators save and revise answers for a fixed time, then checks the database: every
answer whose save returned 200 is there exactly once, holds the last value sent, and its revision
counter equals the number of successful saves (no lost update, no duplicate), and that the
throughput reached ``--min-saves-per-second`` (a figure for a quiet machine: the test suite checks
the integrity only, since a busy machine can save any number of answers in its 10 s).

    python benchmarks/annotate_load.py --annotators 20 --seconds 60 --out benchmarks/results/annotate_load.json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ebmeval.annotate import create_study, make_engine
from ebmeval.annotate._models import Annotator, Answer, Assignment, Study

CSRF_RE = re.compile(r'name="csrf_token" value="([^"]+)"')
CANDIDATE_RE = re.compile(r'data-candidate="([^"]+)"')


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def postgres_bindir() -> Path | None:
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent
    candidates = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    return candidates[-1].parent if candidates else None


@contextmanager
def throwaway_postgres() -> Iterator[str]:
    """A PostgreSQL cluster in a temporary directory on 127.0.0.1; yields its URL.

    Runs as the 'postgres' user through runuser when started as root (PostgreSQL refuses root).
    Raises FileNotFoundError when the server binaries are not installed.
    """
    bindir = postgres_bindir()
    if bindir is None:
        raise FileNotFoundError("PostgreSQL server binaries (initdb, pg_ctl) not found; apt-get install -y postgresql")
    prefix: list[str] = []
    tmp = Path(tempfile.mkdtemp(prefix="ebmeval-pg-"))
    if os.geteuid() == 0:
        runuser = shutil.which("runuser")
        if runuser is None:
            raise FileNotFoundError("running as root without 'runuser': cannot start PostgreSQL as a normal user")
        shutil.chown(tmp, "postgres")
        prefix = [runuser, "-u", "postgres", "--"]
    data, port = tmp / "data", free_port()
    pg_ctl = [*prefix, str(bindir / "pg_ctl"), "-D", str(data)]
    subprocess.run(
        [*prefix, str(bindir / "initdb"), "-D", str(data), "-U", "ebmeval", "-A", "trust", "--no-sync"],
        check=True,
        capture_output=True,
    )
    options = f"-h 127.0.0.1 -p {port} -k {tmp} -c fsync=off -c max_connections=200"
    subprocess.run([*pg_ctl, "-o", options, "-l", str(tmp / "log"), "-w", "start"], check=True, capture_output=True)
    try:
        yield f"postgresql://ebmeval@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([*pg_ctl, "-m", "fast", "stop"], capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)


@contextmanager
def uvicorn_server(db: str, workers: int = 1) -> Iterator[str]:
    """Serve the app on 127.0.0.1 in a subprocess; yields the base URL."""
    port = free_port()
    env = {**os.environ, "EBMEVAL_ANNOTATE_DB": db}
    cmd = [sys.executable, "-m", "uvicorn", "ebmeval.annotate._app:app_from_env", "--factory"]
    cmd += ["--host", "127.0.0.1", "--port", str(port), "--workers", str(workers), "--log-level", "warning"]
    proc = subprocess.Popen(cmd, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if httpx.get(base + "/", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        else:
            raise RuntimeError("the annotation server did not start")
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@dataclass
class Worker:
    name: str
    token: str
    sent: dict[tuple[int, str, str], str] = field(default_factory=dict)
    saves: dict[tuple[int, str, str], int] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)
    errors: int = 0


def annotate(base: str, worker: Worker, deadline: float, seed: int) -> None:
    """Join, commit, then save random answers on random tasks until the deadline."""
    rng = random.Random(seed)
    with httpx.Client(base_url=base, follow_redirects=True, timeout=30) as client:
        page = client.get(f"/join/{worker.token}").text
        client.post("/onboarding", data={"csrf_token": CSRF_RE.findall(page)[0], "commit": "yes"})
        csrf = ""
        targets: dict[int, list[str]] = {}
        n = 1
        while True:
            r = client.get(f"/tasks/{n}")
            if r.status_code != 200:
                break
            csrf = CSRF_RE.findall(r.text)[0]
            targets[n] = CANDIDATE_RE.findall(r.text)
            n += 1
        while time.monotonic() < deadline:
            task = rng.choice(list(targets))
            key = (task, rng.choice(targets[task]), "score")
            value = str(rng.randrange(6))
            start = time.perf_counter()
            try:
                r = client.post(
                    f"/api/tasks/{task}/answer",
                    json={"target": key[1], "field": key[2], "value": value},
                    headers={"X-CSRF-Token": csrf},
                )
            except httpx.TransportError:
                worker.errors += 1
                continue
            worker.latencies.append(time.perf_counter() - start)
            if r.status_code == 200:
                worker.sent[key] = value
                worker.saves[key] = worker.saves.get(key, 0) + 1
            else:
                worker.errors += 1


def verify(db: str, slug: str, workers: list[Worker]) -> dict[str, int]:
    """Compare what the clients saved with what the database holds."""
    engine = make_engine(db)
    with Session(engine) as s:
        rows = s.execute(
            select(Annotator.name, Assignment.position, Answer.target, Answer.field, Answer.value, Answer.revisions)
            .join(Assignment, Answer.assignment_id == Assignment.id)
            .join(Annotator, Assignment.annotator_id == Annotator.id)
            .join(Study, Annotator.study_id == Study.id)
            .where(Study.slug == slug)
        ).all()
        total_rows = s.scalar(select(func.count()).select_from(Answer)) or 0
    engine.dispose()
    stored: dict[tuple[str, int, str, str], tuple[str, int]] = {}
    duplicated = 0
    for name, position, target, fld, value, revisions in rows:
        key = (name, position, target, fld)
        duplicated += key in stored
        stored[key] = (value, revisions)
    expected = {(w.name, *k): (v, w.saves[k]) for w in workers for k, v in w.sent.items()}
    lost = sum(k not in stored for k in expected)
    wrong_value = sum(k in stored and stored[k][0] != v for k, (v, _) in expected.items())
    lost_revisions = sum(max(0, n - stored[k][1]) for k, (_, n) in expected.items() if k in stored)
    unexpected = sum(k not in expected for k in stored)
    return {
        "answers_expected": len(expected),
        "answers_stored": len(stored),
        "rows_in_table": total_rows,
        "lost": lost,
        "duplicated": duplicated,
        "wrong_value": wrong_value,
        "lost_revisions": lost_revisions,
        "unexpected": unexpected,
    }


def write_items(path: Path, n_items: int, systems: int) -> Path:
    with path.open("w") as f:
        for i in range(n_items):
            candidates = [{"system": f"system-{j}", "text": f"Answer {j} to item {i}."} for j in range(systems)]
            f.write(json.dumps({"item_id": f"i{i}", "reference": f"Reference {i}.", "candidates": candidates}) + "\n")
    return path


def run_load(
    db: str, *, annotators: int = 20, seconds: float = 60.0, workers: int = 1, slug: str = "load"
) -> dict[str, Any]:
    """Create a study on ``db``, run the load and return throughput, latency and the integrity check."""
    with tempfile.TemporaryDirectory() as tmp:
        items = write_items(Path(tmp) / "items.jsonl", n_items=annotators * 2, systems=3)
        names = [f"annotator{i:02d}" for i in range(annotators)]
        inv = create_study(db, slug=slug, form="rubric", annotators=names, k=2, files=[items], seed=1)
    crew = [Worker(n, inv.tokens[n]) for n in names]
    with uvicorn_server(db, workers=workers) as base:
        deadline = time.monotonic() + seconds
        threads = [threading.Thread(target=annotate, args=(base, w, deadline, i)) for i, w in enumerate(crew)]
        started = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.monotonic() - started
    latencies = sorted(x for w in crew for x in w.latencies)
    saves = sum(sum(w.saves.values()) for w in crew)
    return {
        "annotators": annotators,
        "seconds": round(elapsed, 2),
        "uvicorn_workers": workers,
        "saves_ok": saves,
        "save_errors": sum(w.errors for w in crew),
        "saves_per_second": round(saves / elapsed, 1),
        "latency_ms_median": round(1000 * statistics.median(latencies), 1) if latencies else None,
        "latency_ms_p95": round(1000 * latencies[int(0.95 * (len(latencies) - 1))], 1) if latencies else None,
        **verify(db, slug, crew),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="PostgreSQL URL (default: a throwaway local cluster)")
    parser.add_argument("--annotators", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--workers", type=int, default=1, help="uvicorn worker processes")
    parser.add_argument("--out", type=Path, help="write the result as JSON here")
    parser.add_argument(
        "--min-saves-per-second", type=float, default=10.0, help="fail below this throughput (default: 10)"
    )
    args = parser.parse_args()
    if args.db:
        result = run_load(args.db, annotators=args.annotators, seconds=args.seconds, workers=args.workers)
    else:
        with throwaway_postgres() as url:
            result = run_load(url, annotators=args.annotators, seconds=args.seconds, workers=args.workers)
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    if result["lost"] or result["duplicated"] or result["wrong_value"] or result["lost_revisions"]:
        sys.exit(1)
    if result["saves_per_second"] < args.min_saves_per_second:
        sys.exit(
            f"{result['saves_per_second']} saves per second, below --min-saves-per-second {args.min_saves_per_second}"
        )


if __name__ == "__main__":
    main()
