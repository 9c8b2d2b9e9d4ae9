"""Loaders for the medical corpora the project uses, each reading the format it was published in.

The files are not shipped with the package (their licences differ and several state
none): every loader takes the path of the file or folder, laid out as in the
upstream releases. :func:`builtin_corpus` resolves a name against a data root that
follows the layout of the project's data folder (``pubmed_abstracts/``,
``evidence_inference/``, ``pubmedqa/``, ``medquad/``, ``mirage/rawdata/bioasq/``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Literal

from ..._util.errors import DataError
from ..._util.registry import Registry
from ...tasks import Document, read_jsonl
from ._chunk import Chunking
from ._ingest import CorpusStats, Duplicate, DuplicateFilter, ProgressFn, ingest_streams
from ._readers import parse_year


def deduplicate(documents: Iterable[Document], report: list[Duplicate] | None = None) -> Iterator[Document]:
    """``documents`` without repeated ids or repeated texts (first wins); what was dropped goes to ``report``."""
    seen = DuplicateFilter()
    for document in documents:
        found = seen.check(document)
        if found is None:
            yield document
        elif report is not None:
            report.append(Duplicate(id=document.id, of=found[1], kind=found[0], source=""))


def _labelled(sections: Iterable[tuple[str | None, str]]) -> str:
    return "\n\n".join(f"{label.upper()}: {text}" if label else text for label, text in sections if text.strip())


def _load_json(path: Path) -> Any:
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except json.JSONDecodeError as exc:
        raise DataError(path, f"invalid JSON ({exc.msg}, column {exc.colno})", line=exc.lineno) from None


def _jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    return read_jsonl(path)


def pubmed_abstracts(folder: str | Path) -> Iterator[Document]:
    """PubMed abstracts from ``specialties.jsonl`` and ``misc.jsonl`` under ``folder``.

    ``specialties.jsonl`` has ``pmid, specialty, title, abstract`` (title-only records are
    skipped); ``misc.jsonl`` has ``id`` (the PMID) and ``text``.
    """
    root = Path(folder)
    for _, record in _jsonl(root / "specialties.jsonl"):
        abstract = (record.get("abstract") or "").strip()
        if abstract:
            yield Document(
                id=str(record["pmid"]),
                text=abstract,
                title=record.get("title") or None,
                metadata={"pmid": str(record["pmid"]), "specialty": record.get("specialty"), "corpus": "pubmed"},
            )
    for _, record in _jsonl(root / "misc.jsonl"):
        text = (record.get("text") or "").strip()
        if text:
            yield Document(id=str(record["id"]), text=text, metadata={"pmid": str(record["id"]), "corpus": "pubmed"})


def evidence_inference_abstracts(path: str | Path) -> Iterator[Document]:
    """RCT abstracts of Evidence Inference 2.0 (``pmcid, title, abstract_sections[{label, text}]``).

    Empty abstracts are skipped; section labels are kept as ``"LABEL: text"`` paragraphs.
    """
    for _, record in _jsonl(Path(path)):
        sections = [(s.get("label"), s.get("text") or "") for s in record.get("abstract_sections") or []]
        text = _labelled(sections) or (record.get("abstract") or "").strip()
        if text:
            yield Document(
                id=record["pmcid"],
                text=text,
                title=record.get("title") or None,
                metadata={"pmcid": record["pmcid"], "corpus": "evidence-inference"},
            )


def pubmedqa_contexts(path: str | Path) -> Iterator[Document]:
    """The abstracts of a PubMedQA file, one document per PMID.

    ``path`` is ``ori_pqal.json`` or ``test_set.json`` (``{pmid: {QUESTION, CONTEXTS, LABELS,
    YEAR, …}}``); the text is the ``CONTEXTS`` with their ``LABELS``. The question and
    answer are not part of the document.
    """
    source = Path(path)
    records = _load_json(source)
    for pmid, record in records.items():
        labels = record.get("LABELS") or [None] * len(record["CONTEXTS"])
        yield Document(
            id=str(pmid),
            text=_labelled(zip(labels, record["CONTEXTS"], strict=False)),
            metadata={"pmid": str(pmid), "year": parse_year(record.get("YEAR")), "corpus": "pubmedqa"},
        )


def medquad_answers(path: str | Path) -> Iterator[Document]:
    """Consumer-health answer passages of MedQuAD (``medquad_qa.jsonl``).

    Records without an answer (the MedlinePlus subsets) are skipped. The id is
    ``"<collection>/<qid>"`` and the title is the question's focus.
    """
    for _, record in _jsonl(Path(path)):
        answer = (record.get("answer") or "").strip()
        if not answer:
            continue
        yield Document(
            id=f"{record['collection']}/{record['qid']}",
            text=answer,
            title=record.get("focus") or None,
            metadata={
                "question": record.get("question"),
                "qtype": record.get("qtype"),
                "url": record.get("url"),
                "corpus": "medquad",
            },
        )


def bioasq_snippet_id(snippet: dict[str, Any]) -> str:
    """Stable id of a BioASQ snippet: ``"<PMID>:<sha1 of the text, 10 hex>"``."""
    pmid = str(snippet["document"]).rstrip("/").rsplit("/", 1)[-1]
    digest = hashlib.sha1(snippet["text"].strip().encode("utf-8")).hexdigest()[:10]
    return f"{pmid}:{digest}"


def bioasq_files(folder: str | Path) -> list[Path]:
    """The ``*_golden.json`` files under ``folder`` (BioASQ Task B gold sets), sorted."""
    files = sorted(Path(folder).glob("**/*_golden.json"))
    if not files:
        raise DataError(folder, "no BioASQ '*_golden.json' files found")
    return files


def bioasq_snippets(folder: str | Path) -> Iterator[Document]:
    """The gold snippets of BioASQ Task B, each distinct (PMID, text) once.

    Files follow ``{"questions": [{snippets: [{text, document, beginSection …}]}]}``; ids
    come from :func:`bioasq_snippet_id`.
    """
    seen: set[str] = set()
    for file in bioasq_files(folder):
        for question in _load_json(file)["questions"]:
            for snippet in question.get("snippets") or []:
                snippet_id = bioasq_snippet_id(snippet)
                if snippet_id in seen or not snippet["text"].strip():
                    continue
                seen.add(snippet_id)
                yield Document(
                    id=snippet_id,
                    text=snippet["text"].strip(),
                    metadata={
                        "pmid": snippet_id.split(":")[0],
                        "section": snippet.get("beginSection"),
                        "corpus": "bioasq",
                    },
                )


CorpusLoader = Callable[[Path], Iterator[Document]]

corpora: Registry[tuple[str, CorpusLoader]] = Registry("corpus")
"""Built-in corpora by name: (path relative to the data root, loader)."""

corpora.register("pubmed-abstracts")(("pubmed_abstracts", pubmed_abstracts))
corpora.register("evidence-inference")(("evidence_inference/abstracts.jsonl", evidence_inference_abstracts))
corpora.register("pubmedqa-contexts")(("pubmedqa/ori_pqal.json", pubmedqa_contexts))
corpora.register("medquad")(("medquad/medquad_qa.jsonl", medquad_answers))
corpora.register("bioasq-snippets")(("mirage/rawdata/bioasq", bioasq_snippets))


def builtin_corpus(name: str, data_root: str | Path) -> Iterator[Document]:
    """Stream the built-in corpus ``name`` from ``data_root`` (raises ``UnknownNameError`` for a bad name)."""
    relative, loader = corpora.get(name)
    path = Path(data_root) / relative
    if not path.exists():
        raise DataError(path, f"corpus '{name}' expects this file or folder under the data root")
    return loader(path)


def ingest_builtin(
    name: str,
    data_root: str | Path,
    output: str | Path,
    *,
    chunking: Chunking | None = None,
    duplicate_texts: Literal["drop", "keep"] = "drop",
    progress: ProgressFn | None = None,
) -> CorpusStats:
    """The built-in corpus ``name`` written as :func:`~ebmeval.rag.corpus.ingest` writes files.

    Repeated ids are dropped (the first wins: MedQuAD and the PubMed abstracts repeat some),
    repeated texts unless ``duplicate_texts="keep"``, and documents are chunked by ``chunking``;
    everything is counted in the returned stats and listed in ``duplicates.jsonl``.
    """
    return ingest_streams(
        [(f"builtin:{name}", lambda _errors: builtin_corpus(name, data_root))],
        output,
        chunking=chunking,
        duplicate_texts=duplicate_texts,
        on_error="raise",
        progress=progress,
        info={"builtin": name},
    )
