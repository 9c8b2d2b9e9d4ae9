"""Build the shipped long-form consumer-health QA data (LiveQA, MedicationQA, HealthSearchQA).

Writes to ``src/ebmeval/builtin_tasks/data/``:

- ``lfqa_liveqa.jsonl.gz``: the 104 TREC 2017 LiveQA Medical test questions (the file with NLM
  summaries): ``{id, subject, message, paraphrase, summary, focus, types, answers: [{id, text, url}]}``.
- ``lfqa_medicationqa.jsonl.gz``: MedicationQA (MedInfo 2019) with rows of equal question text
  merged: ``{id, question, focus, type, answers: [{text, section, url}]}``, in order of first row.
- ``lfqa_healthsearchqa.jsonl.gz``: HealthSearchQA questions, exact duplicates dropped:
  ``{id, question}``, in upstream order.

Text fields have runs of whitespace collapsed to one space. Output is deterministic (upstream
order, fixed gzip mtime). Usage::

    python scripts/build_lfqa_data.py [--data ../shared/data] [--out src/ebmeval/builtin_tasks/data]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from ebmeval.builtin_tasks._data import write_records

LIVEQA = "lfqa/liveqa/TREC-2017-LiveQA-Medical-Test-Questions-w-summaries.xml"
MEDICATIONQA = "lfqa/medicationqa/medicationqa.jsonl"
HEALTHSEARCHQA = "lfqa/healthsearchqa/healthsearchqa_questions.json"


def clean(text: str | None) -> str:
    """``text`` with whitespace runs collapsed; ``""`` for ``None``."""
    return " ".join((text or "").split())


def liveqa(path: Path) -> list[dict[str, Any]]:
    """The LiveQA test questions with their reference answers, in file order."""
    records = []
    for question in ElementTree.parse(path).getroot().iter("NLM-QUESTION"):
        original = question.find("Original-Question")
        annotations = question.find("ANNOTATIONS")
        records.append(
            {
                "id": question.get("qid", ""),
                "subject": clean(original.findtext("SUBJECT") if original is not None else None),
                "message": clean(original.findtext("MESSAGE") if original is not None else None),
                "paraphrase": clean(question.findtext("NIST-PARAPHRASE")),
                "summary": clean(question.findtext("NLM-Summary")),
                "focus": [clean(f.text) for f in annotations.iter("FOCUS")] if annotations is not None else [],
                "types": [clean(t.text) for t in annotations.iter("TYPE")] if annotations is not None else [],
                "answers": [
                    {
                        "id": answer.get("aid", ""),
                        "text": clean(answer.findtext("ANSWER")),
                        "url": clean(answer.findtext("AnswerURL")),
                    }
                    for answer in question.iter()
                    if answer.tag in ("RefAnswer", "ReferenceAnswer")
                ],
            }
        )
    return records


def medicationqa(path: Path) -> list[dict[str, Any]]:
    """MedicationQA questions, rows with the same question text merged into one record."""
    by_question: dict[str, dict[str, Any]] = {}
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            question = clean(row["Question"])
            record = by_question.setdefault(
                question,
                {
                    "id": f"medicationqa-{len(by_question):04d}",
                    "question": question,
                    "focus": clean(row.get("Focus (Drug)")),
                    "type": clean(row.get("Question Type")),
                    "answers": [],
                },
            )
            record["answers"].append(
                {
                    "text": clean(row.get("Answer")),
                    "section": clean(row.get("Section Title")),
                    "url": clean(row.get("URL")),
                }
            )
    return list(by_question.values())


def healthsearchqa(path: Path) -> list[dict[str, Any]]:
    """HealthSearchQA questions without exact duplicates, in upstream order."""
    seen: dict[str, None] = {}
    for entry in json.loads(path.read_text(encoding="utf-8")):
        seen.setdefault(clean(entry["question"]), None)
    return [{"id": f"healthsearchqa-{i:04d}", "question": q} for i, q in enumerate(seen)]


def main() -> None:
    """Build the three files and print their counts."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--out", type=Path, default=Path("src/ebmeval/builtin_tasks/data"))
    args = parser.parse_args()
    live = liveqa(args.data / LIVEQA)
    answers = sum(len(r["answers"]) for r in live)
    print(f"liveqa: {write_records(args.out / 'lfqa_liveqa.jsonl.gz', live)} questions, {answers} reference answers")
    med = medicationqa(args.data / MEDICATIONQA)
    print(f"medicationqa: {write_records(args.out / 'lfqa_medicationqa.jsonl.gz', med)} questions")
    hsqa = healthsearchqa(args.data / HEALTHSEARCHQA)
    print(f"healthsearchqa: {write_records(args.out / 'lfqa_healthsearchqa.jsonl.gz', hsqa)} questions")


if __name__ == "__main__":
    main()
