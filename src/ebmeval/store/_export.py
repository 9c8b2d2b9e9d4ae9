"""Export a stored run as JSONL, CSV or Parquet: one row per generation."""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from .._util.errors import MissingDependencyError
from ._store import RunStore

ExportFormat = Literal["jsonl", "csv", "parquet"]


def export_rows(store: RunStore, run_id: str) -> Iterator[dict[str, Any]]:
    """Flat rows: sample fields, output, parsed answer, usage and ``<scorer>.<metric>`` columns."""
    scores: dict[tuple[str, int], dict[str, Any]] = defaultdict(dict)
    for sample_id, epoch, scorer, score in store.scores(run_id):
        for metric, value in score.values.items():
            scores[(sample_id, epoch)][f"{scorer}.{metric}"] = value
    for sample, generation in store.generations(run_id):
        yield {
            "run_id": run_id,
            "sample_id": sample.id,
            "epoch": generation.epoch,
            "input": sample.input,
            "target": json.dumps(sample.target) if isinstance(sample.target, list) else sample.target,
            "output": generation.output,
            "answer": json.dumps(generation.answer.value),
            "parsed": generation.answer.parsed,
            "retrieved": json.dumps([r.document.id for r in generation.retrieved]) if generation.retrieved else "",
            "input_tokens": generation.usage.input_tokens,
            "output_tokens": generation.usage.output_tokens,
            "latency": generation.latency,
            "metadata": json.dumps(sample.metadata, default=str),
            **scores.get((sample.id, generation.epoch), {}),
        }


def export_run(store: RunStore, run_id: str, fmt: ExportFormat, out: str | Path) -> int:
    """Write the run to ``out`` in ``fmt``; returns the number of rows."""
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = export_rows(store, store.get_run(run_id).run_id)
    if fmt == "jsonl":
        count = 0
        with path.open("w", encoding="utf-8") as handle:
            for row in rows:
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
                count += 1
        return count
    table = list(rows)
    columns = list(dict.fromkeys(key for row in table for key in row))
    if fmt == "csv":
        with path.open("w", encoding="utf-8", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=columns)
            writer.writeheader()
            writer.writerows(table)
        return len(table)
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise MissingDependencyError("Parquet export", "pyarrow", "export") from exc
    pq.write_table(pa.Table.from_pylist(table), path)
    return len(table)
