"""Ingesting sources into an on-disk corpus, with duplicate detection and an error report."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any, Literal, TextIO

from pydantic import BaseModel, Field

from ..._util.errors import DataError
from ...tasks import Document
from ._chunk import Chunking, chunk_document
from ._readers import FieldMap, Format, read_documents
from ._store import CorpusFingerprint, write_store

MAX_REPORTED = 100
"""Duplicates listed in :class:`CorpusStats`; all of them go to ``duplicates.jsonl``."""


class Source(BaseModel):
    """One input of :func:`ingest`: a file or folder, its format and field mapping."""

    path: Path
    """File (``.jsonl``, ``.csv``, ``.xml``, each optionally ``.gz``) or folder of ``.txt`` files."""
    format: Format | None = None
    """Detected from the name when omitted."""
    fields: FieldMap | None = None
    """Field mapping for JSONL/CSV (default: ``id``, ``text``, ``title``)."""


class IngestIssue(BaseModel):
    """A record that could not be read, with where it is."""

    path: str
    line: int | None
    message: str


class Duplicate(BaseModel):
    """A document left out (or kept, for ``duplicate_texts="keep"``) because an earlier one matches it."""

    id: str
    """The later document."""
    of: str
    """The earlier document it duplicates."""
    kind: Literal["id", "text"]
    """Same id, or same text (case and whitespace ignored) under another id."""
    source: str
    """File the later document came from."""


class SourceStats(BaseModel):
    """Counts for one source."""

    path: str
    read: int = 0
    """Documents read successfully."""
    errors: int = 0
    """Records that could not be read."""


class CorpusStats(BaseModel):
    """What :func:`ingest` did."""

    path: str
    """The corpus folder written."""
    sources: list[SourceStats]
    documents_read: int
    """Documents read from all sources."""
    documents_kept: int
    """After dropping duplicates."""
    chunks: int
    """Entries written (equal to ``documents_kept`` without chunking)."""
    duplicate_ids: int
    duplicate_texts: int
    duplicates: list[Duplicate] = Field(default_factory=list)
    """The first duplicates found (all are in ``duplicates.jsonl``)."""
    errors: list[IngestIssue] = Field(default_factory=list)
    """Every record that could not be read."""
    characters: int
    """Total characters of the entries written."""
    chunking: Chunking | None
    fingerprint: CorpusFingerprint
    seconds: float


class DuplicateFilter:
    """Detects documents whose id, or whose normalised text, was seen before.

    Holds one 64-bit hash per distinct id and one per distinct text (mapped to the first
    id), so its memory grows with the number of distinct documents (about 150 bytes each)
    while everything else in ingestion stays flat.
    """

    def __init__(self) -> None:
        self._ids: set[int] = set()
        self._texts: dict[int, str] = {}

    @staticmethod
    def _key(value: str) -> int:
        return int.from_bytes(hashlib.blake2b(value.encode("utf-8"), digest_size=8).digest(), "little")

    def check(self, document: Document) -> tuple[Literal["id", "text"], str] | None:
        """``(kind, earlier id)`` when ``document`` duplicates an earlier one, else ``None`` (and remember it)."""
        id_key = self._key(document.id)
        if id_key in self._ids:
            return "id", document.id
        text_key = self._key(" ".join(document.text.lower().split()))
        earlier = self._texts.get(text_key)
        self._ids.add(id_key)
        if earlier is not None:
            return "text", earlier
        self._texts[text_key] = document.id
        return None


ProgressFn = Callable[[int], None]
"""Called with the number of documents read so far."""


DocumentStream = Callable[[list[DataError] | None], Iterable[Document]]
"""Opens one source's documents; unreadable records go to the list given (``None``: raise)."""


def ingest(
    sources: Sequence[str | Path | Source],
    output: str | Path,
    *,
    chunking: Chunking | None = None,
    duplicate_texts: Literal["drop", "keep"] = "drop",
    on_error: Literal["report", "raise"] = "report",
    progress: ProgressFn | None = None,
) -> CorpusStats:
    """Read ``sources`` (streamed), drop duplicates, chunk, and write a corpus folder at ``output``.

    A document whose id was already seen is always dropped (the first wins); one whose
    text matches an earlier document's is dropped unless ``duplicate_texts="keep"``.
    Both are counted and listed in ``duplicates.jsonl``. Unreadable records are listed in
    ``CorpusStats.errors`` with file and line (``on_error="report"``), or stop the
    ingest with a :class:`DataError` (``on_error="raise"``).
    """
    specs = [s if isinstance(s, Source) else Source(path=Path(s)) for s in sources]
    streams: list[tuple[str, DocumentStream]] = [(str(spec.path), partial(_read_source, spec)) for spec in specs]
    return ingest_streams(
        streams, output, chunking=chunking, duplicate_texts=duplicate_texts, on_error=on_error, progress=progress
    )


def _read_source(spec: Source, errors: list[DataError] | None) -> Iterable[Document]:
    return read_documents(spec.path, format=spec.format, fields=spec.fields, errors=errors)


def ingest_streams(
    streams: Sequence[tuple[str, DocumentStream]],
    output: str | Path,
    *,
    chunking: Chunking | None = None,
    duplicate_texts: Literal["drop", "keep"] = "drop",
    on_error: Literal["report", "raise"] = "report",
    progress: ProgressFn | None = None,
    info: dict[str, Any] | None = None,
) -> CorpusStats:
    """:func:`ingest` over named document streams (files, a built-in corpus …); ``info`` joins ``corpus.json``."""
    started = time.perf_counter()
    folder = Path(output)
    folder.mkdir(parents=True, exist_ok=True)
    names = [name for name, _ in streams]
    with open(folder / "duplicates.jsonl", "w", encoding="utf-8") as duplicates:
        ingest_pass = _IngestPass(names, duplicates, chunking, duplicate_texts, progress)
        entries = ingest_pass.entries(streams, on_error)
        store = write_store(entries, folder, info={"sources": names, **(info or {})})
    stats = ingest_pass.stats(folder, store.fingerprint, seconds=round(time.perf_counter() - started, 3))
    store.close()
    _record_stats(folder, stats)
    return stats


class _IngestPass:
    """One ingest's pass over its streams: drops duplicates, chunks, and counts what it read and wrote."""

    def __init__(
        self,
        names: list[str],
        duplicates: TextIO,
        chunking: Chunking | None,
        duplicate_texts: Literal["drop", "keep"],
        progress: ProgressFn | None,
    ) -> None:
        self._per_source = [SourceStats(path=name) for name in names]
        self._issues: list[IngestIssue] = []
        self._examples: list[Duplicate] = []
        self._counts = {"read": 0, "kept": 0, "chunks": 0, "chars": 0, "id": 0, "text": 0}
        self._dedupe = DuplicateFilter()
        self._duplicates = duplicates
        self._chunking = chunking
        self._duplicate_texts = duplicate_texts
        self._progress = progress

    def entries(
        self, streams: Sequence[tuple[str, DocumentStream]], on_error: Literal["report", "raise"]
    ) -> Iterator[Document]:
        """The entries to write (streamed): each kept document, chunked; unreadable records reported per source."""
        for (name, stream), stats in zip(streams, self._per_source, strict=True):
            errors: list[DataError] | None = [] if on_error == "report" else None
            for document in stream(errors):
                self._count_read(stats)
                if self._kept(document, name):
                    yield from self._chunks(document)
            _collect(errors, stats, self._issues)

    def _count_read(self, stats: SourceStats) -> None:
        """One more document read from the source of ``stats``."""
        stats.read += 1
        self._counts["read"] += 1
        if self._progress is not None:
            self._progress(self._counts["read"])

    def _kept(self, document: Document, source: str) -> bool:
        """Whether ``document`` is kept; a duplicate is counted and listed either way."""
        found = self._dedupe.check(document)
        if found is not None:
            kind, earlier = found
            self._counts[kind] += 1
            duplicate = Duplicate(id=document.id, of=earlier, kind=kind, source=source)
            self._duplicates.write(duplicate.model_dump_json() + "\n")
            if len(self._examples) < MAX_REPORTED:
                self._examples.append(duplicate)
            if kind == "id" or self._duplicate_texts == "drop":
                return False
        self._counts["kept"] += 1
        return True

    def _chunks(self, document: Document) -> Iterator[Document]:
        for entry in chunk_document(document, self._chunking) if self._chunking else [document]:
            self._counts["chunks"] += 1
            self._counts["chars"] += len(entry.text)
            yield entry

    def stats(self, folder: Path, fingerprint: CorpusFingerprint, seconds: float) -> CorpusStats:
        """What the pass did, once the store at ``folder`` is written."""
        counts = self._counts
        return CorpusStats(
            path=str(folder),
            sources=self._per_source,
            documents_read=counts["read"],
            documents_kept=counts["kept"],
            chunks=counts["chunks"],
            duplicate_ids=counts["id"],
            duplicate_texts=counts["text"],
            duplicates=self._examples,
            errors=self._issues,
            characters=counts["chars"],
            chunking=self._chunking,
            fingerprint=fingerprint,
            seconds=seconds,
        )


def _record_stats(folder: Path, stats: CorpusStats) -> None:
    """Add ``stats`` (without the duplicate and error lists) to the folder's ``corpus.json``."""
    written = json.loads((folder / "corpus.json").read_text(encoding="utf-8"))
    written["stats"] = stats.model_dump(mode="json", exclude={"duplicates", "errors"})
    (folder / "corpus.json").write_text(json.dumps(written, indent=2), encoding="utf-8")


def _collect(errors: list[DataError] | None, stats: SourceStats, issues: list[IngestIssue]) -> None:
    """Move errors gathered so far by a reader into the report."""
    if not errors:
        return
    for error in errors:
        issues.append(IngestIssue(path=error.path, line=error.line, message=str(error)))
    stats.errors += len(errors)
    errors.clear()


def iter_chunks(documents: Iterable[Document], chunking: Chunking) -> Iterator[Document]:
    """Chunks of every document in ``documents``, in order (streamed)."""
    for document in documents:
        yield from chunk_document(document, chunking)
