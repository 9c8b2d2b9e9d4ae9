from __future__ import annotations

import random

import numpy as np
import pytest

from ebmeval.rag.evaluation import (
    mean_metrics,
    ndcg_at_k,
    precision_at_k,
    query_metrics,
    recall_at_k,
    reciprocal_rank,
)

RANKED = ["d3", "d1", "d7", "d2", "d9"]
RELEVANT = {"d1", "d2", "d5"}


def test_hand_computed_values() -> None:
    assert recall_at_k(RANKED, RELEVANT, 2) == pytest.approx(1 / 3)
    assert recall_at_k(RANKED, RELEVANT, 5) == pytest.approx(2 / 3)
    assert precision_at_k(RANKED, RELEVANT, 5) == pytest.approx(2 / 5)
    assert precision_at_k(RANKED[:2], RELEVANT, 10) == pytest.approx(1 / 10)
    assert reciprocal_rank(RANKED, RELEVANT) == 0.5
    assert reciprocal_rank(RANKED, RELEVANT, k=1) == 0.0
    dcg = 1 / np.log2(3) + 1 / np.log2(5)
    idcg = 1 + 1 / np.log2(3) + 1 / np.log2(4)
    assert ndcg_at_k(RANKED, RELEVANT, 5) == pytest.approx(dcg / idcg)
    assert ndcg_at_k(["d1", "d2", "d5"], RELEVANT, 3) == pytest.approx(1.0)


def test_ndcg_matches_sklearn() -> None:
    ndcg_score = pytest.importorskip("sklearn.metrics").ndcg_score
    rng = random.Random(0)
    for _ in range(200):
        n_docs = rng.randint(12, 40)
        ids = [f"d{i}" for i in range(n_docs)]
        relevant = set(rng.sample(ids, rng.randint(1, 8)))
        ranked = rng.sample(ids, rng.randint(10, n_docs))
        k = rng.randint(1, 10)
        y_true = np.array([[1.0 if d in relevant else 0.0 for d in ids]])
        # retrieved documents score by rank; the rest tie below them, beyond the cutoff
        position = {d: len(ranked) - i for i, d in enumerate(ranked)}
        y_score = np.array([[float(position.get(d, 0)) for d in ids]])
        assert ndcg_at_k(ranked, relevant, k) == pytest.approx(ndcg_score(y_true, y_score, k=k))


def test_mean_metrics_and_missing_queries() -> None:
    run = {"q1": ["a", "b"], "q2": ["c"]}
    qrels = {"q1": {"b"}, "q2": {"c"}, "q3": {"z"}}
    metrics = mean_metrics(run, qrels, ks=(1,))
    assert metrics["recall@1"] == pytest.approx(1 / 3)
    assert metrics["mrr"] == pytest.approx((0.5 + 1.0 + 0.0) / 3)
    assert set(query_metrics(["a"], {"a"}, (1, 3))) == {
        "recall@1",
        "precision@1",
        "ndcg@1",
        "recall@3",
        "precision@3",
        "ndcg@3",
        "mrr",
    }


def test_undefined_without_relevant_documents() -> None:
    with pytest.raises(ValueError, match="undefined"):
        recall_at_k(["a"], set(), 1)
    with pytest.raises(ValueError, match="undefined"):
        ndcg_at_k(["a"], set(), 1)
    with pytest.raises(ValueError, match="no queries"):
        mean_metrics({}, {})
