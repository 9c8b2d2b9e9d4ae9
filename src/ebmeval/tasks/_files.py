"""Reading user-supplied dataset files line by line, with errors that name the place."""

from __future__ import annotations

import csv
import gzip
import io
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from .._util.csvrows import numbered_rows
from .._util.errors import DataError, MissingDependencyError


def read_jsonl(path: str | Path, *, errors: list[DataError] | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, record) of every non-blank line of a JSONL file (``.gz`` is decompressed).

    Raises ``DataError`` with file and line for undecodable bytes, invalid JSON or a line
    that is not a JSON object; with ``errors``, a line of invalid JSON or not an object is
    recorded there and skipped instead (undecodable bytes still raise: the file is not text).
    """
    source = Path(path)
    if not source.is_file():
        raise DataError(source, "no such file")
    if source.suffix == ".gz":
        with gzip.open(source, "rb") as compressed:
            yield from parse_jsonl(compressed, source, errors=errors)
    else:
        with source.open("rb") as plain:
            yield from parse_jsonl(plain, source, errors=errors)


MAX_DEPTH = 64
"""Deepest nesting of arrays and objects accepted in a JSONL line."""


def _json_record(line: str, source: str | Path, number: int) -> dict[str, Any]:
    """The JSON object on one line; ``DataError`` for another value or one nested deeper than :data:`MAX_DEPTH`."""
    too_deep = DataError(source, f"JSON nested more than {MAX_DEPTH} levels deep", line=number)
    try:
        record = json.loads(line)
    except RecursionError:
        raise too_deep from None
    if _depth(record) > MAX_DEPTH:
        raise too_deep
    if not isinstance(record, dict):
        raise DataError(source, "expected a JSON object", line=number, value=record)
    return record


def _depth(value: Any) -> int:
    """How deeply arrays and objects nest in ``value`` (0 for a scalar), without recursion."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        deepest = max(deepest, level)
        if level <= MAX_DEPTH:
            stack.extend((child, level + 1) for child in children)
    return deepest


def parse_jsonl(
    lines: Iterable[bytes], source: str | Path, *, errors: list[DataError] | None = None
) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, record) of every non-blank line of a binary JSONL stream; errors name ``source``.

    With ``errors``, lines that are not JSON objects are recorded there and skipped (see :func:`read_jsonl`).
    """
    number = 0
    stream = iter(lines)
    while True:
        try:
            raw = next(stream, b"")
        except (OSError, EOFError) as exc:
            raise DataError(source, f"cannot read: {exc}", line=number + 1) from None
        if not raw:
            return
        number += 1
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            reason = f"not UTF-8 text ({exc.reason} at column {exc.start + 1})"
            raise DataError(source, reason, line=number) from None
        if not line.strip():
            continue
        try:
            record = _json_record(line, source, number)
        except json.JSONDecodeError as exc:
            problem = DataError(source, f"invalid JSON: {exc.msg} at column {exc.colno}", line=number)
            if errors is None:
                raise problem from None
            errors.append(problem)
            continue
        except DataError as problem:
            if errors is None:
                raise
            errors.append(problem)
            continue
        yield number, record


@dataclass(frozen=True)
class RowPlace:
    """Where a record of a user's dataset is: a line (JSONL, CSV) or a 1-based row (JSON, Parquet, datasets)."""

    path: Path
    line: int | None = None
    row: int | None = None

    def error(self, message: str, *, field: str | None = None, value: object = None) -> DataError:
        """A ``DataError`` naming this file, line or row, and ``field``."""
        return DataError(self.path, message, line=self.line, row=self.row, field=field, value=value)


ROW_FORMATS = ".jsonl, .json, .csv (each optionally .gz), .parquet, or a folder written by datasets' save_to_disk"
"""What :func:`read_rows` reads, for messages."""


def read_rows(path: str | Path, *, split: str | None = None) -> Iterator[tuple[RowPlace, dict[str, Any]]]:
    """(place, record) of every record of a user's dataset, in file order; the format comes from the name.

    JSONL lines and CSV rows are placed by line (a CSV row by the line it starts on; its cells are
    text, an empty cell is absent); a JSON file holds a list of objects (or an object with one such
    list) and, like Parquet and a ``datasets`` folder, is placed by row. A ``datasets`` folder is
    read with pyarrow, ``datasets`` itself is not needed; one holding several splits needs ``split``.
    """
    source = Path(path)
    if source.is_dir():
        yield from _datasets_rows(source, split)
        return
    if not source.is_file():
        raise DataError(source, "no such file")
    name = source.name.lower().removesuffix(".gz")
    if name.endswith((".jsonl", ".ndjson")):
        for line, record in read_jsonl(source):
            yield RowPlace(source, line=line), record
    elif name.endswith(".json"):
        yield from _json_rows(source)
    elif name.endswith(".csv"):
        yield from _csv_rows(source)
    elif name.endswith(".parquet"):
        yield from _table_rows(source, _parquet(source))
    else:
        raise DataError(source, f"cannot tell the format from the name; expected {ROW_FORMATS}")


def _text(source: Path) -> IO[str]:
    if source.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(source, "rb"), encoding="utf-8", newline="")
    return source.open(encoding="utf-8", newline="")


def _json_rows(source: Path) -> Iterator[tuple[RowPlace, dict[str, Any]]]:
    try:
        with _text(source) as handle:
            data = json.load(handle)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise DataError(source, f"invalid JSON ({exc.__class__.__name__}: {exc})") from None
    if isinstance(data, dict):
        lists = [v for v in data.values() if isinstance(v, list)]
        if len(lists) != 1:
            raise DataError(source, "expected a list of objects, or an object holding exactly one list")
        data = lists[0]
    if not isinstance(data, list):
        raise DataError(source, "expected a list of objects", value=data)
    for row, record in enumerate(data, start=1):
        if not isinstance(record, dict):
            raise DataError(source, "expected a JSON object", row=row, value=record)
        yield RowPlace(source, row=row), record


def _csv_rows(source: Path) -> Iterator[tuple[RowPlace, dict[str, Any]]]:
    try:
        with _text(source) as handle:
            reader = csv.DictReader(handle)
            if reader.fieldnames is None:  # reads the header line
                return
            for start, row in numbered_rows(reader):
                if isinstance(row, csv.Error):
                    raise DataError(source, f"invalid CSV ({row})", line=start)
                if None in row:
                    raise DataError(source, f"more cells than the header has columns ({reader.fieldnames})", line=start)
                yield RowPlace(source, line=start), {k: v for k, v in row.items() if v is not None and v != ""}
    except UnicodeDecodeError as exc:
        raise DataError(source, f"not UTF-8 text ({exc.reason})") from None


def _parquet(source: Path) -> Any:
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise MissingDependencyError("Reading Parquet", "pyarrow", "export") from exc
    try:
        return pq.read_table(source)
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for a damaged file
        raise DataError(source, f"cannot read as Parquet ({exc.__class__.__name__}: {exc})") from None


def _table_rows(source: Path, table: Any, start: int = 1) -> Iterator[tuple[RowPlace, dict[str, Any]]]:
    for row, record in enumerate(table.to_pylist(), start=start):
        yield RowPlace(source, row=row), record


def _datasets_rows(folder: Path, split: str | None) -> Iterator[tuple[RowPlace, dict[str, Any]]]:
    """The rows of a folder written by ``Dataset.save_to_disk`` (or one split of a ``DatasetDict``'s)."""
    splits_file = folder / "dataset_dict.json"
    if splits_file.is_file():
        splits = [str(s) for s in json.loads(splits_file.read_text(encoding="utf-8")).get("splits", [])]
        chosen = split if split is not None else splits[0] if len(splits) == 1 else None
        if chosen not in splits:
            raise DataError(folder, f"holds the splits {splits}; choose one with split=NAME")
        folder = folder / str(chosen)
    state = folder / "state.json"
    if not state.is_file():
        raise DataError(folder, f"a folder must be written by datasets' save_to_disk (no state.json); {ROW_FORMATS}")
    try:
        import pyarrow as pa
    except ImportError as exc:
        raise MissingDependencyError("Reading a datasets folder", "pyarrow", "export") from exc
    start = 1
    for entry in json.loads(state.read_text(encoding="utf-8")).get("_data_files", []):
        part = folder / entry["filename"]
        try:
            with pa.memory_map(str(part)) as stream:
                table = pa.ipc.open_stream(stream).read_all()
        except (OSError, pa.ArrowInvalid) as exc:
            raise DataError(part, f"cannot read as an Arrow stream ({exc})") from None
        yield from _table_rows(part, table, start)
        start += table.num_rows
