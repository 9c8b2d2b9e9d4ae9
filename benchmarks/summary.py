"""Collect ``benchmarks/results/*.json`` into the tables of ``docs/performance.md``.

Every result file that carries a ``table`` (``title``, ``columns``, ``rows``) becomes one
Markdown table; the tables replace whatever stands between the ``<!-- results:start -->``
and ``<!-- results:end -->`` markers of the page, so the prose around them survives.

Usage::

    python benchmarks/summary.py            # rewrite docs/performance.md
    python benchmarks/summary.py --check    # exit 1 if the page is out of date
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
START, END = "<!-- results:start -->", "<!-- results:end -->"


def markdown_table(table: dict[str, Any], source: str, date: str | None) -> str:
    """One result table as Markdown, with the file and date it came from."""
    from ebmeval.tables import Table

    shown = Table("", table["columns"])
    for row in table["rows"]:
        shown.add(*row)
    lines = [f"### {table['title']}", "", f"From `benchmarks/results/{source}`" + (f", {date}." if date else "."), ""]
    return "\n".join([*lines, shown.markdown().rstrip("\n")])


def render(results: Path) -> str:
    """Every table found in ``results``, in file-name order."""
    blocks = []
    for path in sorted(results.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(data, dict) and isinstance(data.get("table"), dict):
            blocks.append(markdown_table(data["table"], path.name, data.get("date")))
    return "\n\n".join(blocks)


def updated(page: str, tables: str) -> str:
    """``page`` with the text between the markers replaced by ``tables``."""
    head, found, rest = page.partition(START)
    if not found or END not in rest:
        raise SystemExit(f"the page lacks the markers {START} … {END}")
    return f"{head}{START}\n\n{tables}\n\n{END}{rest.partition(END)[2]}"


def main() -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--results", type=Path, default=ROOT / "benchmarks" / "results")
    parser.add_argument("--page", type=Path, default=ROOT / "docs" / "performance.md")
    parser.add_argument("--check", action="store_true", help="only report whether the page is up to date")
    args = parser.parse_args()
    page = args.page.read_text(encoding="utf-8")
    new = updated(page, render(args.results))
    if args.check:
        sys.exit(0 if new == page else 1)
    args.page.write_text(new, encoding="utf-8")


if __name__ == "__main__":
    main()
