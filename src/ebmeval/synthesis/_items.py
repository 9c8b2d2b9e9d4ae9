"""The synthesis item schema and its loaders (plain JSONL, MedMeta CSV, M3, MS²).

A synthesis item is a systematic review reduced to what conclusion synthesis needs: the
review's title, optionally its background, the reference conclusion written by its
authors, and the primary studies it included. :func:`to_sample` maps it onto
:class:`~ebmeval.tasks.Sample` (input = title, target = reference conclusion,
documents = studies, metadata = background and provenance).
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .._util.errors import DataError
from ..tasks import Document, Sample, read_jsonl


class Study(BaseModel):
    """A primary study included in a review."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1)
    """PMID or other stable identifier."""
    title: str = ""
    """Title of the study, when known."""
    abstract: str = Field(min_length=1)
    """Abstract (or the evidence sentences taken from it)."""


class SynthesisItem(BaseModel):
    """One review: what a model sees and the conclusion it is compared with."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1)
    title: str = Field(min_length=1)
    background: str | None = None
    reference_conclusion: str = Field(min_length=1)
    studies: list[Study] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Provenance (source, review PMID, PMIDs whose abstracts are missing …)."""


def to_sample(item: SynthesisItem) -> Sample:
    """The :class:`Sample` of ``item``; background and item metadata go to ``sample.metadata``."""
    return Sample(
        id=item.id,
        input=item.title,
        target=item.reference_conclusion,
        documents=[Document(id=s.id, text=s.abstract, title=s.title or None) for s in item.studies],
        metadata={**item.metadata, "background": item.background},
    )


def load_jsonl(path: str | Path) -> list[SynthesisItem]:
    """Items from a JSONL file of the item schema, one object per line (blank lines skipped).

    Raises ``DataError`` naming ``file:line`` (and the field) for invalid JSON or a record
    that does not match the schema, and for a repeated id.
    """
    source = Path(path)
    items: list[SynthesisItem] = []
    seen: set[str] = set()
    for number, record in read_jsonl(source):
        try:
            item = SynthesisItem.model_validate(record)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise DataError(source, first["msg"], line=number, field=where or None) from None
        if item.id in seen:
            raise DataError(source, "duplicate id", line=number, field="id", value=item.id)
        seen.add(item.id)
        items.append(item)
    return items


def write_jsonl(items: Iterable[SynthesisItem], path: str | Path) -> int:
    """Write ``items`` as JSONL (the format :func:`load_jsonl` reads); returns how many."""
    count = 0
    with open(path, "w", encoding="utf-8") as handle:
        for item in items:
            handle.write(item.model_dump_json(exclude_defaults=True) + "\n")
            count += 1
    return count


@dataclass
class JoinReport:
    """How many primary-study PMIDs of a MedMeta file found an abstract in the corpus."""

    reviews: int = 0
    pmids: int = 0
    joined: int = 0
    missing: dict[str, list[str]] = field(default_factory=dict)
    """Review id → PMIDs without an abstract."""


_PMID = re.compile(r"\d+")

KNOWN_ISSUES = {
    "medmeta-2": "the conclusion (tenecteplase thrombolysis in ischaemic stroke) does not match the title "
    "(anticoagulation in heart failure)",
}
"""Upstream MedMeta rows whose content is inconsistent in a way no rule detects, by item id."""


def medmeta_issues(item_id: str, listed: list[str], declared: int | None) -> str | None:
    """What is inconsistent in a MedMeta row: a PMID listed twice, a PMID count unlike its ``Number of refs``.

    Returned as one sentence for ``metadata["data_issue"]`` (summaries name such items), else None.
    """
    found = [KNOWN_ISSUES[item_id]] if item_id in KNOWN_ISSUES else []
    repeated = sorted({p for p in listed if listed.count(p) > 1})
    if repeated:
        found.append(f"PMID {', '.join(repeated)} listed twice in References")
    if declared is not None and declared != len(listed):
        found.append(f"References lists {len(listed)} PMIDs for {declared} references (Number of refs)")
    return "; ".join(found) or None


def _medmeta_fields(row: dict[str, str], source: Path, line: int) -> dict[str, Any]:
    """Year, date, URL and declared reference count of a MedMeta row, where its CSV has them."""
    fields: dict[str, Any] = {}
    date = (row.get("Date") or "").strip()
    if date:
        year = re.search(r"\b(19|20)\d{2}\b", date)
        if year is None:
            raise DataError(source, "no year in the date", line=line, field="Date", value=date)
        fields |= {"date": date, "year": int(year.group(0))}
    if (row.get("URL") or "").strip():
        fields["url"] = row["URL"].strip()
    refs = (row.get("Number of refs") or "").strip()
    if refs:
        if not refs.isdigit():
            raise DataError(source, "not a whole number", line=line, field="Number of refs", value=refs)
        fields["reference_count"] = int(refs)
    for key in ("Specialty", "specialty"):
        if (row.get(key) or "").strip():
            fields["specialty"] = row[key].strip()
    return fields


def load_medmeta(
    path: str | Path, abstracts: Mapping[str, Document], report: JoinReport | None = None
) -> list[SynthesisItem]:
    """MedMeta meta-analyses with their primary studies joined by PMID from ``abstracts``.

    The CSV columns used are ``Number``, ``Meta Analysis Name``, ``PMID``, ``Conclusion`` and
    ``References`` (PMIDs separated by commas and/or spaces), and where present ``Date`` (metadata
    ``date`` and ``year``), ``URL``, ``Number of refs`` (``reference_count``) and ``Specialty``, so
    runs can be broken down with ``--by year``. A row that repeats a PMID, lists another number of
    PMIDs than ``Number of refs``, or is in :data:`KNOWN_ISSUES` gets ``metadata["data_issue"]``.
    PMIDs without an abstract in ``abstracts`` are left out of ``studies`` and listed in
    ``metadata["missing_pmids"]`` and in ``report``.
    """
    source = Path(path)
    report = report if report is not None else JoinReport()
    items = []
    try:
        handle = open(source, encoding="utf-8", newline="")
    except OSError as exc:
        raise DataError(source, f"cannot read ({exc.strerror})") from None
    with handle:
        reader = csv.DictReader(handle)
        needed = ("Number", "Meta Analysis Name", "Conclusion", "References")
        for column in needed:
            if column not in (reader.fieldnames or []):
                raise DataError(source, "missing column", line=1, field=column)
        for number, row in enumerate(reader, start=2):
            title, conclusion = row["Meta Analysis Name"].strip(), row["Conclusion"].strip()
            if not title or not conclusion:
                raise DataError(source, "empty title or conclusion", line=number)
            listed = _PMID.findall(row["References"])
            pmids = list(dict.fromkeys(listed))
            studies = [
                Study(id=p, title=abstracts[p].title or "", abstract=abstracts[p].text) for p in pmids if p in abstracts
            ]
            missing = [p for p in pmids if p not in abstracts]
            item_id = f"medmeta-{row['Number'].strip()}"
            extra = _medmeta_fields(row, source, number)
            issue = medmeta_issues(item_id, listed, extra.get("reference_count"))
            report.reviews += 1
            report.pmids += len(pmids)
            report.joined += len(studies)
            if missing:
                report.missing[item_id] = missing
            items.append(
                SynthesisItem(
                    id=item_id,
                    title=title,
                    reference_conclusion=conclusion,
                    studies=studies,
                    metadata={
                        "source": "medmeta",
                        "review_pmid": (row.get("PMID") or "").strip(),
                        "study_pmids": pmids,
                        "missing_pmids": missing,
                        **extra,
                        **({"data_issue": issue} if issue else {}),
                    },
                )
            )
    return items


def _jsonl_records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    return read_jsonl(path)


def _m3_title(pico: Mapping[str, str]) -> str:
    """A review question built from a claim's PICO: ``I versus C for O in P`` (empty parts left out)."""
    text = pico.get("i", "").strip() or "the intervention"
    if pico.get("c", "").strip():
        text += f" versus {pico['c'].strip()}"
    if pico.get("o", "").strip():
        text += f" for {pico['o'].strip().rstrip(':.')}"
    if pico.get("p", "").strip():
        text += f" in {pico['p'].strip()}"
    return text[0].upper() + text[1:]


def load_m3(level2: str | Path, level3: str | Path | None = None) -> list[SynthesisItem]:
    """M3 reviews from ``level2.jsonl``, one item per review (conclusion sentences grouped by docid).

    The reference conclusion joins the review's conclusion sentences in index order. Each study
    is one source PMID with its evidence sentences joined in order (M3 ships evidence
    sentences, not whole abstracts). M3 has no review titles: with ``level3`` the title is the
    review question built from the PICO of its first claim (``I versus C for O in P``), and
    reviews without a claim there are left out; without it the title is ``Review PMID <id>``.
    """
    path = Path(level2)
    picos: dict[str, dict[str, str]] = {}
    if level3 is not None:
        for _, record in _jsonl_records(Path(level3)):
            review = str(record.get("docid", "")).split("_")[0]
            pico = record.get("pico")
            if isinstance(pico, dict):
                picos.setdefault(review, {k: str(v) for k, v in pico.items()})
    sentences: dict[str, list[tuple[int, str]]] = {}
    evidence: dict[str, dict[str, list[str]]] = {}
    for number, record in _jsonl_records(path):
        for key in ("docid", "target_text", "input_studies"):
            if key not in record:
                raise DataError(path, "missing field", line=number, field=key)
        review, _, index = str(record["docid"]).rpartition("_")
        if not review or not index.isdigit():
            raise DataError(path, "docid must be <review pmid>_<sentence index>", line=number, value=record["docid"])
        sentences.setdefault(review, []).append((int(index), record["target_text"].strip()))
        studies = evidence.setdefault(review, {})
        for study in record["input_studies"]:
            texts = studies.setdefault(str(study["source_pmid"]), [])
            if study["source_text"] not in texts:
                texts.append(study["source_text"])
    items = []
    for review, parts in sentences.items():
        if level3 is not None and review not in picos:
            continue
        title = _m3_title(picos[review]) if level3 is not None else f"Review PMID {review}"
        items.append(
            SynthesisItem(
                id=f"m3-{review}",
                title=title,
                reference_conclusion=" ".join(text for _, text in sorted(parts)),
                studies=[Study(id=pmid, abstract=" ".join(texts)) for pmid, texts in evidence[review].items()],
                metadata={"source": "m3", "review_pmid": review, "title_from": "pico" if level3 else "pmid"},
            )
        )
    return items


_HEADING = re.compile(r"^[A-Z][A-Z ]*[A-Z]\s+(?=[A-Z][a-z])")
"""An abstract's section heading at the start of a sentence (``CONCLUSIONS This review …``)."""
_TAG = re.compile(r"</?(?:int|out|pop)>\s?")


def _untag(text: str) -> str:
    """MS² text without its ``<int>``/``<out>``/``<pop>`` PICO tags and tokenizer spaces before punctuation."""
    plain = _TAG.sub("", text)
    return re.sub(r"\s+([,.;:)\]%])", r"\1", re.sub(r"([(\[])\s+", r"\1", plain)).strip()


def load_ms2(path: str | Path) -> tuple[list[SynthesisItem], list[Document]]:
    """Reviews in the MS² record format (one JSON object, a list of them, or JSONL).

    The reference conclusion is the structured abstract's ``EFFECT`` sentences (the
    authors' conclusions), the background its ``BACKGROUND`` sentences, both without section
    headings; the studies are the
    included studies with an abstract. Also returns the review's general references that have
    an abstract, which serve as topical distractors for retrieval.
    """
    source = Path(path)
    text = source.read_text(encoding="utf-8")
    try:
        data = json.loads(text)
        records = data if isinstance(data, list) else [data]
    except json.JSONDecodeError:
        records = [record for _, record in _jsonl_records(source)]
    items, distractors = [], []
    for position, record in enumerate(records, start=1):
        for key in ("docid", "title", "structured_abstract", "included_studies"):
            if key not in record:
                raise DataError(source, f"record {position}: missing field", field=key)
        sections: dict[str, list[str]] = {}
        for label, sentence, *_ in record["structured_abstract"]:
            sections.setdefault(label, []).append(_HEADING.sub("", _untag(sentence)))
        conclusion = " ".join(sections.get("EFFECT", []))
        if not conclusion:
            raise DataError(source, f"record {position}: no EFFECT (conclusion) sentences", field="structured_abstract")
        studies = []
        for included in record["included_studies"]:
            for reference in included.get("references", []):
                if reference.get("abstract") and reference.get("pmid"):
                    studies.append(
                        Study(
                            id=str(reference["pmid"]),
                            title=reference.get("title") or "",
                            abstract=_untag(reference["abstract"]),
                        )
                    )
        gold = {s.id for s in studies}
        for reference in record.get("general_references", []):
            if reference.get("abstract") and reference.get("pmid") and str(reference["pmid"]) not in gold:
                distractors.append(
                    Document(
                        id=str(reference["pmid"]), text=_untag(reference["abstract"]), title=reference.get("title")
                    )
                )
        items.append(
            SynthesisItem(
                id=f"ms2-{record['docid']}",
                title=_untag(record["title"]).rstrip("."),
                background=" ".join(sections.get("BACKGROUND", [])) or None,
                reference_conclusion=conclusion,
                studies=list({s.id: s for s in studies}.values()),
                metadata={"source": "ms2", "review_pmid": str(record.get("pmid") or record["docid"])},
            )
        )
    return items, distractors
