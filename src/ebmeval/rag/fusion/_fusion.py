"""Pure functions that merge several ranked lists for one query into one."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Literal

from ...tasks import Document, RetrievedDocument

FusionMethod = Literal["rrf", "weighted"]
Normalization = Literal["minmax", "zscore"]


def _weights(rankings: Sequence[Sequence[RetrievedDocument]], weights: Sequence[float] | None) -> Sequence[float]:
    if weights is None:
        return [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ValueError(f"{len(weights)} weights for {len(rankings)} ranked lists")
    return weights


def _ranked(
    fused: dict[str, float],
    first: dict[str, tuple[int, int, Document, bool | None]],
    limit: int | None,
) -> list[RetrievedDocument]:
    # ties: best rank in any list, then the order in which the lists were given
    order = sorted(fused, key=lambda doc_id: (-fused[doc_id], first[doc_id][0], first[doc_id][1]))
    if limit is not None:
        order = order[:limit]
    return [
        RetrievedDocument(document=first[doc_id][2], score=fused[doc_id], rank=rank, gold=first[doc_id][3])
        for rank, doc_id in enumerate(order, start=1)
    ]


def _first_seen(
    rankings: Sequence[Sequence[RetrievedDocument]],
) -> dict[str, tuple[int, int, Document, bool | None]]:
    """For each document id: (best rank, index of the list it was best in, document, gold)."""
    first: dict[str, tuple[int, int, Document, bool | None]] = {}
    for list_index, ranking in enumerate(rankings):
        for item in ranking:
            doc_id = item.document.id
            known = first.get(doc_id)
            if known is None or item.rank < known[0]:
                gold = item.gold if item.gold is not None else (known[3] if known else None)
                first[doc_id] = (item.rank, list_index, item.document, gold)
    return first


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[RetrievedDocument]],
    *,
    k: int = 60,
    weights: Sequence[float] | None = None,
    limit: int | None = None,
) -> list[RetrievedDocument]:
    """Reciprocal rank fusion (Cormack et al., SIGIR 2009).

    ``RRF(d) = Σ_i w_i / (k + rank_i(d))`` over the lists ``i`` that contain ``d``
    (``rank`` is 1-based, ``w_i`` = 1 unless ``weights`` is given). Ties go to the
    document with the better rank in any list. Returns at most ``limit`` documents.
    """
    if k <= 0:
        raise ValueError(f"k must be positive, got {k}")
    weight = _weights(rankings, weights)
    fused: dict[str, float] = {}
    for w, ranking in zip(weight, rankings, strict=True):
        for item in ranking:
            fused[item.document.id] = fused.get(item.document.id, 0.0) + w / (k + item.rank)
    return _ranked(fused, _first_seen(rankings), limit)


def normalize_scores(scores: Sequence[float], method: Normalization = "minmax") -> list[float]:
    """Scores of one list on a common scale.

    ``minmax``: ``(s - min) / (max - min)``, all 1.0 when every score is equal.
    ``zscore``: ``(s - mean) / sd`` (population sd), all 0.0 when ``sd`` is 0.
    """
    if not scores:
        return []
    if method == "minmax":
        low, high = min(scores), max(scores)
        if high == low:
            return [1.0] * len(scores)
        return [(s - low) / (high - low) for s in scores]
    mean = sum(scores) / len(scores)
    sd = math.sqrt(sum((s - mean) ** 2 for s in scores) / len(scores))
    if sd == 0:
        return [0.0] * len(scores)
    return [(s - mean) / sd for s in scores]


def weighted_score_fusion(
    rankings: Sequence[Sequence[RetrievedDocument]],
    *,
    weights: Sequence[float] | None = None,
    normalization: Normalization = "minmax",
    limit: int | None = None,
) -> list[RetrievedDocument]:
    """Normalised weighted score fusion (CombSUM over normalised scores).

    ``S(d) = Σ_i w_i · norm_i(d)`` where ``norm_i`` is list ``i``'s scores under
    :func:`normalize_scores`; a document missing from list ``i`` gets that list's lowest
    normalised score (0 for min-max), i.e. it counts as no better than the worst retrieved.
    """
    weight = _weights(rankings, weights)
    normalised = [normalize_scores([item.score for item in ranking], normalization) for ranking in rankings]
    floors = [min(values) if values else 0.0 for values in normalised]
    fused: dict[str, float] = {}
    for ranking in rankings:
        for item in ranking:
            fused.setdefault(item.document.id, 0.0)
    for w, ranking, values, floor in zip(weight, rankings, normalised, floors, strict=True):
        present = {item.document.id: value for item, value in zip(ranking, values, strict=True)}
        for doc_id in fused:
            fused[doc_id] += w * present.get(doc_id, floor)
    return _ranked(fused, _first_seen(rankings), limit)


Fusion = Callable[[Sequence[Sequence[RetrievedDocument]]], list[RetrievedDocument]]
"""A fusion function with its options bound: ranked lists of one query → one ranked list."""


def fusion(
    method: FusionMethod = "rrf",
    *,
    rrf_k: int = 60,
    weights: Sequence[float] | None = None,
    normalization: Normalization = "minmax",
    limit: int | None = None,
) -> Fusion:
    """The fusion ``method`` with its options bound (``rrf`` or ``weighted``)."""
    if method == "rrf":
        return lambda rankings: reciprocal_rank_fusion(rankings, k=rrf_k, weights=weights, limit=limit)
    if method == "weighted":
        return lambda rankings: weighted_score_fusion(
            rankings, weights=weights, normalization=normalization, limit=limit
        )
    raise ValueError(f"unknown fusion method {method!r}; choose 'rrf' or 'weighted'")
