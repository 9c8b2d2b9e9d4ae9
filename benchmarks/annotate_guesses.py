"""How fast one client can guess invitation tokens against a served study (loopback, SQLite).

Starts uvicorn on 127.0.0.1 over a fresh study, then lets a few threads open ``/join/<random>``
for a fixed time. Every token is looked up (so a valid link opens whatever the address did
before): 403 is a failure the slowdown counted (and logged), 429 one answered while the client
must wait. Then a valid invitation link is opened from the same address, still slowed down.

    python benchmarks/annotate_guesses.py --seconds 20 --threads 4
"""

from __future__ import annotations

import argparse
import json
import secrets
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from annotate_load import uvicorn_server, write_items  # noqa: E402

from ebmeval.annotate import create_study  # noqa: E402


def guess(base: str, seconds: float, threads: int) -> dict[str, float]:
    """Guess tokens from ``threads`` keep-alive clients for ``seconds``; returns counts and rates."""
    counts: Counter[int] = Counter()
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def worker() -> None:
        with httpx.Client(base_url=base, timeout=30) as client:
            while time.monotonic() < deadline:
                status = client.get(f"/join/{secrets.token_urlsafe(32)}").status_code
                with lock:
                    counts[status] += 1

    started = time.monotonic()
    crew = [threading.Thread(target=worker) for _ in range(threads)]
    for t in crew:
        t.start()
    for t in crew:
        t.join()
    elapsed = time.monotonic() - started
    return {
        "seconds": round(elapsed, 2),
        "threads": threads,
        "requests": sum(counts.values()),
        "lookups_403": counts[403],
        "refused_429": counts[429],
        "other": sum(n for s, n in counts.items() if s not in (403, 429)),
        "counted_failures_per_second": round(counts[403] / elapsed, 3),
        "lookups_per_second": round(sum(counts.values()) / elapsed, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--threads", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "annotate.db")
        items = write_items(Path(tmp) / "items.jsonl", n_items=4, systems=2)
        inv = create_study(db, slug="guess", form="rubric", annotators=["a", "b"], k=2, files=[items])
        with uvicorn_server(db) as base:
            result: dict[str, object] = {**guess(base, args.seconds, args.threads)}
            with httpx.Client(base_url=base, timeout=30) as client:
                result["valid_link_after_guesses"] = client.get(f"/join/{inv.tokens['a']}").status_code
            print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
