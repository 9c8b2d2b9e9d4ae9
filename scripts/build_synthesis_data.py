"""Build the shipped conclusion-synthesis data from the project's data folder.

Writes to ``src/ebmeval/builtin_tasks/data/``:

- ``synthesis_m3.jsonl.gz``: M3 level-2 reviews (titles from level-3 PICO), item schema;
- ``synthesis_ms2.jsonl.gz``: the MS² sample review, item schema;
- ``synthesis_medmeta.jsonl.gz``: MedMeta meta-analyses with abstracts joined by PMID from the
  local PubMed abstract sources (specialties, misc, PubMedQA); missing PMIDs are listed per item;
- ``synthesis_noise.jsonl.gz``: the MS² review's general references with abstracts
  (``{id, title, text}``), retrieval distractors.

Output is deterministic (sorted ids, fixed gzip mtime). Usage::

    python scripts/build_synthesis_data.py [--data ../shared/data] [--out src/ebmeval/builtin_tasks/data]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ebmeval.builtin_tasks._data import write_records
from ebmeval.synthesis import JoinReport, SynthesisItem, load_m3, load_medmeta, load_ms2
from ebmeval.tasks import Document


def items(records: list[SynthesisItem]) -> list[dict[str, Any]]:
    """Items as JSON records, sorted by id."""
    return [item.model_dump(exclude_defaults=True) for item in sorted(records, key=lambda i: i.id)]


def abstracts(data: Path) -> dict[str, Document]:
    """PMID → abstract from every local PubMed abstract source (specialties first, then misc, PubMedQA)."""
    found: dict[str, Document] = {}
    with open(data / "pubmed_abstracts/specialties.jsonl", encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            if record.get("abstract"):
                found[str(record["pmid"])] = Document(
                    id=str(record["pmid"]), text=record["abstract"], title=record["title"]
                )
    with open(data / "pubmed_abstracts/misc.jsonl", encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            found.setdefault(str(record["id"]), Document(id=str(record["id"]), text=record["text"]))
    for pmid, record in json.loads((data / "pubmedqa/ori_pqal.json").read_text(encoding="utf-8")).items():
        found.setdefault(pmid, Document(id=pmid, text=" ".join(record["CONTEXTS"]), title=record["QUESTION"]))
    return found


def main() -> None:
    """Build the four files and print what each holds."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--out", type=Path, default=Path("src/ebmeval/builtin_tasks/data"))
    args = parser.parse_args()
    data, out = args.data, args.out
    m3 = load_m3(data / "m3/level2.jsonl", data / "m3/level3.jsonl")
    print(f"m3: {write_records(out / 'synthesis_m3.jsonl.gz', items(m3))} reviews")
    ms2, distractors = load_ms2(data / "ms2_sample/sample.json")
    n_ms2 = write_records(out / "synthesis_ms2.jsonl.gz", items(ms2))
    print(f"ms2: {n_ms2} reviews, {sum(len(i.studies) for i in ms2)} studies")
    noise = [{"id": d.id, "title": d.title, "text": d.text} for d in sorted(distractors, key=lambda d: d.id)]
    print(f"noise: {write_records(out / 'synthesis_noise.jsonl.gz', noise)} general references")
    report = JoinReport()
    medmeta = load_medmeta(data / "medmeta/MedMeta.csv", abstracts(data), report)
    print(
        f"medmeta: {write_records(out / 'synthesis_medmeta.jsonl.gz', items(medmeta))} reviews; "
        f"{report.joined} of {report.pmids} primary-study PMIDs joined an abstract"
    )


if __name__ == "__main__":
    main()
