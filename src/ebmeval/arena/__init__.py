"""Long-form QA arena: pairwise judging of stored runs, Elo and Bradley–Terry ratings, bias checks."""

from ..judges import AXES, PAIRWISE, STRICT, parse_pairwise, render_pairwise
from ..judges import PairwiseVerdict as Verdict
from ._arena import (
    JUDGE_MAX_TOKENS,
    ArenaResult,
    AxisResult,
    Comparison,
    LengthBias,
    arun_arena,
    pooled_systems,
    run_arena,
    sampled_pairs,
)

__all__ = [
    "AXES",
    "JUDGE_MAX_TOKENS",
    "PAIRWISE",
    "STRICT",
    "ArenaResult",
    "AxisResult",
    "Comparison",
    "LengthBias",
    "Verdict",
    "arun_arena",
    "parse_pairwise",
    "pooled_systems",
    "render_pairwise",
    "run_arena",
    "sampled_pairs",
]
