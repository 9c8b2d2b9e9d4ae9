"""Export a stored run as JSONL, CSV or Parquet: one row per generation, and one per failed sample."""

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
    """Flat rows: sample fields, output, parsed answer, usage and ``<scorer>.<metric>`` columns.

    Every generation is a row with an empty ``error``; then every sample × epoch whose last
    attempt failed (no generation) is a row too, with the ``error`` and its ``error_stage``
    and no output, so an export holds as many rows as the run asked for.
    """
    scores: dict[tuple[str, int], dict[str, Any]] = defaultdict(dict)
    for sample_id, epoch, scorer, score in store.scores(run_id):
        for metric, value in score.values.items():
            scores[(sample_id, epoch)][f"{scorer}.{metric}"] = value
    generated: set[tuple[str, int]] = set()
    for sample, generation in store.generations(run_id):
        generated.add((sample.id, generation.epoch))
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
            "error": "",
            "error_stage": "",
            **scores.get((sample.id, generation.epoch), {}),
        }
    last_errors = {(sample_id, epoch): (stage, error) for sample_id, epoch, stage, error, _at in store.errors(run_id)}
    for (sample_id, epoch), (stage, error) in last_errors.items():
        if (sample_id, epoch) not in generated:
            yield {"run_id": run_id, "sample_id": sample_id, "epoch": epoch, "error": error, "error_stage": stage}


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
    # from_pylist takes its columns from the first row; a failed sample's row has fewer
    pq.write_table(pa.Table.from_pylist([{column: row.get(column) for column in columns} for row in table]), path)
    return len(table)
