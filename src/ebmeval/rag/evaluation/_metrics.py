"""Retrieval metrics against gold document ids (binary relevance)."""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence


def recall_at_k(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """``|relevant ∩ top_k| / |relevant|``."""
    if not relevant:
        raise ValueError("recall is undefined without relevant documents")
    return len(set(ranked[:k]) & set(relevant)) / len(relevant)


def precision_at_k(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """``|relevant ∩ top_k| / k`` (a list shorter than ``k`` still divides by ``k``, as trec_eval does)."""
    return len(set(ranked[:k]) & set(relevant)) / k


def reciprocal_rank(ranked: Sequence[str], relevant: Collection[str], k: int | None = None) -> float:
    """``1 / rank`` of the first relevant document within the top ``k`` (all when ``None``), 0 if none."""
    gold = set(relevant)
    for rank, doc_id in enumerate(ranked[:k] if k is not None else ranked, start=1):
        if doc_id in gold:
            return 1.0 / rank
    return 0.0


def ndcg_at_k(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """Normalised discounted cumulative gain with binary gains.

    ``DCG@k = Σ_{i=1..k} rel_i / log2(i + 1)`` with ``rel_i`` = 1 when the i-th
    document is relevant, ``IDCG@k = Σ_{i=1..min(|relevant|, k)} 1 / log2(i + 1)``,
    ``nDCG@k = DCG@k / IDCG@k``.
    """
    if not relevant:
        raise ValueError("nDCG is undefined without relevant documents")
    gold = set(relevant)
    dcg = sum(1.0 / math.log2(i + 1) for i, doc_id in enumerate(ranked[:k], start=1) if doc_id in gold)
    ideal = sum(1.0 / math.log2(i + 1) for i in range(1, min(len(gold), k) + 1))
    return dcg / ideal


def query_metrics(ranked: Sequence[str], relevant: Collection[str], ks: Sequence[int]) -> dict[str, float]:
    """``recall@k``, ``precision@k`` and ``ndcg@k`` for each ``k`` in ``ks``, and ``mrr`` over the whole list."""
    values: dict[str, float] = {}
    for k in ks:
        values[f"recall@{k}"] = recall_at_k(ranked, relevant, k)
        values[f"precision@{k}"] = precision_at_k(ranked, relevant, k)
        values[f"ndcg@{k}"] = ndcg_at_k(ranked, relevant, k)
    values["mrr"] = reciprocal_rank(ranked, relevant)
    return values


def mean_metrics(
    run: Mapping[str, Sequence[str]], qrels: Mapping[str, Collection[str]], ks: Sequence[int] = (1, 5, 10)
) -> dict[str, float]:
    """Each metric of :func:`query_metrics` averaged over the queries of ``qrels``.

    ``run`` maps query id → ranked document ids; a query of ``qrels`` missing from
    ``run`` counts as retrieving nothing. Queries without relevant documents raise.
    """
    if not qrels:
        raise ValueError("no queries to evaluate")
    totals: dict[str, float] = {}
    for query_id, relevant in qrels.items():
        for name, value in query_metrics(run.get(query_id, ()), relevant, ks).items():
            totals[name] = totals.get(name, 0.0) + value
    return {name: total / len(qrels) for name, total in totals.items()}
