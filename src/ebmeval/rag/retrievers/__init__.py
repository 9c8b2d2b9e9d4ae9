"""Retrievers: the :class:`Retriever` protocol, BM25, dense and hybrid retrievers, and their registry."""

from ._base import (
    IndexedRetriever,
    IndexMismatchError,
    Retriever,
    check_options,
    get_retriever,
    index_text,
    ranked_results,
    retriever,
    retrievers,
)
from ._batching import BatchingRetriever
from ._bm25 import BM25Method, BM25Retriever
from ._dense import (
    BUNDLED_ENCODER_ID,
    DenseRetriever,
    Encoder,
    EncoderInfo,
    IndexType,
    Pooling,
    bundled_encoder_path,
    model_fingerprint,
)
from ._dense_disk import SHARDS_FILE, Shards, write_shard
from ._hybrid import HybridRetriever, multi_query_retrieve

__all__ = [
    "write_shard",
    "Shards",
    "SHARDS_FILE",
    "BUNDLED_ENCODER_ID",
    "BM25Method",
    "BatchingRetriever",
    "BM25Retriever",
    "DenseRetriever",
    "Encoder",
    "EncoderInfo",
    "HybridRetriever",
    "IndexMismatchError",
    "IndexType",
    "Pooling",
    "IndexedRetriever",
    "Retriever",
    "bundled_encoder_path",
    "check_options",
    "get_retriever",
    "index_text",
    "model_fingerprint",
    "multi_query_retrieve",
    "ranked_results",
    "retriever",
    "retrievers",
]
