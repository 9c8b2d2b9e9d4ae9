"""Reading user-supplied dataset files line by line, with errors that name the place."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from .._util.errors import DataError


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
