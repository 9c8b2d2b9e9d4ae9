"""What the index check costs when a run store is opened for writing, on a store of 100k samples.

Fills a store like ``report_scale.py`` (two runs of N/2 samples, a score each), then times, on
the closed file, the checks ``RunStore`` makes when it opens an existing store for writing:
``PRAGMA quick_check`` (made before) and the index/table row counts (``check_indexes``), and
the whole opening; for scale, ``PRAGMA integrity_check`` (what ``ebmeval store check`` runs).
Each is the median of ``--repeat`` runs with the file in the page cache.

    python benchmarks/store_open.py [--samples 100000]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from ebmeval._util import sqlite as sqlite_util
from ebmeval.store import RunStore


def _fill() -> Callable[[RunStore, str, int, int], None]:
    spec = importlib.util.spec_from_file_location("report_scale", Path(__file__).with_name("report_scale.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.fill  # type: ignore[no-any-return]


def median_ms(action: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return round(1000 * statistics.median(times), 1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", default="benchmarks/results/store_open.json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "runs.sqlite"
        store = RunStore(path)
        fill = _fill()
        fill(store, "runa", args.samples // 2, 1)
        fill(store, "runb", args.samples // 2, 2)
        store.close()
        db = sqlite3.connect(path)
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        rows = db.execute("SELECT count(*) FROM generations NOT INDEXED").fetchone()[0]
        result = {
            "samples": args.samples,
            "generation_rows": rows,
            "file_mb": round(path.stat().st_size / 2**20, 1),
            "quick_check_ms": median_ms(lambda: sqlite_util.quick_check(db, path, "run store"), args.repeat),
            "index_check_ms": median_ms(lambda: sqlite_util.check_indexes(db, path, "run store"), args.repeat),
            "open_for_writing_ms": median_ms(lambda: RunStore(path).close(), args.repeat),
            "integrity_check_ms": median_ms(lambda: db.execute("PRAGMA integrity_check").fetchall(), args.repeat),
        }
        db.close()
    text = json.dumps(result, indent=2)
    print(text)
    Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
