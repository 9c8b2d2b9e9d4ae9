"""Reading the data files shipped in ``ebmeval/benchmarks/data`` (built by ``scripts/build_data.py``)."""

from __future__ import annotations

import gzip
from collections.abc import Collection, Iterator, Mapping
from functools import cache
from importlib import resources
from typing import Any

from .._util.errors import DataError
from ..tasks import parse_jsonl

PACKAGE = "ebmeval.benchmarks"


def data_path(name: str) -> str:
    """A printable location of the shipped file ``name``, for error messages."""
    return f"{PACKAGE}/data/{name}"


@cache
def read_records(name: str) -> tuple[dict[str, Any], ...]:
    """Every record of the shipped gzip JSONL file ``name``, in file order.

    Raises ``DataError`` (with the line number) for a missing file or a line that is
    not a JSON object.
    """
    return tuple(_iter_records(name))


def _iter_records(name: str) -> Iterator[dict[str, Any]]:
    resource = resources.files(PACKAGE).joinpath("data", name)
    if not resource.is_file():
        raise DataError(data_path(name), "shipped data file is missing; rebuild it with scripts/build_data.py")
    with resource.open("rb") as raw, gzip.open(raw, "rb") as lines:
        for _, record in parse_jsonl(lines, data_path(name)):
            yield record


def require(record: Mapping[str, Any], keys: Collection[str], name: str, line: int) -> None:
    """Raise ``DataError`` naming the first of ``keys`` missing from ``record``."""
    for key in keys:
        if key not in record:
            raise DataError(data_path(name), "missing field", line=line, field=key)
