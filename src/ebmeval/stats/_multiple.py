"""Adjusting p-values for multiple comparisons."""

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
    p = _pvalues(pvalues)
    alpha = check.level(alpha, "alpha")
    m = p.size
    order = np.argsort(p, kind="stable")
    stepped = np.maximum.accumulate(np.minimum(1.0, (m - np.arange(m)) * p[order]))
    adjusted = np.empty(m, dtype=np.float64)
    adjusted[order] = stepped
    return _result(adjusted, alpha, "holm")


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
    p = _pvalues(pvalues)
    alpha = check.level(alpha, "alpha")
    m = p.size
    order = np.argsort(p, kind="stable")
    # p * (m / j) rather than m * p / j: the factor is >= 1 before it meets p, so rounding can
    # never push an adjusted p-value below its raw one.
    scaled = p[order] * (m / np.arange(1, m + 1))
    stepped = np.minimum(1.0, np.minimum.accumulate(scaled[::-1])[::-1])
    adjusted = np.empty(m, dtype=np.float64)
    adjusted[order] = stepped
    return _result(adjusted, alpha, "benjamini-hochberg")
