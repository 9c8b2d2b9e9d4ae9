"""Typed wrappers around the few scipy functions the statistics use.

scipy ships no type information; keeping every call here gives the rest of the
subpackage float-in, float-out signatures that mypy can check.
"""

from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import special


def _stats() -> Any:
    """``scipy.stats``, imported on first use: it takes most of a second to import."""
    from scipy import stats

    return stats


def norm_ppf(q: float) -> float:
    """Quantile function of the standard normal distribution."""
    return float(special.ndtri(q))


def norm_cdf(x: float) -> float:
    """Distribution function of the standard normal distribution."""
    return float(special.ndtr(x))


def norm_sf(x: float) -> float:
    """Survival function (1 - cdf) of the standard normal distribution."""
    return float(special.ndtr(-x))


def t_sf(x: float, df: float) -> float:
    """Survival function of Student's t distribution."""
    return float(_stats().t.sf(x, df))


def t_ppf(q: float, df: float) -> float:
    """Quantile function of Student's t distribution."""
    return float(_stats().t.ppf(q, df))


def f_sf(x: float, dfn: float, dfd: float) -> float:
    """Survival function of the F distribution."""
    return float(_stats().f.sf(x, dfn, dfd))


def f_ppf(q: float, dfn: float, dfd: float) -> float:
    """Quantile function of the F distribution."""
    return float(_stats().f.ppf(q, dfn, dfd))


def chi2_sf(x: float, df: float) -> float:
    """Survival function of the chi-squared distribution."""
    return float(_stats().chi2.sf(x, df))


def binom_cdf(k: int, n: int, p: float) -> float:
    """Distribution function of the binomial distribution."""
    return float(_stats().binom.cdf(k, n, p))


def rankdata(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """Ranks 1..n with tied values given the mean of the ranks they span (midranks)."""
    return np.asarray(_stats().rankdata(x, method="average"), dtype=np.float64)
