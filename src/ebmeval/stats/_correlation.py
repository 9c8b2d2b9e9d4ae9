"""Pearson and Spearman correlation with Fisher-z confidence intervals."""

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _scipy
from . import _validate as check
from ._errors import StatsInputError
from ._results import TestResult


def _correlate(x: ArrayLike, y: ArrayLike, level: float, method: str, *, ranks: bool = False) -> TestResult:
    """Pearson r of x and y (of their midranks with ``ranks``) with its t-test and Fisher-z interval."""
    a, b = check.paired(x, y, ("x", "y"), min_n=3)
    level = check.level(level)
    if ranks:
        a, b = _scipy.rankdata(a), _scipy.rankdata(b)
    r = _pearson_r(a, b)
    t, pvalue = _t_test(r, a.size)
    return TestResult(
        statistic=t, pvalue=pvalue, n=a.size, method=method, value=r, ci=_fisher_interval(r, a.size, level), level=level
    )


def _pearson_r(x: NDArray[np.float64], y: NDArray[np.float64]) -> float:
    """Pearson r, clipped to [-1, 1]; a constant input raises."""
    for name, values in (("x", x), ("y", y)):
        if np.all(values == values[0]):
            raise StatsInputError(f"{name}: is constant, so the correlation is undefined")
    xm = x - x.mean()
    ym = y - y.mean()
    # One square root of the product, not a product of roots: y = x then gives r = 1 exactly
    # (sqrt(fl(s * s)) == s in IEEE arithmetic), so exact collinearity is not lost to rounding.
    r = float(np.dot(xm, ym) / np.sqrt(np.dot(xm, xm) * np.dot(ym, ym)))
    return max(-1.0, min(1.0, r))


def _t_test(r: float, n: int) -> tuple[float, float]:
    """The statistic t = r sqrt((n - 2) / (1 - r^2)) and its two-sided p-value on n - 2 degrees of freedom."""
    if abs(r) == 1.0:
        return float(np.copysign(np.inf, r)), 0.0
    dof = n - 2
    t = r * float(np.sqrt(dof / ((1.0 + r) * (1.0 - r))))
    return t, min(1.0, 2.0 * _scipy.t_sf(abs(t), dof))


def _fisher_interval(r: float, n: int, level: float) -> tuple[float, float]:
    """tanh(atanh(r) -/+ z_{(1+level)/2} / sqrt(n - 3))."""
    if n == 3:
        return -1.0, 1.0  # the Fisher-z standard error 1/sqrt(n - 3) is infinite
    if abs(r) == 1.0:
        return r, r
    half = _scipy.norm_ppf(0.5 + level / 2.0) / np.sqrt(n - 3)
    z = np.arctanh(r)
    return float(np.tanh(z - half)), float(np.tanh(z + half))


def pearson(x: ArrayLike, y: ArrayLike, *, level: float = 0.95) -> TestResult:
    """Pearson product-moment correlation with a t-test and a Fisher-z confidence interval.

    r = sum((x - mean x)(y - mean y)) / sqrt(sum((x - mean x)^2) sum((y - mean y)^2));
    t = r sqrt((n - 2) / (1 - r^2)) on n - 2 degrees of freedom (two-sided);
    CI = tanh(atanh(r) -/+ z_{(1+level)/2} / sqrt(n - 3)) (Fisher 1921).
    Agrees with ``scipy.stats.pearsonr`` and its ``confidence_interval``.

    Edge cases: needs n >= 3 pairs (with n = 2, r is always +/-1); at n = 3 the interval is
    (-1, 1); |r| = 1 gives t = +/-inf, p = 0 and the interval (r, r). A constant input raises
    :class:`StatsInputError`.

    Args:
        x: First variable.
        y: Second variable, paired with ``x``.
        level: Confidence level of the interval.

    Returns:
        TestResult with ``value`` = r and ``statistic`` = t.
    """
    return _correlate(x, y, level, "Pearson r")


def spearman(x: ArrayLike, y: ArrayLike, *, level: float = 0.95) -> TestResult:
    """Spearman rank correlation: Pearson r of the midranks, with a t-test and a Fisher-z interval.

    r_s = Pearson r of rank(x) and rank(y), tied values sharing their mean rank; the p-value uses
    t = r_s sqrt((n - 2) / (1 - r_s^2)) on n - 2 degrees of freedom (``scipy.stats.spearmanr``) and
    the interval tanh(atanh(r_s) -/+ z_{(1+level)/2} / sqrt(n - 3)) (as ``pingouin.corr``).
    Edge cases as :func:`pearson`; an input with all values tied counts as constant.

    Args:
        x: First variable.
        y: Second variable, paired with ``x``.
        level: Confidence level of the interval.

    Returns:
        TestResult with ``value`` = r_s and ``statistic`` = t.
    """
    return _correlate(x, y, level, "Spearman r", ranks=True)
