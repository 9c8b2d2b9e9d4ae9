"""The data files shipped in ``ebmeval/builtin_tasks/data``: read by tasks, written by ``scripts/build_*``."""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Collection, Iterable, Iterator, Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from .._util.errors import DataError
from ..tasks import parse_jsonl

PACKAGE = "ebmeval.builtin_tasks"


def data_path(name: str) -> str:
    """A printable location of the shipped file ``name``, for error messages."""
    return f"{PACKAGE}/data/{name}"


def read_records(name: str, required: Collection[str] = ()) -> tuple[dict[str, Any], ...]:
    """Every record of the shipped gzip JSONL file ``name``, in file order, each holding the fields ``required``.

    Raises ``DataError`` (with the line number) for a missing file, a line that is
    not a JSON object or a record without one of ``required`` (:func:`require`).
    """
    records = _records(name)
    for line, record in enumerate(records, start=1):
        require(record, required, name, line)
    return records


@cache
def _records(name: str) -> tuple[dict[str, Any], ...]:
    return tuple(_iter_records(name))


def _iter_records(name: str) -> Iterator[dict[str, Any]]:
    resource = resources.files(PACKAGE).joinpath("data", name)
    if not resource.is_file():
        raise DataError(data_path(name), "shipped data file is missing; rebuild it with scripts/build_data.py")
    with resource.open("rb") as raw, gzip.open(raw, "rb") as lines:
        for _, record in parse_jsonl(lines, data_path(name)):
            yield record


def write_records(path: str | Path, records: Iterable[Mapping[str, Any]]) -> int:
    """Write ``records`` as gzip JSONL (sorted keys, zero mtime, no file name, level 9); return the count.

    The fixed header makes a rebuild from the same input byte-identical.
    """
    buffer = io.BytesIO()
    count = 0
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0, compresslevel=9) as handle:
        for record in records:
            handle.write((json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8"))
            count += 1
    Path(path).write_bytes(buffer.getvalue())
    return count


def require(record: Mapping[str, Any], keys: Collection[str], name: str, line: int) -> None:
    """Raise ``DataError`` naming the first of ``keys`` missing from ``record``."""
    for key in keys:
        if key not in record:
            raise DataError(data_path(name), "missing field", line=line, field=key)
