"""The on-disk corpus: documents as JSON Lines plus an offsets array, read memory-mapped."""

from __future__ import annotations

import hashlib
import json
import mmap
from array import array
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, overload

import numpy as np
from pydantic import BaseModel, ConfigDict

from ..._util.errors import DataError
from ..._util.hashing import canonical_json
from ...tasks import Document

DOCUMENTS_FILE = "documents.jsonl"
OFFSETS_FILE = "documents.offsets.npy"
CORPUS_FILE = "corpus.json"


class CorpusFingerprint(BaseModel):
    """What identifies the content of a corpus, recorded in every index built from it."""

    model_config = ConfigDict(frozen=True)

    hash: str
    """sha256 over ``canonical_json([id, title, text]) + "\\n"`` of every document, in order."""
    n_documents: int
    """Number of documents."""


class Fingerprinter:
    """Incremental :class:`CorpusFingerprint` of a stream of documents."""

    def __init__(self) -> None:
        self._sha = hashlib.sha256()
        self.count = 0

    def add(self, document: Document) -> None:
        self._sha.update(canonical_json([document.id, document.title, document.text]).encode("utf-8"))
        self._sha.update(b"\n")
        self.count += 1

    def result(self) -> CorpusFingerprint:
        return CorpusFingerprint(hash=self._sha.hexdigest(), n_documents=self.count)


def corpus_fingerprint(documents: Iterable[Document]) -> CorpusFingerprint:
    """The fingerprint of ``documents``; a :class:`DocumentStore` returns its recorded one without reading."""
    if isinstance(documents, DocumentStore):
        return documents.fingerprint
    hasher = Fingerprinter()
    for document in documents:
        hasher.add(document)
    return hasher.result()


class DocumentStore(Sequence[Document]):
    """A read-only corpus on disk: ``documents.jsonl``, its line offsets (``.npy``) and ``corpus.json``.

    Indexing reads one line through a memory map, so opening a store of any size
    costs almost no memory; iteration streams the file.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        manifest = self.path / CORPUS_FILE
        if not manifest.exists():
            raise DataError(self.path, f"not a corpus folder (no {CORPUS_FILE})")
        info = json.loads(manifest.read_text(encoding="utf-8"))
        self.fingerprint = CorpusFingerprint.model_validate(info["fingerprint"])
        self.info: dict[str, Any] = info
        self._offsets = np.load(self.path / OFFSETS_FILE, mmap_mode="r")
        if len(self._offsets) != self.fingerprint.n_documents + 1:
            raise DataError(
                self.path / OFFSETS_FILE,
                f"has {len(self._offsets) - 1} entries but {CORPUS_FILE} records "
                f"{self.fingerprint.n_documents} documents; the folder is damaged",
            )
        self._file = open(self.path / DOCUMENTS_FILE, "rb")
        size = int(self._offsets[-1])
        self._map = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ) if size else None

    def __len__(self) -> int:
        return self.fingerprint.n_documents

    @overload
    def __getitem__(self, index: int) -> Document: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Document]: ...

    def __getitem__(self, index: int | slice) -> Document | Sequence[Document]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        n = len(self)
        if index < 0:
            index += n
        if not 0 <= index < n or self._map is None:
            raise IndexError(f"document {index} out of range (corpus has {n})")
        start, end = int(self._offsets[index]), int(self._offsets[index + 1])
        return _decode(self._map[start:end])

    def __iter__(self) -> Iterator[Document]:
        with open(self.path / DOCUMENTS_FILE, "rb") as handle:
            for line in handle:
                yield _decode(line)

    def close(self) -> None:
        """Release the memory map and file handle."""
        if self._map is not None:
            self._map.close()
        self._file.close()


def _decode(line: bytes) -> Document:
    # pydantic's JSON parser is faster than json.loads followed by model_construct
    return Document.model_validate_json(line)


def write_store(documents: Iterable[Document], path: str | Path, info: dict[str, Any] | None = None) -> DocumentStore:
    """Write ``documents`` (streamed) as a :class:`DocumentStore` at ``path`` and open it.

    ``info`` is stored in ``corpus.json`` beside the fingerprint (ingest statistics, sources).
    """
    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    hasher = Fingerprinter()
    offsets = array("q", [0])
    with open(folder / DOCUMENTS_FILE, "wb") as handle:
        for document in documents:
            hasher.add(document)
            line = json.dumps(
                {"id": document.id, "title": document.title, "text": document.text, "metadata": document.metadata},
                ensure_ascii=False,
                default=str,
            ).encode("utf-8")
            handle.write(line + b"\n")
            offsets.append(offsets[-1] + len(line) + 1)
    np.save(folder / OFFSETS_FILE, np.frombuffer(offsets, dtype=np.int64))
    manifest = {"fingerprint": hasher.result().model_dump(), **(info or {})}
    (folder / CORPUS_FILE).write_text(json.dumps(manifest, indent=2, default=str), encoding="utf-8")
    return DocumentStore(folder)


def load_corpus(path: str | Path) -> DocumentStore:
    """Open a corpus folder written by :func:`ingest` or :func:`write_store`."""
    return DocumentStore(path)
