"""Rows of a CSV file with the physical line each starts on."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from typing import Any


def numbered_rows(reader: csv.DictReader[str]) -> Iterator[tuple[int, dict[str | Any, str | Any] | csv.Error]]:
    """Each row of ``reader`` with the line it starts on; a malformed row gives its ``csv.Error`` instead.

    Reading goes on after a malformed row, so the caller decides whether it ends the file.
    """
    while True:
        start = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            yield start, exc
            continue
        yield start, row
