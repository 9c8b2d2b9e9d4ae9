"""Building, saving and loading on-disk indexes, and searching them."""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from ... import __version__
from ..._util.errors import ConfigError, DataError
from ...tasks import Document, RetrievedDocument
from ..corpus import CORPUS_FILE, DOCUMENTS_FILE, OFFSETS_FILE, DocumentStore, corpus_fingerprint, write_store
from ..retrievers import Encoder, IndexedRetriever, IndexMismatchError, Retriever, get_retriever, retrievers
from ._manifest import FORMAT_VERSION, MANIFEST_FILE, ArrayInfo, IndexManifest

_LIBRARIES = ("bm25s", "PyStemmer", "faiss-cpu", "sentence-transformers", "torch", "numpy")


def _versions() -> dict[str, str]:
    found: dict[str, str] = {}
    for name in _LIBRARIES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def _as_documents(corpus: Sequence[Document] | str | Path) -> Sequence[Document]:
    return DocumentStore(corpus) if isinstance(corpus, str | Path) else corpus


def _check_unique(documents: Sequence[Document], where: Path) -> None:
    first: dict[str, int] = {}
    for position, document in enumerate(documents):
        earlier = first.setdefault(document.id, position)
        if earlier != position:
            raise DataError(
                where,
                f"document id '{document.id}' occurs at positions {earlier} and {position}; an index needs "
                "unique ids (ingest() drops duplicates)",
            )


def build_index(
    corpus: Sequence[Document] | str | Path,
    output: str | Path,
    retriever: str = "bm25",
    *,
    overwrite: bool = False,
    **options: Any,
) -> IndexManifest:
    """Index ``corpus`` (documents, or a corpus folder from :func:`ingest`) with ``retriever`` into ``output``.

    The folder gets the documents (``documents.jsonl`` + offsets), the retriever's arrays
    (``.npy``) and, written last, ``manifest.json`` with the corpus fingerprint, encoder
    identity, parameters and versions. ``options`` go to the retriever's ``build``
    (e.g. ``k1=1.2`` for ``bm25``, ``index="hnsw"`` for ``dense/minilm``).
    Raises :class:`ConfigError` when ``output`` already holds an index and not ``overwrite``.
    """
    folder = Path(output)
    if folder.exists() and any(folder.iterdir()):
        if not (folder / MANIFEST_FILE).exists():
            raise ConfigError("output", f"{folder} exists and is not an index folder; choose an empty folder")
        if not overwrite:
            raise ConfigError("output", f"{folder} already holds an index; pass overwrite=True to replace it")
        shutil.rmtree(folder)
    documents = _as_documents(corpus)
    _check_unique(documents, Path(corpus) if isinstance(corpus, str | Path) else folder)
    built = get_retriever(retriever, documents, **options)
    folder.mkdir(parents=True, exist_ok=True)
    if isinstance(documents, DocumentStore):
        for name in (DOCUMENTS_FILE, OFFSETS_FILE, CORPUS_FILE):
            shutil.copyfile(documents.path / name, folder / name)
        fingerprint = documents.fingerprint
    else:
        store = write_store(documents, folder)
        fingerprint = store.fingerprint
        store.close()
    built.save(folder)
    arrays = {}
    for file in sorted(folder.rglob("*.npy")):
        array = np.load(file, mmap_mode="r")
        arrays[file.relative_to(folder).as_posix()] = ArrayInfo(shape=array.shape, dtype=str(array.dtype))
    manifest = IndexManifest(
        retriever=retriever,
        params=built.params(),
        corpus=fingerprint,
        encoders=built.encoders(),
        arrays=arrays,
        ebmeval_version=__version__,
        libraries=_versions(),
        created=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    (folder / MANIFEST_FILE).write_text(manifest.model_dump_json(indent=2), encoding="utf-8")
    return manifest


def read_manifest(path: str | Path) -> IndexManifest:
    """The manifest of the index folder ``path``."""
    file = Path(path) / MANIFEST_FILE
    if not file.exists():
        raise DataError(Path(path), f"not an index folder (no {MANIFEST_FILE}); build one with build_index()")
    try:
        raw = json.loads(file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataError(file, f"invalid JSON ({exc.msg})", line=exc.lineno) from None
    version = raw.get("format_version") if isinstance(raw, dict) else None
    if version != FORMAT_VERSION:
        raise IndexMismatchError(
            file, f"index format version {version}, but this ebmeval reads version {FORMAT_VERSION}; rebuild the index"
        )
    try:
        return IndexManifest.model_validate(raw)
    except ValidationError as exc:
        raise DataError(file, f"invalid manifest: {exc}") from None


def load_index(
    path: str | Path,
    *,
    corpus: Sequence[Document] | str | Path | None = None,
    encoder: Encoder | str | Path | None = None,
) -> IndexedRetriever:
    """Open the index at ``path``; arrays and documents are memory-mapped.

    Loading is refused (:class:`IndexMismatchError`, saying why) when the format version
    is not this one's; when the stored documents or arrays differ from what the manifest
    records; when ``corpus`` is given and its fingerprint differs from the one the index
    was built from; or when the encoder (``encoder``, else the recorded model) is not the
    model the index was built with.
    """
    folder = Path(path)
    manifest = read_manifest(folder)
    documents = DocumentStore(folder)
    if documents.fingerprint != manifest.corpus:
        raise IndexMismatchError(
            folder / DOCUMENTS_FILE, "the stored documents differ from those the index was built from; rebuild it"
        )
    if corpus is not None:
        given = corpus_fingerprint(_as_documents(corpus))
        if given != manifest.corpus:
            raise IndexMismatchError(
                folder / MANIFEST_FILE,
                f"the index was built from a corpus of {manifest.corpus.n_documents} documents with hash "
                f"{manifest.corpus.hash[:12]}, but the corpus given has {given.n_documents} documents with hash "
                f"{given.hash[:12]}; rebuild the index for this corpus",
            )
    for name, info in manifest.arrays.items():
        file = folder / name
        if not file.exists():
            raise IndexMismatchError(file, "array listed in the manifest is missing; rebuild the index")
        array = np.load(file, mmap_mode="r")
        if array.shape != info.shape or str(array.dtype) != info.dtype:
            raise IndexMismatchError(
                file,
                f"array is {array.dtype}{list(array.shape)}, the manifest records {info.dtype}{list(info.shape)}; "
                "rebuild the index",
            )
    model = Encoder(encoder) if isinstance(encoder, str | Path) else encoder
    return retrievers.get(manifest.retriever).load(folder, documents, manifest.params, encoder=model)


def search(index: Retriever | str | Path, query: str, k: int = 10) -> list[RetrievedDocument]:
    """The top ``k`` documents for ``query``, best first.

    ``index`` is a retriever or the folder of an index built with :func:`build_index`
    (for many queries, load it once and call ``retrieve``).
    """
    found = load_index(index) if isinstance(index, str | Path) else index
    return found.retrieve([query], k)[0]
