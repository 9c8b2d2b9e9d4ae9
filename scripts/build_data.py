"""Build the data shipped with ebmeval's built-in tasks from the upstream files.

Usage::

    python scripts/build_data.py [--source ../shared/data] [--out src/ebmeval/builtin_tasks/data]

Each output is gzip-compressed JSONL, one record a line, written deterministically
(sorted input order, fixed gzip header), so rebuilding from the same sources gives
byte-identical files. Upstream repositories, commits and conversions are described
in ``docs/tasks/*.md``.
"""

from __future__ import annotations

import argparse
import json
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from ebmeval.builtin_tasks._data import write_records

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SOURCE = ROOT.parent / "shared" / "data"
DEFAULT_OUT = ROOT / "src" / "ebmeval" / "builtin_tasks" / "data"


def pubmedqa(source: Path) -> Iterator[dict[str, Any]]:
    """The 500 PQA-L test questions, in ``test_ground_truth.json`` order."""
    data = json.loads((source / "pubmedqa" / "ori_pqal.json").read_text(encoding="utf-8"))
    truth = json.loads((source / "pubmedqa" / "test_ground_truth.json").read_text(encoding="utf-8"))
    for pmid, label in truth.items():
        item = data[pmid]
        if item["final_decision"] != label:
            raise ValueError(f"pubmedqa {pmid}: ground truth {label!r} != final_decision {item['final_decision']!r}")
        yield {
            "pmid": pmid,
            "question": item["QUESTION"],
            "contexts": [
                {"label": section, "text": text} for section, text in zip(item["LABELS"], item["CONTEXTS"], strict=True)
            ],
            "long_answer": item["LONG_ANSWER"],
            "final_decision": item["final_decision"],
            "year": item.get("YEAR"),
            "meshes": item.get("MESHES", []),
        }


MIRAGE_DATASETS = ("mmlu", "medqa", "medmcqa", "pubmedqa", "bioasq")


def mirage(source: Path, dataset: str) -> Iterator[dict[str, Any]]:
    """One MIRAGE dataset, in ``benchmark.json`` order."""
    benchmark = json.loads((source / "mirage" / "benchmark.json").read_text(encoding="utf-8"))
    for qid, item in benchmark[dataset].items():
        record = {"id": qid, "question": item["question"], "options": item["options"], "answer": item["answer"]}
        if "PMID" in item:
            record["pmids"] = [str(pmid) for pmid in item["PMID"]]
        yield record


CAREMEDEVAL_FILES = {
    "en": ("english_only", "questions_en.json"),
    "fr": ("original", "questions.json"),
}


def caremedeval_questions(source: Path, language: str) -> Iterator[dict[str, Any]]:
    """The 534 questions in one language, with subset flags, in upstream order."""
    folder, name = CAREMEDEVAL_FILES[language]
    base = source / "caremedeval" / "data" / folder
    suffix = "_en" if language == "en" else ""
    justified = json.loads(
        (base / "with_justifications" / f"questions_justification{suffix}.json").read_text(encoding="utf-8")
    )
    context = json.loads(
        (base / "requires_context" / f"questions_requires_context{suffix}.json").read_text(encoding="utf-8")
    )
    justified_ids = {item["id"] for item in justified}
    requires = {item["id"]: item["requires_context"] for item in context}
    for item in json.loads((base / "all" / name).read_text(encoding="utf-8")):
        yield {
            "id": item["id"],
            "article": item["id_article"],
            "question": item["question"],
            "answers": item["answers"],
            "correct_answers": item["correct_answers"],
            "essential_answers": item["essential_answers"],
            "unacceptable_answers": item["unacceptable_answers"],
            "labels": item["labels"],
            "justification": item["justification"],
            "source_exam": item["source_exam"],
            "date_exam": item["date_exam"],
            "article_link": item["article_link"],
            "article_date": item["article_date"],
            "with_justification": item["id"] in justified_ids,
            "requires_context": requires.get(item["id"]),
        }


def caremedeval_articles(source: Path) -> Iterator[dict[str, Any]]:
    """The 37 articles, full text and abstract (the English files, shared by both languages)."""
    base = source / "caremedeval" / "data" / "english_only" / "all"
    numbers = sorted(int(path.stem.split("_")[1]) for path in (base / "articles").glob("article_*.txt"))
    for number in numbers:
        name = f"article_{number}.txt"
        yield {
            "id": f"article_{number}",
            "full": (base / "articles" / name).read_text(encoding="utf-8"),
            "abstract": (base / "articles_abstract" / name).read_text(encoding="utf-8"),
        }


MEDTHINK_LINE_OPTION = re.compile(r"^\s*([A-Z])[.)]\s+(.+?)\s*$")
MEDTHINK_INLINE_OPTION = re.compile(r"\(([A-Z])\)\s*")
MEDTHINK_HEADER = re.compile(r"\s*Answer Choices:\s*$", re.I)
MEDTHINK_ANSWER = re.compile(r"\s*\(?([A-Z])(?:[.)]|\s*$)")


def split_medthink_options(question: str) -> tuple[str, list[tuple[str, str]], str]:
    """The stem, the options and their layout of one MedThink-Bench question.

    Two layouts occur: one ``X. text`` line per option at the end of the question
    (``lines``), or ``Answer Choices: (A) text (B) text …`` in one paragraph
    (``inline``). A stray closing quote and the ``Answer Choices:`` header are dropped.
    """
    text = question.strip().strip('"').rstrip()
    lines = text.splitlines()
    options: list[tuple[str, str]] = []
    while lines and (match := MEDTHINK_LINE_OPTION.match(lines[-1])):
        options.insert(0, (match.group(1), match.group(2)))
        lines.pop()
    if len(options) >= 2:
        if lines and MEDTHINK_HEADER.match(lines[-1]):
            lines.pop()
        return "\n".join(lines).strip(), options, "lines"
    parts = MEDTHINK_INLINE_OPTION.split(text)
    if len(parts) >= 5 and parts[1] == "A":
        options = [(parts[i], parts[i + 1].strip()) for i in range(1, len(parts), 2)]
        stem = re.sub(r"\s*Answer Choices:\s*$", "", parts[0].rstrip(), flags=re.I)
        return stem.strip(), options, "inline"
    return text, [], "none"


def medthink(source: Path) -> Iterator[dict[str, Any]]:
    """The MedThink-Bench questions with lettered options A, B, C… and a lettered answer among them."""
    for item in json.loads((source / "medthink_bench" / "QA_data.json").read_text(encoding="utf-8")):
        stem, options, layout = split_medthink_options(item["question"])
        letters = [letter for letter, _ in options]
        answer = MEDTHINK_ANSWER.match(item["answer"])
        if len(options) < 2 or letters != [chr(ord("A") + i) for i in range(len(letters))]:
            continue
        if answer is None or answer.group(1) not in letters:
            continue
        yield {
            "index": item["Index"],
            "qa_type": item["QA_Type"],
            "question": stem,
            "options": dict(options),
            "layout": layout,
            "answer": answer.group(1),
            "answer_text": item["answer"],
            "scoring_points": item["Scoring_Points"],
        }


DDI_TYPES = ("advise", "effect", "int", "mechanism")


def ddi_span(offset: str) -> list[int]:
    """``[start, end)`` covering a DDI ``charOffset``: ``"12-20"`` or ``"12-15;30-35"``, ends inclusive."""
    bounds = [int(number) for part in offset.split(";") for number in part.split("-")]
    return [min(bounds), max(bounds) + 1]


def ddi_pairs(source: Path, split: str = "Test") -> Iterator[dict[str, Any]]:
    """Every candidate drug pair of the DDI-2013 relation-extraction split, in file order.

    Pairs with ``ddi="false"`` get ``relation: null`` (no interaction stated). Entity
    spans index the sentence text, so repeated drug names stay unambiguous.
    """
    with zipfile.ZipFile(source / "ddi_corpus" / "DDICorpus-2013.zip") as archive:
        prefix = f"DDICorpus/{split}/" + ("Test for DDI Extraction task/" if split == "Test" else "")
        names = sorted(n for n in archive.namelist() if n.startswith(prefix) and n.endswith(".xml"))
        for name in names:
            root = ElementTree.fromstring(archive.read(name))
            for sentence in root.iter("sentence"):
                entities = {
                    entity.get("id"): {
                        "text": entity.get("text"),
                        "type": entity.get("type"),
                        "span": ddi_span(entity.get("charOffset", "")),
                    }
                    for entity in sentence.iter("entity")
                }
                for pair in sentence.iter("pair"):
                    first, second = entities[pair.get("e1")], entities[pair.get("e2")]
                    kind = pair.get("type") if pair.get("ddi") == "true" else None
                    if kind is not None and kind not in DDI_TYPES:
                        raise ValueError(f"{name}: pair {pair.get('id')} has unknown type {kind!r}")
                    yield {
                        "id": pair.get("id"),
                        "document": root.get("id"),
                        "source": name.split("/")[-2],
                        "sentence": sentence.get("text"),
                        "subject": first["text"],
                        "subject_type": first["type"],
                        "subject_span": first["span"],
                        "object": second["text"],
                        "object_type": second["type"],
                        "object_span": second["span"],
                        "relation": kind,
                    }


def build(source: Path, out: Path) -> dict[str, int]:
    """Write every shipped file under ``out``; return the record count of each."""
    out.mkdir(parents=True, exist_ok=True)
    counts = {"pubmedqa.jsonl.gz": write_records(out / "pubmedqa.jsonl.gz", pubmedqa(source))}
    for dataset in MIRAGE_DATASETS:
        name = f"mirage_{dataset}.jsonl.gz"
        counts[name] = write_records(out / name, mirage(source, dataset))
    for language in CAREMEDEVAL_FILES:
        name = f"caremedeval_{language}.jsonl.gz"
        counts[name] = write_records(out / name, caremedeval_questions(source, language))
    counts["caremedeval_articles.jsonl.gz"] = write_records(
        out / "caremedeval_articles.jsonl.gz", caremedeval_articles(source)
    )
    counts["medthink.jsonl.gz"] = write_records(out / "medthink.jsonl.gz", medthink(source))
    counts["ddi2013_test.jsonl.gz"] = write_records(out / "ddi2013_test.jsonl.gz", ddi_pairs(source))
    return counts


def main() -> None:
    """Parse arguments and build."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="the shared data folder")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where the shipped files go")
    args = parser.parse_args()
    for name, count in build(args.source, args.out).items():
        size = (args.out / name).stat().st_size
        print(f"{name}: {count} records, {size / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
