"""Pearson and Spearman correlation with Fisher-z confidence intervals."""

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _scipy
from . import _validate as check
from ._errors import StatsInputError
from ._results import TestResult


def _correlate(x: NDArray[np.float64], y: NDArray[np.float64], level: float, method: str) -> TestResult:
    """Pearson r of x and y with its t-test and Fisher-z interval."""
    n = x.size
    for name, values in (("x", x), ("y", y)):
        if np.all(values == values[0]):
            raise StatsInputError(f"{name}: is constant, so the correlation is undefined")
    xm = x - x.mean()
    ym = y - y.mean()
    # One square root of the product, not a product of roots: y = x then gives r = 1 exactly
    # (sqrt(fl(s * s)) == s in IEEE arithmetic), so exact collinearity is not lost to rounding.
    r = float(np.dot(xm, ym) / np.sqrt(np.dot(xm, xm) * np.dot(ym, ym)))
    r = max(-1.0, min(1.0, r))
    dof = n - 2
    if abs(r) == 1.0:
        t, pvalue = float(np.copysign(np.inf, r)), 0.0
    else:
        t = r * float(np.sqrt(dof / ((1.0 + r) * (1.0 - r))))
        pvalue = min(1.0, 2.0 * _scipy.t_sf(abs(t), dof))
    if n == 3:
        ci = (-1.0, 1.0)  # the Fisher-z standard error 1/sqrt(n - 3) is infinite
    elif abs(r) == 1.0:
        ci = (r, r)
    else:
        half = _scipy.norm_ppf(0.5 + level / 2.0) / np.sqrt(n - 3)
        z = np.arctanh(r)
        ci = (float(np.tanh(z - half)), float(np.tanh(z + half)))
    return TestResult(statistic=t, pvalue=pvalue, n=n, method=method, value=r, ci=ci, level=level)


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
    a, b = check.paired(x, y, ("x", "y"), min_n=3)
    return _correlate(a, b, check.level(level), "Pearson r")


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
    a, b = check.paired(x, y, ("x", "y"), min_n=3)
    return _correlate(_scipy.rankdata(a), _scipy.rankdata(b), check.level(level), "Spearman r")
