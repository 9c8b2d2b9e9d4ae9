"""Confidence intervals of a proportion."""

from __future__ import annotations

import math
from statistics import NormalDist

from ._errors import StatsInputError


def wilson_ci(successes: int, n: int, *, level: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of the proportion ``successes / n`` (Wilson 1927).

    With z the standard normal quantile 1 - alpha/2 and p = successes / n, the interval is
    (p + z²/2n ± z √(p(1−p)/n + z²/4n²)) / (1 + z²/n). Unlike a percentile bootstrap, it does not
    collapse to a point at 0/n or n/n, nor at small n.
    """
    if n <= 0 or not 0 <= successes <= n:
        raise StatsInputError(f"need 0 <= successes <= n and n > 0, got successes={successes}, n={n}")
    if not 0 < level < 1:
        raise StatsInputError(f"level must be in (0, 1), got {level}")
    z = NormalDist().inv_cdf(1 - (1 - level) / 2)
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high


def newcombe_paired_ci(
    both: int, only_a: int, only_b: int, neither: int, *, level: float = 0.95
) -> tuple[float, float]:
    """Newcombe's square-and-add interval of p_a − p_b for paired proportions (Newcombe 1998, method 10).

    The counts are the paired 2×2 table: pairs with both successes, a alone, b alone and neither
    (n in all). With p_a = (both + only_a)/n, p_b = (both + only_b)/n, (l, u) their Wilson
    intervals and d = p_a − p_b, the interval is
    (d − √((p_a−l_a)² + (u_b−p_b)² − 2φ(p_a−l_a)(u_b−p_b)),
    d + √((p_b−l_b)² + (u_a−p_a)² − 2φ(p_b−l_b)(u_a−p_a))), where φ is the phi coefficient of
    the table, continuity-corrected: with A = both·neither − only_a·only_b, φ = (A − n/2)/√D for
    A > n/2, 0 for 0 ≤ A ≤ n/2 and A/√D for A < 0 (D the product of the margins; φ = 0 when a
    margin is empty). Unlike a bootstrap it does not collapse to a point when no pair is discordant.
    """
    counts = (both, only_a, only_b, neither)
    if min(counts) < 0 or sum(counts) == 0:
        raise StatsInputError(f"need non-negative counts with a positive total, got {counts}")
    n = sum(counts)
    a_yes, b_yes = both + only_a, both + only_b
    p_a, p_b = a_yes / n, b_yes / n
    low_a, high_a = wilson_ci(a_yes, n, level=level)
    low_b, high_b = wilson_ci(b_yes, n, level=level)
    phi = _corrected_phi(both, only_a, only_b, neither)
    below = math.sqrt(max(0.0, (p_a - low_a) ** 2 + (high_b - p_b) ** 2 - 2 * phi * (p_a - low_a) * (high_b - p_b)))
    above = math.sqrt(max(0.0, (p_b - low_b) ** 2 + (high_a - p_a) ** 2 - 2 * phi * (p_b - low_b) * (high_a - p_a)))
    return max(-1.0, p_a - p_b - below), min(1.0, p_a - p_b + above)


def _corrected_phi(both: int, only_a: int, only_b: int, neither: int) -> float:
    """The phi coefficient of a paired 2×2 table with Newcombe's continuity correction."""
    n = both + only_a + only_b + neither
    margins = (both + only_a) * (only_b + neither) * (both + only_b) * (only_a + neither)
    if margins == 0:
        return 0.0
    cross = both * neither - only_a * only_b
    if cross > n / 2:
        return (cross - n / 2) / math.sqrt(margins)
    return 0.0 if cross >= 0 else cross / math.sqrt(margins)
