"""Building, saving and loading on-disk indexes, and searching them."""

from __future__ import annotations

import hashlib
import json
import shutil
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import ValidationError

from ... import __version__
from ..._util.errors import ConfigError, DataError
from ..._util.hashing import stable_hash
from ...store import package_versions
from ...tasks import Document, RetrievedDocument
from ..corpus import (
    CORPUS_FILE,
    DOCUMENTS_FILE,
    CorpusFingerprint,
    DocumentStore,
    Fingerprinter,
    corpus_fingerprint,
    write_store,
)
from ..retrievers import (
    SHARDS_FILE,
    DenseOptions,
    Encoder,
    IndexedRetriever,
    IndexMismatchError,
    Retriever,
    RetrieverOptions,
    retrievers,
)
from ._manifest import FORMAT_VERSION, MANIFEST_FILE, ArrayInfo, CorpusFiles, IndexManifest

_LIBRARIES = ("bm25s", "PyStemmer", "faiss-cpu", "sentence-transformers", "torch", "numpy")


def _as_documents(corpus: Sequence[Document] | str | Path) -> Sequence[Document]:
    return DocumentStore(corpus) if isinstance(corpus, str | Path) else corpus


def _id_key(identifier: str) -> int:
    return int.from_bytes(hashlib.blake2b(identifier.encode("utf-8"), digest_size=8).digest(), "little", signed=True)


class _CheckedCorpus(DocumentStore):
    """A corpus store that, while a retriever streams it, hashes its content and records its ids.

    :meth:`finish` completes the pass if the retriever did not iterate (it indexed by
    position), then refuses a corpus whose content differs from its recorded fingerprint or
    whose ids repeat. Memory: 8 bytes per document.
    """

    def __init__(self, path: str | Path) -> None:
        super().__init__(path)
        self._keys = array("q")
        self._hasher = Fingerprinter()
        self._complete = False

    def __iter__(self) -> Iterator[Document]:
        if self._complete:
            yield from super().__iter__()
            return
        self._keys, self._hasher = array("q"), Fingerprinter()
        for document in super().__iter__():
            self._keys.append(_id_key(document.id))
            self._hasher.add(document)
            yield document
        self._complete = True

    def finish(self) -> None:
        if not self._complete:
            for _ in self:
                pass
        if self._hasher.result() != self.fingerprint:
            raise IndexMismatchError(
                self.path / DOCUMENTS_FILE,
                f"the documents differ from the fingerprint in {CORPUS_FILE} (edited after it was written?); "
                "ingest the corpus again",
            )
        keys = np.sort(np.frombuffer(self._keys, dtype=np.int64))
        if len(keys) and bool((keys[1:] == keys[:-1]).any()):
            self._duplicate()

    def _duplicate(self) -> None:
        first: dict[str, int] = {}
        for position, document in enumerate(super().__iter__()):
            earlier = first.setdefault(document.id, position)
            if earlier != position:
                raise DataError(
                    self.path,
                    f"document id '{document.id}' occurs at positions {earlier} and {position}; an index needs "
                    "unique ids (ingest() drops duplicates)",
                )


def _on_ray(
    corpus: Sequence[Document] | str | Path, options: RetrieverOptions, address: str | None, workers: int | None
) -> DenseOptions:
    """``options`` whose shards a pool of encoder actors on Ray encodes."""
    if not isinstance(options, DenseOptions):
        raise ConfigError("engine", "the ray engine encodes dense indexes; bm25 builds in one stream on one machine")
    if not isinstance(corpus, str | Path):
        raise ConfigError("corpus", "the ray engine reads a corpus folder (from `ebmeval corpus ingest`), not a list")
    from ._ray import ray_shard_encoder

    encode = ray_shard_encoder(
        Path(corpus).resolve(),
        model=options.model,
        batch_size=options.batch_size,
        document_prefix=options.document_prefix,
        address=address,
        workers=workers,
        pooling=options.pooling,
    )
    return replace(options, encode=encode)


def _unfinished(folder: Path) -> bool:
    """Whether ``folder`` holds an interrupted build that can continue (embedding shards, no manifest)."""
    return not (folder / MANIFEST_FILE).exists() and any(folder.rglob(SHARDS_FILE))


def _files(store: DocumentStore) -> CorpusFiles:
    stat = (store.path / DOCUMENTS_FILE).stat()
    return CorpusFiles(size=stat.st_size, mtime_ns=stat.st_mtime_ns)


def _clear_output(folder: Path, corpus: Sequence[Document] | str | Path, overwrite: bool) -> None:
    """Refuse an output ``folder`` that is the corpus folder or holds something else; remove an index it replaces.

    A folder holding an interrupted build is kept, for the build to continue.
    """
    if isinstance(corpus, str | Path) and folder.resolve() == Path(corpus).resolve():
        raise ConfigError("output", f"{folder} is the corpus folder; write the index to another folder")
    if folder.exists() and any(folder.iterdir()) and not _unfinished(folder):
        if not (folder / MANIFEST_FILE).exists():
            raise ConfigError("output", f"{folder} exists and is not an index folder; choose an empty folder")
        if not overwrite:
            raise ConfigError("output", f"{folder} already holds an index; pass overwrite=True to replace it")
        shutil.rmtree(folder)


def _with_engine(
    engine: str,
    options: RetrieverOptions,
    corpus: Sequence[Document] | str | Path,
    ray_address: str | None,
    ray_workers: int | None,
) -> RetrieverOptions:
    """``options`` for building with ``engine``: as given for ``local``, with an encoder pool for ``ray``."""
    if engine == "ray":
        return _on_ray(corpus, options, ray_address, ray_workers)
    if engine != "local":
        raise ConfigError("engine", f"unknown engine {engine!r}; choose 'local' or 'ray'")
    return options


def _checked_store(corpus: Sequence[Document] | str | Path, folder: Path) -> tuple[_CheckedCorpus, str]:
    """``corpus`` as a store checked while it streams, and its path for the manifest.

    A corpus folder is named by absolute path; documents are written into the index ``folder`` (``"."``).
    """
    if isinstance(corpus, str | Path):
        store = _CheckedCorpus(corpus)
        return store, str(store.path.resolve())
    write_store(corpus, folder).close()
    return _CheckedCorpus(folder), "."


def _build_checked(
    corpus: Sequence[Document] | str | Path,
    folder: Path,
    cls: type[IndexedRetriever[Any]],
    options: RetrieverOptions,
    progress: Callable[[int, int], None] | None,
) -> tuple[IndexedRetriever[Any], _CheckedCorpus, str]:
    """Build ``cls`` over ``corpus`` into ``folder``; returns it, the checked corpus store and its manifest path.

    A failed build removes ``folder``, unless it holds finished embedding shards (kept for the next attempt).
    """
    try:
        store, corpus_path = _checked_store(corpus, folder)
        built = cls.build_on_disk(store, folder, options, progress=progress)
        store.finish()
    except BaseException:
        if not _unfinished(folder):
            shutil.rmtree(folder, ignore_errors=True)
        raise
    return built, store, corpus_path


def _array_infos(folder: Path) -> dict[str, ArrayInfo]:
    """Shape and dtype of every ``.npy`` file under ``folder``, by relative path."""
    arrays = {}
    for file in sorted(folder.rglob("*.npy")):
        array = np.load(file, mmap_mode="r")
        arrays[file.relative_to(folder).as_posix()] = ArrayInfo(shape=array.shape, dtype=str(array.dtype))
    return arrays


def _manifest(
    retriever: str, built: IndexedRetriever[Any], store: DocumentStore, corpus_path: str, folder: Path
) -> IndexManifest:
    """The manifest of ``built``, the ``retriever`` index just written into ``folder`` from ``store``."""
    return IndexManifest(
        retriever=retriever,
        params=built.params(),
        corpus=store.fingerprint,
        corpus_path=corpus_path,
        corpus_files=_files(store),
        encoders=built.encoders(),
        arrays=_array_infos(folder),
        report=built.report(),
        disk_bytes=sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()),
        ebmeval_version=__version__,
        libraries=package_versions(_LIBRARIES),
        created=datetime.now(UTC).isoformat(timespec="seconds"),
    )


def build_index(
    corpus: Sequence[Document] | str | Path,
    output: str | Path,
    retriever: str = "bm25",
    *,
    overwrite: bool = False,
    engine: Literal["local", "ray"] = "local",
    ray_address: str | None = None,
    ray_workers: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    **options: Any,
) -> IndexManifest:
    """Index ``corpus`` (documents, or a corpus folder from :func:`ingest`) with ``retriever`` into ``output``.

    A corpus folder is not copied: the manifest names it by absolute path and content
    hash. Documents given as a sequence are written into ``output`` (their only copy on
    disk). The folder gets the retriever's arrays (``.npy``) and, written last,
    ``manifest.json`` with the corpus fingerprint and path, encoder identity, parameters,
    build report and versions. ``options`` go to the retriever (e.g. ``k1=1.2`` for
    ``bm25``, ``index="ivfpq"`` for ``dense/minilm``). Raises :class:`ConfigError` when
    ``output`` already holds an index and not ``overwrite``, and :class:`DataError` for
    repeated ids or a corpus whose documents no longer match its recorded fingerprint.

    ``engine="ray"`` (dense retrievers over a corpus folder) encodes the shards with a pool
    of ``ray_workers`` encoder actors on the Ray cluster at ``ray_address`` (default: a local
    Ray runtime); the index is the same as the local build's. ``progress(done, total)`` is told
    of the documents encoded by retrievers that encode (dense, and hybrid's dense component).
    """
    folder = Path(output)
    _clear_output(folder, corpus, overwrite)
    cls = retrievers.get(retriever)
    settings = _with_engine(engine, cls.options_type().read(retriever, options), corpus, ray_address, ray_workers)
    folder.mkdir(parents=True, exist_ok=True)
    built, store, corpus_path = _build_checked(corpus, folder, cls, settings, progress)
    manifest = _manifest(retriever, built, store, corpus_path, folder)
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


def _mismatch(manifest: IndexManifest, given: CorpusFingerprint, where: Path) -> IndexMismatchError:
    return IndexMismatchError(
        where,
        f"the index was built from a corpus of {manifest.corpus.n_documents} documents with hash "
        f"{manifest.corpus.hash[:12]}, but the corpus given has {given.n_documents} documents with hash "
        f"{given.hash[:12]}; rebuild the index for this corpus",
    )


def _open_corpus(folder: Path, manifest: IndexManifest, path: Path | None) -> DocumentStore:
    """The corpus store of an index, refused unless its content hash is the recorded one.

    The recorded fingerprint in ``corpus.json`` is compared first; when the documents
    file's size or modification time differ from build time, the documents are hashed again.
    """
    location = path if path is not None else folder / manifest.corpus_path
    if not (location / CORPUS_FILE).exists():
        raise IndexMismatchError(
            folder / MANIFEST_FILE,
            f"the index's corpus folder {location} is gone or is not a corpus folder; pass corpus= with its "
            "new location",
        )
    store = DocumentStore(location)
    if store.fingerprint != manifest.corpus:
        raise _mismatch(manifest, store.fingerprint, location / CORPUS_FILE)
    if _files(store) != manifest.corpus_files:
        hashed = corpus_fingerprint(iter(store))
        if hashed != manifest.corpus:
            raise IndexMismatchError(
                location / DOCUMENTS_FILE,
                f"the documents changed since the index was built (hash {hashed.hash[:12]}, the index records "
                f"{manifest.corpus.hash[:12]}); rebuild the index or restore the corpus",
            )
    return store


def load_index(
    path: str | Path,
    *,
    corpus: Sequence[Document] | str | Path | None = None,
    encoder: Encoder | str | Path | None = None,
) -> IndexedRetriever[Any]:
    """Open the index at ``path``; arrays and documents are memory-mapped.

    The documents are read from the corpus folder the manifest names (or ``corpus``: a
    moved corpus folder, or the documents themselves). Loading is refused
    (:class:`IndexMismatchError`, saying why) when the format version is not this one's;
    when the corpus' content hash differs from the one the index was built from; when a
    stored array differs from what the manifest records; or when the encoder (``encoder``,
    else the recorded model) is not the model the index was built with.
    """
    folder = Path(path)
    manifest = read_manifest(folder)
    documents: Sequence[Document]
    if corpus is None or isinstance(corpus, str | Path):
        documents = _open_corpus(folder, manifest, None if corpus is None else Path(corpus))
    else:
        given = corpus_fingerprint(corpus)
        if given != manifest.corpus:
            raise _mismatch(manifest, given, folder / MANIFEST_FILE)
        documents = corpus
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


def _identity_params(value: Any) -> Any:
    """Parameters without machine-specific paths: an encoder is named by id, fingerprint and dimension."""
    if isinstance(value, dict):
        if isinstance(value.get("encoder"), dict):
            encoder = value["encoder"]
            rest = {k: v for k, v in value.items() if k not in ("encoder", "model")}
            return {**_identity_params(rest), "encoder": {k: encoder[k] for k in ("id", "fingerprint", "dim")}}
        return {k: _identity_params(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_identity_params(v) for v in value]
    return value


def index_identity(path: str | Path) -> dict[str, Any]:
    """What a result computed over the index at ``path`` depends on, for a run's identity.

    ``{"retriever", "params", "corpus_hash", "n_documents", "format_version", "hash"}``:
    parameters without local paths (encoders by fingerprint), the corpus' content hash, and
    ``hash`` = sha256 of the canonical JSON of the other fields. Two indexes with equal
    identity return the same results; moving the corpus or index folder keeps it.
    """
    manifest = read_manifest(path)
    identity: dict[str, Any] = {
        "retriever": manifest.retriever,
        "params": _identity_params(manifest.params),
        "corpus_hash": manifest.corpus.hash,
        "n_documents": manifest.corpus.n_documents,
        "format_version": manifest.format_version,
    }
    return {**identity, "hash": stable_hash(identity)}


def search(index: Retriever | str | Path, query: str, k: int = 10) -> list[RetrievedDocument]:
    """The top ``k`` documents for ``query``, best first.

    ``index`` is a retriever or the folder of an index built with :func:`build_index`
    (for many queries, load it once and call ``retrieve``).
    """
    found = load_index(index) if isinstance(index, str | Path) else index
    return found.retrieve([query], k)[0]
