"""Build the shipped data of the factuality judge-validation tasks.

Reads ``../shared/data`` (or ``--source``) and writes, deterministically (sorted keys, fixed gzip
mtime, records in source order):

* ``factuality_m3_claims.jsonl.gz``: M3 claim-level (level3) records, one per review claim, with the
  direction and modality labels of the review claim and of each evidence sentence;
* ``factuality_m3_reviews.jsonl.gz``: M3 sentence-level (level2) records grouped by review: the
  review's conclusion (its sentences in order) and the deduplicated evidence sentences of its trials;
* ``factuality_evidence_inference.jsonl.gz``: Evidence Inference 2.0 prompts of the ev2 test split whose
  annotators all gave the same valid label and whose evidence span occurs in the shipped abstract.

Usage: ``python scripts/build_factuality_data.py [--source ../shared/data]``.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from ebmeval.builtin_tasks._data import write_records

OUT = Path(__file__).resolve().parents[1] / "src" / "ebmeval" / "builtin_tasks" / "data"

# Evidence Inference spells one label two ways.
EI_LABELS = {
    "significantly increased": "significantly increased",
    "significantly increase": "significantly increased",
    "significantly decreased": "significantly decreased",
    "no significant difference": "no significant difference",
}


def write(name: str, records: list[dict[str, Any]]) -> None:
    """Write ``records`` to the shipped file ``name`` (byte-identical on rebuilds)."""
    write_records(OUT / name, records)
    print(f"{name}: {len(records)} records")


def m3_claims(source: Path) -> list[dict[str, Any]]:
    """M3 level3 claims with their labels and evidence sentences."""
    records = []
    with (source / "m3" / "level3.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            records.append(
                {
                    "id": row["docid"],
                    "pico": row["pico"],
                    "target_text": row["target_text"],
                    "target_direction": row["target_direction"],
                    "target_modality": row["target_modality"],
                    "sources": [
                        {
                            "pmid": str(study["source_pmid"]),
                            "text": study["source_text"],
                            "direction": study["source_direction"],
                            "modality": study["source_modality"],
                        }
                        for study in row["input_studies"]
                    ],
                }
            )
    return records


def m3_reviews(source: Path) -> list[dict[str, Any]]:
    """M3 level2 sentences grouped into one record per review, reviews in order of first appearance."""
    reviews: dict[str, dict[str, Any]] = {}
    with (source / "m3" / "level2.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            review, _, index = row["docid"].rpartition("_")
            record = reviews.setdefault(review, {"id": review, "sentences": [], "evidence": []})
            record["sentences"].append((int(index), row["target_text"].strip()))
            for study in row["input_studies"]:
                evidence = {"pmid": str(study["source_pmid"]), "text": study["source_text"].strip()}
                if evidence not in record["evidence"]:
                    record["evidence"].append(evidence)
    out = []
    for record in reviews.values():
        sentences = [text for _, text in sorted(record["sentences"])]
        out.append({"id": record["id"], "conclusion": " ".join(sentences), "evidence": record["evidence"]})
    return out


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def evidence_inference(source: Path) -> list[dict[str, Any]]:
    """Unanimously labelled ev2-test prompts answerable from the abstract."""
    root = source / "evidence_inference"
    test_ids = {line.strip() for line in (root / "splits" / "ev2_test_article_ids.txt").read_text().split() if line}
    abstracts = {}
    with (root / "abstracts.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            abstracts[row["pmcid"].removeprefix("PMC")] = row
    prompts = {}
    with (root / "prompts_merged.csv").open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            prompts[row["PromptID"]] = row
    labels: dict[str, set[str]] = defaultdict(set)
    spans: dict[str, list[str]] = defaultdict(list)
    with (root / "v2_annotations.csv").open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            if row["PMCID"] not in test_ids or row["Valid Label"] != "True":
                continue
            labels[row["PromptID"]].add(EI_LABELS[row["Label"]])
            spans[row["PromptID"]].append(row["Annotations"])
    records = []
    for prompt_id in sorted(labels, key=int):
        prompt = prompts.get(prompt_id)
        if len(labels[prompt_id]) != 1 or prompt is None:
            continue
        article = abstracts.get(prompt["PMCID"])
        if article is None or not article["abstract"].strip():
            continue
        abstract = _squash(article["abstract"])
        if not any(span.strip() and _squash(span) in abstract for span in spans[prompt_id]):
            continue
        records.append(
            {
                "id": prompt_id,
                "pmcid": prompt["PMCID"],
                "title": article["title"],
                "abstract": article["abstract"],
                "intervention": prompt["Intervention"].strip(),
                "comparator": prompt["Comparator"].strip(),
                "outcome": prompt["Outcome"].strip(),
                "label": labels[prompt_id].pop(),
            }
        )
    return records


def main() -> None:
    """Build the three files."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    write("factuality_m3_claims.jsonl.gz", m3_claims(args.source))
    write("factuality_m3_reviews.jsonl.gz", m3_reviews(args.source))
    write("factuality_evidence_inference.jsonl.gz", evidence_inference(args.source))


if __name__ == "__main__":
    main()
