"""Medical retrieval-augmented generation: corpora, retrievers, fusion, rerankers, indexes and evaluation.

Typical use::

    from ebmeval.rag import ingest, build_index, load_index, search

    ingest(["pubmed24n0001.xml.gz"], "corpora/pubmed")
    build_index("corpora/pubmed", "indexes/pubmed-bm25", "bm25")
    hits = search("indexes/pubmed-bm25", "statins for primary prevention", k=5)

Heavy dependencies (bm25s, faiss, sentence-transformers) load only when used; a
missing one names the extra to install: ``pip install 'ebmeval[rag]'``.
"""

from ..tasks import Document, RetrievedDocument
from .corpus import (
    Chunking,
    CorpusFingerprint,
    CorpusStats,
    DocumentStore,
    FieldMap,
    NoiseCorpus,
    Source,
    builtin_corpus,
    chunk_document,
    corpus_fingerprint,
    ingest,
    ingest_builtin,
    load_corpus,
    noise_corpus,
    read_documents,
)
from .evaluation import (
    RetrievalBenchmark,
    RetrievalReport,
    evaluate_retrieval,
    load_benchmark,
    mean_metrics,
    ndcg_at_k,
    precision_at_k,
    qrels_benchmark,
    recall_at_k,
    reciprocal_rank,
    retrieval_table,
)
from .fusion import reciprocal_rank_fusion, weighted_score_fusion
from .index import IndexManifest, build_index, index_identity, load_index, search
from .rerank import CrossEncoderReranker, LLMPointwiseReranker, Reranker, get_reranker, rerankers
from .retrievers import (
    BatchingRetriever,
    BM25Options,
    BM25Retriever,
    DenseOptions,
    DenseRetriever,
    Encoder,
    HybridOptions,
    HybridRetriever,
    IndexedRetriever,
    IndexMismatchError,
    Retriever,
    RetrieverOptions,
    get_retriever,
    multi_query_retrieve,
    retriever,
    retrievers,
)

__all__ = [
    "BM25Options",
    "BM25Retriever",
    "BatchingRetriever",
    "Chunking",
    "CorpusFingerprint",
    "CorpusStats",
    "CrossEncoderReranker",
    "DenseOptions",
    "DenseRetriever",
    "Document",
    "DocumentStore",
    "Encoder",
    "FieldMap",
    "HybridOptions",
    "HybridRetriever",
    "IndexManifest",
    "IndexMismatchError",
    "IndexedRetriever",
    "LLMPointwiseReranker",
    "NoiseCorpus",
    "Reranker",
    "RetrievalBenchmark",
    "RetrievalReport",
    "RetrievedDocument",
    "Retriever",
    "RetrieverOptions",
    "Source",
    "build_index",
    "builtin_corpus",
    "chunk_document",
    "corpus_fingerprint",
    "evaluate_retrieval",
    "get_reranker",
    "get_retriever",
    "index_identity",
    "ingest",
    "ingest_builtin",
    "load_benchmark",
    "load_corpus",
    "load_index",
    "mean_metrics",
    "multi_query_retrieve",
    "ndcg_at_k",
    "noise_corpus",
    "precision_at_k",
    "qrels_benchmark",
    "read_documents",
    "recall_at_k",
    "reciprocal_rank",
    "reciprocal_rank_fusion",
    "rerankers",
    "retrieval_table",
    "retriever",
    "retrievers",
    "search",
    "weighted_score_fusion",
]
