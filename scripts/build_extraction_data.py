"""Build the shipped relation-extraction data (DDI-2013, ChemProt) from the project's data folder.

Writes to ``src/ebmeval/builtin_tasks/data/``:

- ``extraction_ddi.jsonl.gz``: the DDI-2013 test split of the DDI extraction task (DrugBank and
  MedLine), one record per sentence with at least one candidate drug pair:
  ``{id, document, source, text, entities: [{id, text, type, offset}], triplets: [[drug1, type, drug2]],
  pairs}`` (``pairs`` = candidate pairs, positive or not). Entity texts are as annotated;
  ``triplets`` keeps the positive pairs (``ddi="true"``) with their type.
- ``extraction_chemprot.jsonl.gz``: the SciBERT ChemProt test file grouped by sentence: every line
  marks one related pair (``<< … >>`` then ``[[ … ]]``, in text order) and its label; lines whose
  unmarked text is equal make one record ``{id, text, entities, triplets: [[first, LABEL, second]]}``.
  Lines with more than one pair of markers (the marks overlap) are left out and counted.

Output is deterministic (file order, fixed gzip mtime). Usage::

    python scripts/build_extraction_data.py [--data ../shared/data] [--out src/ebmeval/builtin_tasks/data]
"""

from __future__ import annotations

import argparse
import json
import re
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from ebmeval.builtin_tasks._data import write_records

DDI_TEST = "DDICorpus/Test/Test for DDI Extraction task/"
MARKED = re.compile(r"<< (.+?) >>|\[\[ (.+?) \]\]")


def ddi_records(archive: Path) -> list[dict[str, Any]]:
    """One record per test sentence that has a candidate pair, sorted by file name then sentence order."""
    records = []
    with zipfile.ZipFile(archive) as zipped:
        names = sorted(n for n in zipped.namelist() if n.startswith(DDI_TEST) and n.endswith(".xml"))
        for name in names:
            root = ElementTree.fromstring(zipped.read(name))
            for sentence in root.iter("sentence"):
                pairs = sentence.findall("pair")
                if not pairs:
                    continue
                entities = {
                    e.get("id", ""): {
                        "id": e.get("id", ""),
                        "text": e.get("text", ""),
                        "type": e.get("type", ""),
                        "offset": e.get("charOffset", ""),
                    }
                    for e in sentence.findall("entity")
                }
                triplets = [
                    [entities[p.get("e1", "")]["text"], p.get("type", ""), entities[p.get("e2", "")]["text"]]
                    for p in pairs
                    if p.get("ddi") == "true"
                ]
                records.append(
                    {
                        "id": sentence.get("id", ""),
                        "document": root.get("id", ""),
                        "source": name.split("/")[-2],
                        "text": " ".join(sentence.get("text", "").split()),
                        "entities": list(entities.values()),
                        "triplets": triplets,
                        "pairs": len(pairs),
                    }
                )
    return records


def chemprot_records(path: Path) -> tuple[list[dict[str, Any]], int]:
    """Sentence records in order of first appearance, and the count of lines left out."""
    by_text: dict[str, dict[str, Any]] = {}
    skipped = 0
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            marked = row["text"]
            found = MARKED.findall(marked)
            if len(found) != 2 or marked.count("<<") != 1 or marked.count("[[") != 1:
                skipped += 1
                continue
            first, second = (a or b for a, b in found)
            text = " ".join(MARKED.sub(lambda m: m.group(1) or m.group(2), marked).split())
            record = by_text.setdefault(
                text, {"id": f"chemprot-test-{len(by_text):04d}", "text": text, "entities": [], "triplets": []}
            )
            for entity in (first, second):
                if entity not in record["entities"]:
                    record["entities"].append(entity)
            triplet = [first, row["label"], second]
            if triplet not in record["triplets"]:
                record["triplets"].append(triplet)
    return list(by_text.values()), skipped


def main() -> None:
    """Build both files and print their counts."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--out", type=Path, default=Path("src/ebmeval/builtin_tasks/data"))
    args = parser.parse_args()
    ddi = ddi_records(args.data / "ddi_corpus/DDICorpus-2013.zip")
    n = write_records(args.out / "extraction_ddi.jsonl.gz", ddi)
    types = Counter(t[1] for r in ddi for t in r["triplets"])
    positive = sum(1 for r in ddi if r["triplets"])
    print(f"ddi: {n} sentences ({positive} with a relation), {sum(r['pairs'] for r in ddi)} pairs, {dict(types)}")
    chemprot, skipped = chemprot_records(args.data / "chemprot_scibert/test.jsonl")
    n = write_records(args.out / "extraction_chemprot.jsonl.gz", chemprot)
    labels = Counter(t[1] for r in chemprot for t in r["triplets"])
    print(f"chemprot: {n} sentences, {sum(labels.values())} triplets, {skipped} lines left out, {dict(labels)}")


if __name__ == "__main__":
    main()
