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


def export_rows(store: RunStore, run_id: str, *, prompts: bool = False) -> Iterator[dict[str, Any]]:
    """Rows of typed values: sample fields, output, parsed answer, usage and ``<scorer>.<metric>`` columns.

    Values keep their types: ``target`` and ``answer`` are a string, a list or null as the task
    has them, ``retrieved`` is the list of retrieved document ids, ``metadata`` the sample's
    metadata object. A score set with a rationale (a judge's) adds ``<scorer>.explanation``.
    Every generation is a row with an empty ``error``; then every sample × epoch whose last
    attempt failed (no generation) is a row too, with the ``error`` and its ``error_stage``
    and no output, so an export holds as many rows as the run asked for. With ``prompts``, each
    row has ``calls``: every recorded model call of the sample × epoch, the model's and the
    judges', as ``{step, role, model, messages, reply}`` with the messages sent.
    """
    scores: dict[tuple[str, int], dict[str, Any]] = defaultdict(dict)
    for sample_id, epoch, scorer, score in store.scores(run_id):
        for metric, value in score.values.items():
            scores[(sample_id, epoch)][f"{scorer}.{metric}"] = value
        if score.explanation is not None:
            scores[(sample_id, epoch)][f"{scorer}.explanation"] = score.explanation
    generated: set[tuple[str, int]] = set()
    for sample, generation in store.generations(run_id):
        generated.add((sample.id, generation.epoch))
        yield {
            "run_id": run_id,
            "sample_id": sample.id,
            "epoch": generation.epoch,
            "input": sample.input,
            "target": sample.target,
            "output": generation.output,
            "answer": generation.answer.value,
            "parsed": generation.answer.parsed,
            "retrieved": [r.document.id for r in generation.retrieved] if generation.retrieved else None,
            "input_tokens": generation.usage.input_tokens,
            "output_tokens": generation.usage.output_tokens,
            "latency": generation.latency,
            "metadata": json.loads(json.dumps(sample.metadata, default=str)),
            "error": "",
            "error_stage": "",
            **scores.get((sample.id, generation.epoch), {}),
            **({"calls": model_calls(store, run_id, sample.id, generation.epoch)} if prompts else {}),
        }
    last_errors = {(sample_id, epoch): (stage, error) for sample_id, epoch, stage, error, _at in store.errors(run_id)}
    for (sample_id, epoch), (stage, error) in last_errors.items():
        if (sample_id, epoch) not in generated:
            calls = {"calls": model_calls(store, run_id, sample_id, epoch)} if prompts else {}
            yield {
                "run_id": run_id,
                "sample_id": sample_id,
                "epoch": epoch,
                "error": error,
                "error_stage": stage,
                **calls,
            }


def model_calls(store: RunStore, run_id: str, sample_id: str, epoch: int) -> list[dict[str, Any]]:
    """The recorded model calls of one sample × epoch: step, role, model, the messages sent and the reply text."""
    calls = []
    for step, payload in store.steps(run_id, sample_id, epoch):
        if "messages" not in payload:
            continue
        output = payload.get("output")
        reply = output.get("text") if isinstance(output, dict) else output
        calls.append(
            {
                "step": step,
                "role": payload.get("role"),
                "model": payload.get("model"),
                "messages": [{"role": m.get("role"), "content": m.get("content")} for m in payload["messages"]],
                "reply": None if reply is None else str(reply),
            }
        )
    return calls


def export_run(store: RunStore, run_id: str, fmt: ExportFormat, out: str | Path, *, prompts: bool = False) -> int:
    """Write the run to ``out`` in ``fmt`` (with each row's model calls when ``prompts``); returns the row count."""
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = export_rows(store, store.get_run(run_id).run_id, prompts=prompts)
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
            writer.writerows({k: _csv_cell(v) for k, v in row.items()} for row in table)
        return len(table)
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise MissingDependencyError("Parquet export", "pyarrow", "export") from exc
    pq.write_table(pa.table({column: _arrow_column([row.get(column) for row in table]) for column in columns}), path)
    return len(table)


def _csv_cell(value: Any) -> Any:
    """A CSV cell: lists and objects as JSON (CSV has no nesting), null as empty, the rest as it is."""
    return json.dumps(value, ensure_ascii=False) if isinstance(value, list | dict) else value


def _arrow_column(values: list[Any]) -> Any:
    """A Parquet column of ``values`` with its nested types (lists, structs); JSON text only where types clash.

    Sample metadata may give one key a number in one sample and text in another, and Parquet
    cannot hold an object without keys; such a column is written as JSON text instead.
    """
    import pyarrow as pa

    try:
        column = pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        column = None
    if column is None or _has_empty_struct(column.type):
        return pa.array([None if v is None else json.dumps(v, ensure_ascii=False) for v in values], pa.string())
    return column


def _has_empty_struct(kind: Any) -> bool:
    """Whether an Arrow type is or holds a struct without fields (which Parquet cannot write)."""
    import pyarrow as pa

    if pa.types.is_struct(kind):
        return kind.num_fields == 0 or any(_has_empty_struct(kind.field(i).type) for i in range(kind.num_fields))
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return bool(_has_empty_struct(kind.value_type))
    return False
