"""Scoring predictions made outside ebmeval, read from a JSONL file."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._util.errors import DataError
from ..models import Model
from ..tasks import Generation, ParsedAnswer, Sample, SampleContext, Task, read_jsonl


def read_predictions(path: str | Path) -> list[tuple[int, str, str, bool]]:
    """``(line, id, text, is_answer)`` per prediction line of ``path``.

    Each non-blank line is a JSON object with the question ``id`` (string or integer)
    and either ``output`` (the raw model reply) or ``answer`` (the answer itself:
    ``"B"``, ``"B, E"`` or ``["B", "E"]``). Raises ``DataError`` with the line number
    for invalid JSON, a missing or doubled field, or an id given twice.
    """
    rows = []
    seen: dict[str, int] = {}
    for number, record in read_jsonl(path):
        key = record.get("id")
        if isinstance(key, bool) or not isinstance(key, str | int):
            raise DataError(path, "needs a string or integer", line=number, field="id", value=key)
        if ("output" in record) == ("answer" in record):
            raise DataError(path, "give exactly one of 'output' and 'answer'", line=number)
        is_answer = "answer" in record
        value = record["answer"] if is_answer else record["output"]
        if isinstance(value, list) and is_answer and all(isinstance(item, str) for item in value):
            value = ", ".join(value)
        if not isinstance(value, str):
            field = "answer" if is_answer else "output"
            raise DataError(
                path,
                "must be a string" + (" or a list of strings" if is_answer else ""),
                line=number,
                field=field,
                value=value,
            )
        ident = str(key)
        if ident in seen:
            raise DataError(path, f"id also given on line {seen[ident]}", line=number, field="id", value=ident)
        seen[ident] = number
        rows.append((number, ident, value, is_answer))
    return rows


async def ascore_predictions(
    task: Task, path: str | Path, *, models: Mapping[str, Model] | None = None
) -> dict[str, Any]:
    """Score the predictions in ``path`` with ``task``'s parser and scorers (see :func:`score_predictions`)."""
    samples: dict[str, Sample] = {sample.id: sample for sample in task.dataset}
    rows = read_predictions(path)
    unknown = [ident for _, ident, _, _ in rows if ident not in samples]
    values: dict[tuple[str, str], list[float | None]] = {}
    unparsed = 0
    scored = 0
    notes: list[str] = []
    for _, ident, text, is_answer in rows:
        sample = samples.get(ident)
        if sample is None:
            continue
        note = sample.data_issue_note()
        if note is not None:
            notes.append(note)
        answer = task.parser(text, sample)
        if is_answer and answer.parsed:
            answer = ParsedAnswer(value=answer.value, method=f"given:{answer.method}")
        unparsed += not answer.parsed
        scored += 1
        generation = Generation(sample_id=ident, output=text, answer=answer)
        ctx = SampleContext(models or {})
        for scorer in task.scorers:
            score = await scorer(sample, generation, ctx)
            for metric, value in score.values.items():
                values.setdefault((scorer.name, metric), []).append(value)
    metrics = []
    for (scorer_name, metric), found in values.items():
        present = [value for value in found if value is not None]
        metrics.append(
            {
                "scorer": scorer_name,
                "metric": metric,
                "value": sum(present) / len(present) if present else None,
                "n": len(present),
                "missing": len(found) - len(present),
            }
        )
    answered = {ident for _, ident, _, _ in rows}
    return {
        "task": task.name,
        "version": task.version,
        "predictions": str(path),
        "scored": scored,
        "unparsed": unparsed,
        "without_prediction": sum(1 for ident in samples if ident not in answered),
        "unknown_ids": unknown,
        "metrics": metrics,
        "notes": notes,
    }


def score_predictions(task: Task, path: str | Path, *, models: Mapping[str, Model] | None = None) -> dict[str, Any]:
    """Score predictions made elsewhere against ``task``.

    ``path`` is JSONL as :func:`read_predictions` describes. Each prediction is read
    by the task's parser (an ``answer`` too, so ``"B, E"`` and ``["B", "E"]`` both
    work) and graded by every scorer of the task; scorers that call models (judges)
    take them from ``models`` by role. Metrics are means over the scored predictions
    whose value is not ``None``, each with ``n`` and ``missing`` (values that could not be
    computed). Also reported: ``unparsed`` replies, task samples ``without_prediction``
    (not scored at all), ``unknown_ids`` (ids not in the task, ignored) and ``notes`` naming
    each scored sample whose key the dataset flags (:attr:`~ebmeval.tasks.Sample.data_issue`).
    """
    return asyncio.run(ascore_predictions(task, path, models=models))
