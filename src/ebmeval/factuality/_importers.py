"""Reading generated summaries, targets and human factuality labels from files and runs.

Files:

* generated summaries: CSV with ``ReviewID`` and ``Generated`` columns (the MSLR submission
  format; an unnamed index column is allowed and ``<s>``/``</s>`` markers are removed), or JSONL
  objects with ``review_id`` and ``generated``;
* targets: CSV with ``ReviewID`` and ``Target`` and optionally ``Background`` (the MSLR and
  RCT-summarization target files), or JSONL with ``review_id``, ``target`` and ``background``;
* human labels: CSV with ``ReviewID`` and one column per category and annotator, named
  ``<category>__<annotator>`` (e.g. ``population__ann1``). Binary categories take
  ``1/0/yes/no/true/false`` and the label categories (``target_direction`` …) a direction or
  modality name; an empty cell is a missing label.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._util.errors import DataError
from ..tasks import read_jsonl
from ._schema import (
    BINARY_CATEGORIES,
    LABEL_CATEGORIES,
    FactualityLabels,
    normalize_direction,
    normalize_modality,
)

_MARKERS = re.compile(r"</?s>")
_TRUE = {"1", "yes", "true", "y", "correct"}
_FALSE = {"0", "no", "false", "n", "incorrect"}


@dataclass(frozen=True, slots=True)
class SummaryPair:
    """A generated summary with the target it is judged against.

    Attributes:
        review_id: The review both summarise.
        generated: The generated summary.
        target: The reference summary (e.g. the review authors' conclusions).
        background: The review's background or objective text, when known (for copying analysis).
    """

    review_id: str
    generated: str
    target: str
    background: str | None = None


def _csv_rows(path: Path, required: tuple[str, ...]) -> Iterator[tuple[int, dict[str, str]]]:
    """(line number, row) of a CSV file with the ``required`` columns."""
    try:
        handle = path.open(encoding="utf-8", newline="")
    except OSError as exc:
        raise DataError(path, f"cannot read: {exc.strerror}") from None
    with handle:
        reader = csv.DictReader(handle)
        try:
            columns = reader.fieldnames or []
            for name in required:
                if name not in columns:
                    raise DataError(path, f"missing column (columns: {', '.join(columns)})", line=1, field=name)
            for row in reader:
                if None in row:
                    raise DataError(path, "more cells than header columns", line=reader.line_num)
                if None in row.values():
                    raise DataError(path, "fewer cells than header columns", line=reader.line_num)
                yield reader.line_num, row
        except UnicodeDecodeError as exc:
            raise DataError(path, f"not UTF-8 text ({exc.reason})", line=reader.line_num + 1) from None
        except csv.Error as exc:
            raise DataError(path, f"malformed CSV: {exc}", line=reader.line_num) from None


def _jsonl_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    return read_jsonl(path)


def _text(record: dict[str, Any], key: str, path: Path, line: int, *, optional: bool = False) -> str | None:
    value = record.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise DataError(path, "missing or not a string", line=line, field=key, value=value)
    return value


def _add(seen: dict[str, Any], key: str, value: Any, path: Path, line: int) -> None:
    if not key.strip():
        raise DataError(path, "empty review id", line=line, field="ReviewID")
    if key in seen:
        raise DataError(path, "duplicate review id", line=line, field="ReviewID", value=key)
    seen[key] = value


def read_generated(path: str | Path) -> dict[str, str]:
    """Generated summaries by review id from an MSLR CSV (``ReviewID,Generated``) or JSONL file."""
    source = Path(path)
    out: dict[str, str] = {}
    if source.suffix == ".jsonl":
        for line, record in _jsonl_rows(source):
            review = str(record.get("review_id", ""))
            _add(out, review, _clean(_text(record, "generated", source, line) or ""), source, line)
    else:
        for line, row in _csv_rows(source, ("ReviewID", "Generated")):
            _add(out, row["ReviewID"], _clean(row["Generated"]), source, line)
    return out


def read_targets(path: str | Path) -> dict[str, tuple[str, str | None]]:
    """(target, background) by review id from a CSV (``ReviewID,Target[,Background]``) or JSONL file."""
    source = Path(path)
    out: dict[str, tuple[str, str | None]] = {}
    if source.suffix == ".jsonl":
        for line, record in _jsonl_rows(source):
            target = _text(record, "target", source, line) or ""
            background = _text(record, "background", source, line, optional=True)
            _add(out, str(record.get("review_id", "")), (target.strip(), background), source, line)
    else:
        for line, row in _csv_rows(source, ("ReviewID", "Target")):
            background = row.get("Background") or None
            _add(out, row["ReviewID"], (row["Target"].strip(), background), source, line)
    return out


def _clean(text: str) -> str:
    return _MARKERS.sub("", text).strip()


def pair_summaries(generated: dict[str, str], targets: dict[str, tuple[str, str | None]]) -> list[SummaryPair]:
    """Join generated summaries to their targets by review id, in the order of ``generated``.

    Raises ``DataError`` naming the review ids that have no target.
    """
    missing = [review for review in generated if review not in targets]
    if missing:
        raise DataError("targets", f"{len(missing)} generated summaries have no target", value=missing[:5])
    return [
        SummaryPair(review_id=review, generated=text, target=targets[review][0], background=targets[review][1])
        for review, text in generated.items()
    ]


def read_pairs(generated_path: str | Path, targets_path: str | Path) -> list[SummaryPair]:
    """:func:`read_generated` joined to :func:`read_targets`."""
    return pair_summaries(read_generated(generated_path), read_targets(targets_path))


def pairs_from_run(store_path: str | Path, run_id: str) -> list[SummaryPair]:
    """Pairs from an ebmeval run: generation output against ``sample.target`` (list targets joined).

    The background is ``sample.metadata["background"]`` when the task records it. Only epoch 0 is read.
    """
    from ..store import RunStore

    store = RunStore(store_path)
    try:
        return [
            SummaryPair(
                review_id=sample.id,
                generated=generation.output.strip(),
                target=" ".join(sample.targets).strip(),
                background=sample.metadata.get("background"),
            )
            for sample, generation in store.generations(run_id)
            if generation.epoch == 0
        ]
    finally:
        store.close()


@dataclass(slots=True)
class HumanLabels:
    """Factuality labels of one or more annotators, by annotator and review id.

    Attributes:
        path: The file they came from.
        annotators: Annotator names in column order.
        binary: ``binary[annotator][review_id]`` is that annotator's :class:`FactualityLabels`.
        labels: ``labels[annotator][review_id][category]`` holds the direction and modality labels
            (``target_direction`` …) where the file has them.
    """

    path: str
    annotators: list[str] = field(default_factory=list)
    binary: dict[str, dict[str, FactualityLabels]] = field(default_factory=dict)
    labels: dict[str, dict[str, dict[str, str | None]]] = field(default_factory=dict)


def _binary(cell: str, path: Path, line: int, column: str) -> bool | None:
    value = cell.strip().lower()
    if not value:
        return None
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise DataError(path, "expected 1/0, yes/no or true/false", line=line, field=column, value=cell)


def _label(category: str, cell: str, path: Path, line: int, column: str) -> str | None:
    if not cell.strip():
        return None
    value: str | None
    if category.endswith("direction"):
        value = normalize_direction(cell)
        kind = "a direction (positive, negative, no effect)"
    else:
        value = normalize_modality(cell)
        kind = "a modality (strong, moderate, weak, no evidence, no claim)"
    if value is None:
        raise DataError(path, f"expected {kind}", line=line, field=column, value=cell)
    return value


def read_human_labels(path: str | Path) -> HumanLabels:
    """Human labels from a CSV with ``ReviewID`` and ``<category>__<annotator>`` columns.

    Raises ``DataError`` (with file and line) for an unknown category, a column without an
    annotator, a duplicate review id or a cell that is not a valid value.
    """
    source = Path(path)
    result = HumanLabels(path=str(source))
    columns: list[tuple[str, str, str]] = []
    rows = _csv_rows(source, ("ReviewID",))
    first = next(rows, None)
    with source.open(encoding="utf-8", newline="") as handle:
        header = next(csv.reader(handle), [])
    for column in header:
        if column in ("ReviewID", ""):
            continue
        category, sep, annotator = column.partition("__")
        if not sep or not annotator:
            raise DataError(source, "column must be named <category>__<annotator>", line=1, field=column)
        if category not in BINARY_CATEGORIES and category not in LABEL_CATEGORIES:
            known = ", ".join(BINARY_CATEGORIES + LABEL_CATEGORIES)
            raise DataError(source, f"unknown category (known: {known})", line=1, field=column)
        columns.append((column, category, annotator))
        if annotator not in result.annotators:
            result.annotators.append(annotator)
    seen: dict[str, None] = {}
    for line, row in ([first] if first else []) + list(rows):
        review = row["ReviewID"].strip()
        _add(seen, review, None, source, line)
        binary: dict[str, dict[str, bool | None]] = {a: {} for a in result.annotators}
        for column, category, annotator in columns:
            cell = row.get(column) or ""
            if category in BINARY_CATEGORIES:
                binary[annotator][category] = _binary(cell, source, line, column)
            else:
                label = _label(category, cell, source, line, column)
                result.labels.setdefault(annotator, {}).setdefault(review, {})[category] = label
        for annotator, values in binary.items():
            if any(v is not None for v in values.values()):
                result.binary.setdefault(annotator, {})[review] = FactualityLabels(**values)
    return result
