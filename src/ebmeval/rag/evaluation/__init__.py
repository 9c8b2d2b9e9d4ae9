"""Retrieval evaluation: metrics against gold ids and built-in benchmarks from real data."""

from ._metrics import mean_metrics, ndcg_at_k, precision_at_k, query_metrics, recall_at_k, reciprocal_rank
from ._retrieval_sets import (
    NOISE_CORPORA,
    Query,
    QueryResult,
    RetrievalBenchmark,
    RetrievalReport,
    bioasq_benchmark,
    evaluate_retrieval,
    load_benchmark,
    m3_benchmark,
    pubmedqa_benchmark,
    qrels_benchmark,
    retrieval_benchmarks,
    retrieval_table,
)

__all__ = [
    "NOISE_CORPORA",
    "Query",
    "QueryResult",
    "RetrievalBenchmark",
    "RetrievalReport",
    "bioasq_benchmark",
    "evaluate_retrieval",
    "load_benchmark",
    "m3_benchmark",
    "mean_metrics",
    "ndcg_at_k",
    "precision_at_k",
    "pubmedqa_benchmark",
    "qrels_benchmark",
    "query_metrics",
    "recall_at_k",
    "reciprocal_rank",
    "retrieval_benchmarks",
    "retrieval_table",
]
