"""Long-form QA arena: pairwise judging of stored runs, Elo and Bradley–Terry ratings, bias checks."""

from ._arena import (
    JUDGE_MAX_TOKENS,
    ArenaResult,
    AxisResult,
    Comparison,
    LengthBias,
    arun_arena,
    run_arena,
)
from ._judge import AXES, PAIRWISE, STRICT, Verdict, parse_pairwise, render_pairwise
from ._memo import ARENA_SCHEMA, ArenaMemo, ArenaSteps

__all__ = [
    "ARENA_SCHEMA",
    "AXES",
    "JUDGE_MAX_TOKENS",
    "PAIRWISE",
    "STRICT",
    "ArenaMemo",
    "ArenaResult",
    "ArenaSteps",
    "AxisResult",
    "Comparison",
    "LengthBias",
    "Verdict",
    "arun_arena",
    "parse_pairwise",
    "render_pairwise",
    "run_arena",
]
