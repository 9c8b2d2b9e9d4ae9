"""Scoring predictions made outside ebmeval, read from a JSONL file."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .._util.blocking import synchronous
from .._util.errors import DataError, UsageError
from ..models import Model
from ..tasks import Generation, ParsedAnswer, Sample, SampleContext, Score, Task, read_jsonl, run_metric_registry


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
    """Score predictions made elsewhere against ``task``.

    ``path`` is JSONL as :func:`read_predictions` describes. Each prediction is read
    by the task's parser (an ``answer`` too, so ``"B, E"`` and ``["B", "E"]`` both
    work) and graded by every scorer of the task; scorers that call models (judges)
    take them from ``models`` by role. Metrics are means over the scored predictions
    whose value is not ``None``, each with ``n`` and ``missing`` (values that could not be
    computed). Also reported: ``unparsed`` replies, task samples ``without_prediction``
    (not scored at all), ``unknown_ids`` (ids not in the task, ignored), ``notes`` naming
    each scored sample whose key the dataset flags (:attr:`~ebmeval.tasks.Sample.data_issue`) and
    ``errors``: each scorer that failed on a prediction (``id``, ``stage``, ``error``), the others
    still scored, as in a run. Run-level metrics the scorers declare (micro-F1 …) are listed as a
    run lists them.

    Raises:
        UsageError: a role the task declares (``judge`` …) has no model in ``models``.
    """
    from ..runner import score_sample

    missing = [role for role in task.roles if role not in (models or {})]
    if missing:
        given = ", ".join(f"--role {role}=SPEC" for role in missing)
        raise UsageError(f"the scorers of {task.name} need a model for {', '.join(missing)}: give {given}")
    samples: dict[str, Sample] = {sample.id: sample for sample in task.dataset}
    rows = read_predictions(path)
    unknown = [ident for _, ident, _, _ in rows if ident not in samples]
    scores: list[list[Score]] = [[] for _ in task.scorers]
    errors: list[dict[str, str]] = []
    unparsed = 0
    scored = 0
    notes: list[str] = []
    labels = [(scorer, scorer.name) for scorer in task.scorers]
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
        failures = await score_sample(
            sample, generation, SampleContext(models or {}), labels, lambda i, score: scores[i].append(score)
        )
        errors += [{"id": ident, "stage": f.stage, "error": f.error} for f in failures]
    answered = {ident for _, ident, _, _ in rows}
    return {
        "task": task.name,
        "version": task.version,
        "predictions": str(path),
        "scored": scored,
        "unparsed": unparsed,
        "without_prediction": sum(1 for ident in samples if ident not in answered),
        "unknown_ids": unknown,
        "metrics": [
            m for scorer, found in zip(task.scorers, scores, strict=True) for m in _metrics(scorer.name, found)
        ],
        "errors": errors,
        "notes": notes,
    }


score_predictions = synchronous(ascore_predictions, "ebmeval.score_predictions", "await ascore_predictions(…)")


def _metrics(name: str, scores: Sequence[Score]) -> list[dict[str, Any]]:
    """The metrics of one scorer's scores, as a run's summary gives them.

    Each value's mean over the scores that have it (with ``n`` and ``missing``), then the
    run-level metrics the scorer declares (``ebmeval.tasks.run_metric``: micro-F1 …).
    """
    values: dict[str, list[float | None]] = {}
    for score in scores:
        for metric, value in score.values.items():
            values.setdefault(metric, []).append(value)
    found = []
    for metric, raw in values.items():
        present = [value for value in raw if value is not None]
        mean = sum(present) / len(present) if present else None
        found.append(
            {"scorer": name, "metric": metric, "value": mean, "n": len(present), "missing": len(raw) - len(present)}
        )
    if name in run_metric_registry:
        for metric, (value, _ci) in run_metric_registry.get(name)(scores).items():
            found.append({"scorer": name, "metric": metric, "value": value, "n": len(scores), "missing": 0})
    return found
