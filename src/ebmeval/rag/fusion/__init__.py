"""Fusion: pure functions merging ranked lists (reciprocal rank fusion, normalised score fusion)."""

from ._fusion import (
    Fusion,
    FusionMethod,
    Normalization,
    fusion,
    normalize_scores,
    reciprocal_rank_fusion,
    weighted_score_fusion,
)

__all__ = [
    "Fusion",
    "FusionMethod",
    "Normalization",
    "fusion",
    "normalize_scores",
    "reciprocal_rank_fusion",
    "weighted_score_fusion",
]
