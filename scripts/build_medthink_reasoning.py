"""Build ``medthink_reasoning.jsonl.gz``, the data of the ``medthink/reasoning`` task.

Reads MedThink-Bench's ``QA_data.json`` (all 500 questions) and writes one record per
question, in upstream ``Index`` order: ``index``, ``qa_type``, ``question`` (verbatim,
options left in the text), ``answer`` (verbatim) and ``scoring_points`` (the expert
reasoning steps). The gzip header has a zero mtime and no file name, so rebuilding from
the same source gives identical bytes.

Usage::

    python scripts/build_medthink_reasoning.py [--source ../shared/data/medthink_bench/QA_data.json]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ebmeval.builtin_tasks._data import write_records

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SOURCE = ROOT.parent / "shared" / "data" / "medthink_bench" / "QA_data.json"
OUTPUT = ROOT / "src" / "ebmeval" / "builtin_tasks" / "data" / "medthink_reasoning.jsonl.gz"


def convert(item: dict[str, Any], position: int) -> dict[str, Any]:
    """One upstream item as a shipped record; raises ``ValueError`` naming the bad field."""
    for key in ("Index", "QA_Type", "question", "answer", "Scoring_Points"):
        if key not in item:
            raise ValueError(f"item {position}: missing field {key!r}")
    points = item["Scoring_Points"]
    if not isinstance(points, list) or not points or not all(isinstance(p, str) and p.strip() for p in points):
        raise ValueError(f"item {position}: 'Scoring_Points' must be a non-empty list of texts")
    return {
        "index": int(item["Index"]),
        "qa_type": str(item["QA_Type"]).strip(),
        "question": str(item["question"]).strip(),
        "answer": str(item["answer"]).strip(),
        "scoring_points": [p.strip() for p in points],
    }


def main() -> None:
    """Convert the source file and write the shipped data file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args()
    items = json.loads(args.source.read_text(encoding="utf-8"))
    records = sorted((convert(item, n) for n, item in enumerate(items, start=1)), key=lambda r: r["index"])
    write_records(args.output, records)
    steps = sum(len(r["scoring_points"]) for r in records)
    print(f"{args.output}: {len(records)} questions, {steps} expert steps, {args.output.stat().st_size} bytes")


if __name__ == "__main__":
    main()
