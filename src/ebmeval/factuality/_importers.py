"""Reading generated summaries, targets and human factuality labels from files and runs.

Files:

* generated summaries: CSV with ``ReviewID`` and ``Generated`` columns (the MSLR submission
  format; an unnamed index column is allowed), or JSONL objects with ``review_id`` and ``generated``;
* targets: CSV with ``ReviewID`` and ``Target`` and optionally ``Background`` (the MSLR and
  RCT-summarization target files), or JSONL with ``review_id``, ``target`` and ``background``;

  from every text the MSLR markup is removed: ``<s>``/``</s>`` and the section and PICO tags
  (``<background>``, ``<pop>``, ``<int>``, ``<out>`` and their closing tags, :data:`MSLR_TAGS`);
* human labels: CSV with ``ReviewID`` and one column per category and annotator, named
  ``<category>__<annotator>`` (e.g. ``population__ann1``). Binary categories take
  ``1/0/yes/no/true/false`` and the label categories (``target_direction`` …) a direction or
  modality name; an empty cell is a missing label.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from .._util.errors import DataError
from ..judges import (
    BINARY_CATEGORIES,
    LABEL_CATEGORIES,
    FactualityLabels,
    direction_agrees,
    normalize_direction,
    normalize_modality,
)
from ..tasks import read_jsonl

MSLR_TAGS: Final[tuple[str, ...]] = ("s", "background", "pop", "int", "out")
"""Markup of the MSLR files, removed from every text read (opening and closing tags)."""

_MARKERS = re.compile(r"\s*</?(?:" + "|".join(MSLR_TAGS) + r")>\s*")
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


def _csv_rows(path: Path, required: tuple[str, ...], delimiter: str = ",") -> Iterator[tuple[int, dict[str, str]]]:
    """(line number, row) of a CSV file (or a TSV file, with a tab ``delimiter``) with the ``required`` columns."""
    try:
        handle = path.open(encoding="utf-8", newline="")
    except OSError as exc:
        raise DataError(path, f"cannot read: {exc.strerror}") from None
    with handle:
        reader = csv.DictReader(handle, delimiter=delimiter)
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
    """Generated summaries by review id from an MSLR CSV (``ReviewID,Generated``) or a JSONL file.

    JSONL lines hold ``review_id`` and ``generated``, or ``id`` and ``output`` (the predictions
    format of ``ebmeval score``).
    """
    source = Path(path)
    out: dict[str, str] = {}
    if source.suffix == ".jsonl":
        for line, record in _jsonl_rows(source):
            keys = ("review_id", "generated") if "review_id" in record else ("id", "output")
            review = str(record.get(keys[0], ""))
            _add(out, review, _clean(_text(record, keys[1], source, line) or ""), source, line)
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
            _add(out, str(record.get("review_id", "")), (_clean(target), _clean_optional(background)), source, line)
    else:
        for line, row in _csv_rows(source, ("ReviewID", "Target")):
            _add(out, row["ReviewID"], (_clean(row["Target"]), _clean_optional(row.get("Background"))), source, line)
    return out


def _clean(text: str) -> str:
    """``text`` without the :data:`MSLR_TAGS` markup (a tag becomes one space) and outer whitespace."""
    return _MARKERS.sub(" ", text).strip()


def _clean_optional(text: str | None) -> str | None:
    cleaned = _clean(text) if text else ""
    return cleaned or None


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
        annotators: Annotator names in the order first seen.
        binary: ``binary[annotator][review_id]`` is that annotator's :class:`FactualityLabels`.
        labels: ``labels[annotator][review_id][category]`` holds the direction and modality labels
            (``target_direction`` …) where the file has them.
    """

    path: str
    annotators: list[str] = field(default_factory=list)
    binary: dict[str, dict[str, FactualityLabels]] = field(default_factory=dict)
    labels: dict[str, dict[str, dict[str, str | None]]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class LabelMapping:
    """How to read a labels file written by another tool.

    Attributes:
        columns: Our names → the file's column names: ``review`` (default ``ReviewID``),
            ``annotator`` (a column naming the annotator: one row per review and annotator) and
            any category (``population``, ``target_direction`` …). Without an ``annotator``
            column the file is wide: ``<category>__<annotator>`` columns.
        values: A cell's text (whitespace stripped, case ignored) → what it means: ``yes``/``no``
            (or ``1``/``0``) for a binary category, a direction or modality name for a label
            category, or an empty string for a missing label (e.g. ``{"2: Yes": "yes", "n/a": ""}``).
            Cells not listed are read as they are.
        system: For an annotation-study export holding several systems, the one to read.
    """

    columns: Mapping[str, str] = field(default_factory=dict)
    values: Mapping[str, str] = field(default_factory=dict)
    system: str | None = None

    def value(self, cell: str) -> str:
        """``cell`` as :attr:`values` maps it (unlisted: stripped)."""
        text = cell.strip()
        folded = {k.strip().lower(): v for k, v in self.values.items()}
        return folded.get(text.lower(), text)


EXPORT_COLUMNS: Final[tuple[str, ...]] = ("study", "form", "item", "annotator", "field", "system", "raw")
"""The columns of an ``ebmeval annotate export`` CSV that the reader uses (one row per answer)."""

_Cell = tuple[int, str, str, str, str]
"""(line, review id, annotator, category, cell text)."""


def _delimiter(path: Path) -> str:
    return "\t" if path.suffix.lower() in (".tsv", ".tab") else ","


def _header(path: Path) -> list[str]:
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            return next(csv.reader(handle, delimiter=_delimiter(path)), [])
    except OSError as exc:
        raise DataError(path, f"cannot read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise DataError(path, f"not UTF-8 text ({exc.reason})", line=1) from None


def _check_category(path: Path, category: str, column: str) -> None:
    if category not in BINARY_CATEGORIES and category not in LABEL_CATEGORIES:
        known = ", ".join(BINARY_CATEGORIES + LABEL_CATEGORIES)
        raise DataError(path, f"unknown category (known: {known})", line=1, field=column)


def _wide_cells(path: Path, header: list[str], review: str) -> Iterator[_Cell]:
    """Cells of a file with ``<category>__<annotator>`` columns."""
    columns: list[tuple[str, str, str]] = []
    for column in header:
        if column in (review, ""):
            continue
        category, sep, annotator = column.partition("__")
        if not sep or not annotator:
            raise DataError(path, "column must be named <category>__<annotator>", line=1, field=column)
        _check_category(path, category, column)
        columns.append((column, category, annotator))
    seen: dict[str, None] = {}
    for line, row in _csv_rows(path, (review,), _delimiter(path)):
        _add(seen, row[review].strip(), None, path, line)
        for column, category, annotator in columns:
            yield line, row[review].strip(), annotator, category, row[column] or ""


def _long_cells(path: Path, columns: Mapping[str, str]) -> Iterator[_Cell]:
    """Cells of a file with one row per review and annotator."""
    review, annotator = columns.get("review", "ReviewID"), columns["annotator"]
    categories = {c: column for c, column in columns.items() if c not in ("review", "annotator")}
    for category, column in categories.items():
        _check_category(path, category, column)
    seen: dict[str, None] = {}
    for line, row in _csv_rows(path, (review, annotator, *categories.values()), _delimiter(path)):
        who = row[annotator].strip()
        _add(seen, f"{row[review].strip()}\t{who}", None, path, line)
        for category, column in categories.items():
            yield line, row[review].strip(), who, category, row[column] or ""


def _export_cells(path: Path, system: str | None) -> Iterator[_Cell]:
    """Cells of an ``ebmeval annotate export`` CSV of a ``factuality`` study."""
    rows = list(_csv_rows(path, EXPORT_COLUMNS, ","))
    systems = sorted({row["system"] for _, row in rows})
    if system is None and len(systems) > 1:
        raise DataError(path, f"the study rated several systems ({', '.join(systems)}); name one", field="system")
    if system is not None and system not in systems:
        raise DataError(path, f"no such system (systems: {', '.join(systems)})", field="system", value=system)
    for line, row in rows:
        if row["form"] != "factuality":
            raise DataError(path, "not a factuality study", line=line, field="form", value=row["form"])
        if system is None or row["system"] == system:
            _check_category(path, row["field"], "field")
            yield line, row["item"].strip(), row["annotator"].strip(), row["field"], row["raw"]


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
    if cell.strip().lower() in ("", "n/a", "na", "not applicable"):
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


def _derived(values: dict[str, bool | None], labels: Mapping[str, str | None]) -> dict[str, bool | None]:
    """``values`` with direction and modality agreement taken from the side labels where not given."""
    t_dir = normalize_direction(labels.get("target_direction"))
    g_dir = normalize_direction(labels.get("generated_direction"))
    t_mod = normalize_modality(labels.get("target_modality"))
    g_mod = normalize_modality(labels.get("generated_modality"))
    out = dict(values)
    if out.get("direction") is None:
        out["direction"] = direction_agrees(t_dir, g_dir, t_mod, g_mod)
    if out.get("modality") is None and t_mod is not None and g_mod is not None:
        out["modality"] = t_mod == g_mod
    return out


def read_human_labels(path: str | Path, mapping: LabelMapping | None = None) -> HumanLabels:
    """Human labels from a CSV or TSV file (``.tsv``/``.tab``: tab-separated).

    Three layouts: ``ReviewID`` and ``<category>__<annotator>`` columns (the default); one row per
    review and annotator when ``mapping.columns`` names an ``annotator`` column; and the export of
    an annotation study with the ``factuality`` form (``ebmeval annotate export``), recognised by its
    columns. Cells are first translated by ``mapping.values``. Where direction or modality
    agreement is not given, it is derived from the side labels (direction only where neither side
    is "no evidence" or "no claim").

    Raises ``DataError`` (with file and line) for an unknown category, a column without an
    annotator, a duplicate review id or a cell that is not a valid value.
    """
    source = Path(path)
    how = mapping or LabelMapping()
    header = _header(source)
    cells: Iterator[_Cell]
    if all(c in header for c in EXPORT_COLUMNS):
        cells = _export_cells(source, how.system)
    elif "annotator" in how.columns:
        cells = _long_cells(source, how.columns)
    else:
        cells = _wide_cells(source, header, how.columns.get("review", "ReviewID"))
    result = HumanLabels(path=str(source))
    binary: dict[tuple[str, str], dict[str, bool | None]] = {}
    for line, review, annotator, category, cell in cells:
        if annotator not in result.annotators:
            result.annotators.append(annotator)
        column = how.columns.get(category, f"{category}__{annotator}")
        text = how.value(cell)
        if category in BINARY_CATEGORIES:
            binary.setdefault((annotator, review), {})[category] = _binary(text, source, line, column)
        else:
            label = _label(category, text, source, line, column)
            result.labels.setdefault(annotator, {}).setdefault(review, {})[category] = label
            binary.setdefault((annotator, review), {})
    for (annotator, review), values in binary.items():
        values = _derived(values, result.labels.get(annotator, {}).get(review, {}))
        if any(v is not None for v in values.values()):
            result.binary.setdefault(annotator, {})[review] = FactualityLabels(**values)
    return result
