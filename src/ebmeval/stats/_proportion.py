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
