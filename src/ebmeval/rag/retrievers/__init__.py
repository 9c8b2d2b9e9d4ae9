"""Retrievers: the :class:`Retriever` protocol, BM25, dense and hybrid retrievers, their options, and registry."""

from ._base import (
    IndexedRetriever,
    IndexMismatchError,
    Retriever,
    RetrieverOptions,
    SavedIndex,
    get_retriever,
    index_text,
    ranked_results,
    retriever,
    retrievers,
    setting,
)
from ._batching import BatchingRetriever
from ._bm25 import BM25Method, BM25Options, BM25Retriever
from ._dense import (
    BUNDLED_ENCODER_ID,
    DenseOptions,
    DenseRetriever,
    Encoder,
    EncoderInfo,
    IndexType,
    Pooling,
    bundled_encoder_path,
    model_fingerprint,
)
from ._dense_disk import SHARDS_FILE, Shards, write_shard
from ._hybrid import HybridOptions, HybridRetriever, multi_query_retrieve

__all__ = [
    "write_shard",
    "Shards",
    "SHARDS_FILE",
    "BUNDLED_ENCODER_ID",
    "BM25Method",
    "BatchingRetriever",
    "BM25Options",
    "BM25Retriever",
    "DenseOptions",
    "DenseRetriever",
    "Encoder",
    "EncoderInfo",
    "HybridOptions",
    "HybridRetriever",
    "IndexMismatchError",
    "IndexType",
    "Pooling",
    "IndexedRetriever",
    "Retriever",
    "RetrieverOptions",
    "SavedIndex",
    "bundled_encoder_path",
    "get_retriever",
    "index_text",
    "model_fingerprint",
    "multi_query_retrieve",
    "ranked_results",
    "retriever",
    "retrievers",
    "setting",
]
