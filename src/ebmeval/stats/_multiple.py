"""Adjusting p-values for multiple comparisons."""

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _validate as check
from ._errors import StatsInputError
from ._results import AdjustedPValues


def _pvalues(pvalues: ArrayLike) -> NDArray[np.float64]:
    p = check.vector(pvalues, "pvalues", min_n=1)
    if np.any((p < 0.0) | (p > 1.0)):
        raise StatsInputError(f"pvalues: must lie in [0, 1], got values from {p.min()!r} to {p.max()!r}")
    return p


def _result(adjusted: NDArray[np.float64], alpha: float, method: str) -> AdjustedPValues:
    reject = adjusted <= alpha
    adjusted.flags.writeable = False
    reject.flags.writeable = False
    return AdjustedPValues(pvalues=adjusted, reject=reject, alpha=alpha, method=method)


def _adjusted(
    pvalues: ArrayLike, alpha: float, method: str, steps: Callable[[NDArray[np.float64]], NDArray[np.float64]]
) -> AdjustedPValues:
    """The p-values adjusted by ``steps`` (given them sorted ascending, the adjusted ones in that order)."""
    p = _pvalues(pvalues)
    alpha = check.level(alpha, "alpha")
    order = np.argsort(p, kind="stable")
    adjusted = np.empty(p.size, dtype=np.float64)
    adjusted[order] = steps(p[order])
    return _result(adjusted, alpha, method)


def holm(pvalues: ArrayLike, *, alpha: float = 0.05) -> AdjustedPValues:
    """Holm's (1979) step-down adjustment, controlling the family-wise error rate.

    With p_(1) <= ... <= p_(m): p~_(i) = max_{j <= i} min(1, (m - j + 1) p_(j)); hypothesis i is
    rejected when p~_i <= alpha. Agrees with ``statsmodels.stats.multitest.multipletests(method="holm")``.

    Args:
        pvalues: One-dimensional p-values in [0, 1].
        alpha: Family-wise error rate.

    Returns:
        Adjusted p-values and reject flags in the input order.
    """
    return _adjusted(pvalues, alpha, "holm", _holm_steps)


def _holm_steps(p: NDArray[np.float64]) -> NDArray[np.float64]:
    m = p.size
    stepped: NDArray[np.float64] = np.maximum.accumulate(np.minimum(1.0, (m - np.arange(m)) * p))
    return stepped


def benjamini_hochberg(pvalues: ArrayLike, *, alpha: float = 0.05) -> AdjustedPValues:
    """Benjamini-Hochberg (1995) step-up adjustment, controlling the false discovery rate.

    With p_(1) <= ... <= p_(m): p~_(i) = min_{j >= i} min(1, m p_(j) / j); hypothesis i is rejected
    when p~_i <= alpha (valid under independence or positive dependence). Agrees with
    ``statsmodels.stats.multitest.multipletests(method="fdr_bh")``.

    Args:
        pvalues: One-dimensional p-values in [0, 1].
        alpha: False discovery rate.

    Returns:
        Adjusted p-values and reject flags in the input order.
    """
    return _adjusted(pvalues, alpha, "benjamini-hochberg", _bh_steps)


def _bh_steps(p: NDArray[np.float64]) -> NDArray[np.float64]:
    m = p.size
    # p * (m / j) rather than m * p / j: the factor is >= 1 before it meets p, so rounding can
    # never push an adjusted p-value below its raw one.
    scaled = p * (m / np.arange(1, m + 1))
    stepped: NDArray[np.float64] = np.minimum(1.0, np.minimum.accumulate(scaled[::-1])[::-1])
    return stepped
