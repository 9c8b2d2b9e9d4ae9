"""Inter-rater agreement on categorical (or ordinal/interval) ratings, with missing ratings allowed.

Multi-rater functions take an (n_items, n_raters) array of numeric category codes with NaN for a
missing rating; items without any rating are ignored.
"""

from collections.abc import Sequence
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _scipy
from . import _validate as check
from ._errors import StatsInputError
from ._results import Estimate

KappaWeights = Literal["linear", "quadratic"]
AlphaMetric = Literal["nominal", "ordinal", "interval"]


def _categories(observed: NDArray[np.float64], categories: Sequence[float] | None) -> NDArray[np.float64]:
    """The sorted category set: the observed values, or ``categories`` after checking it covers them."""
    if categories is None:
        return np.unique(observed)
    cats = np.unique(check.as_float_array(categories, "categories"))
    unknown = np.setdiff1d(observed, cats)
    if unknown.size:
        raise StatsInputError(f"categories: does not contain the rated values {unknown[:5].tolist()}")
    return cats


def _rating_table(ratings: ArrayLike) -> NDArray[np.float64]:
    """The (items, raters) table with NaN for missing ratings, without the items nobody rated."""
    x = check.as_float_array(ratings, "ratings")
    if x.ndim != 2 or x.shape[1] < 2:
        raise StatsInputError(f"ratings: must be an (items, raters) table with at least 2 raters, got shape {x.shape}")
    if np.any(np.isinf(x)):
        raise StatsInputError("ratings: contains infinite values; use NaN for a missing rating")
    rated: NDArray[np.float64] = x[~np.all(np.isnan(x), axis=1)]
    if rated.shape[0] == 0:
        raise StatsInputError("ratings: contains no rating at all")
    return rated


def _count_table(
    ratings: ArrayLike, categories: Sequence[float] | None
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Counts r_ik of ratings of item i in category k, and the sorted categories."""
    x = _rating_table(ratings)
    rated = ~np.isnan(x)
    cats = _categories(x[rated], categories)
    rows = np.nonzero(rated)[0]
    counts = np.zeros((x.shape[0], cats.size), dtype=np.float64)
    np.add.at(counts, (rows, np.searchsorted(cats, x[rated])), 1.0)
    return counts, cats


def _pairwise_agreement(counts: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """Per item, the share of ordered rater pairs that agree; and which items have >= 2 ratings."""
    r = counts.sum(axis=1)
    paired = r >= 2
    if not np.any(paired):
        raise StatsInputError("ratings: no item has at least two ratings, so agreement is undefined")
    pa_items = np.zeros(r.size, dtype=np.float64)
    pa_items[paired] = np.sum(counts[paired] * (counts[paired] - 1.0), axis=1) / (r[paired] * (r[paired] - 1.0))
    return pa_items, paired


def percent_agreement(ratings: ArrayLike) -> Estimate:
    """Observed agreement: the share of agreeing rater pairs, averaged over items.

    p_a = (1/n') sum_i sum_k r_ik (r_ik - 1) / (r_i (r_i - 1)) over the n' items with r_i >= 2
    ratings, r_ik the number of ratings of item i in category k (Fleiss 1971; Gwet 2014). With
    two raters this is the share of items on which they agree.

    Args:
        ratings: (n_items, n_raters) category codes, NaN where missing.

    Returns:
        Estimate with p_a in [0, 1]; n = n'.
    """
    counts, _ = _count_table(ratings, None)
    pa_items, paired = _pairwise_agreement(counts)
    return Estimate(value=float(np.mean(pa_items[paired])), n=int(np.count_nonzero(paired)), method="percent agreement")


def _chance_corrected(
    counts: NDArray[np.float64],
    pe: float,
    pe_items: NDArray[np.float64],
    level: float,
    method: str,
) -> Estimate:
    """(p_a - p_e) / (1 - p_e) with Gwet's (2008, 2014) linearisation standard error.

    Per item: c_i = (n / n') (p_a,i - p_e [r_i >= 2]) / (1 - p_e) and
    c_i* = c_i - 2 (1 - c) (p_e,i - p_e) / (1 - p_e); Var(c) = sum_i (c_i* - c)^2 / (n (n - 1)),
    as ``irrCAC`` (infinite population). CI: c -/+ t_{n-1} se with the upper bound capped at 1, which
    no coefficient of this form exceeds (the lower bound is not capped: with missing ratings
    Fleiss' kappa can fall below -1).
    """
    n = counts.shape[0]
    if n < 2:
        raise StatsInputError(f"ratings: needs at least 2 rated items, got {n}")
    pa_items, paired = _pairwise_agreement(counts)
    pa = float(np.mean(pa_items[paired]))
    value = (pa - pe) / (1.0 - pe)
    per_item = (n / np.count_nonzero(paired)) * (pa_items - pe * paired) / (1.0 - pe)
    per_item = per_item - 2.0 * (1.0 - value) * (pe_items - pe) / (1.0 - pe)
    se = float(np.sqrt(np.sum((per_item - value) ** 2) / (n * (n - 1))))
    half = _scipy.t_ppf(0.5 + level / 2.0, n - 1) * se
    ci = (value - half, min(1.0, value + half))
    return Estimate(value=value, n=n, method=method, ci=ci, level=level, se=se)


def fleiss_kappa(ratings: ArrayLike, *, level: float = 0.95) -> Estimate:
    """Fleiss' kappa for any number of raters, generalised to missing ratings (Gwet 2014, ch. 2).

    kappa = (p_a - p_e) / (1 - p_e) with p_a as in :func:`percent_agreement`,
    p_e = sum_k pi_k^2 and pi_k = (1/n) sum_i r_ik / r_i over the n rated items. With complete
    data this is Fleiss (1971). Standard error and interval: Gwet's linearisation (see
    ``irrCAC.raw.CAC.fleiss``), with p_e,i = sum_k r_ik pi_k / r_i.

    A category nobody used has pi_k = 0 and changes nothing. Raises :class:`StatsInputError` when
    only one category is used (p_e = 1, kappa undefined); near-unanimous data make kappa unstable
    (the kappa paradox), which :func:`gwet_ac1` avoids.

    Args:
        ratings: (n_items, n_raters) category codes, NaN where missing.
        level: Confidence level of the interval.

    Returns:
        Estimate with ``se`` and a t-interval (n - 1 degrees of freedom) capped at 1.
    """
    counts, _ = _count_table(ratings, None)
    level = check.level(level)
    r = counts.sum(axis=1, keepdims=True)
    pi = np.mean(counts / r, axis=0)
    pe = float(np.sum(pi**2))
    if pe >= 1.0:
        raise StatsInputError("ratings: every rating is in one category, so Fleiss' kappa is undefined (p_e = 1)")
    pe_items = (counts @ pi) / r[:, 0]
    return _chance_corrected(counts, pe, pe_items, level, "Fleiss' kappa")


def gwet_ac1(ratings: ArrayLike, *, categories: Sequence[float] | None = None, level: float = 0.95) -> Estimate:
    """Gwet's AC1 first-order agreement coefficient for any number of raters (Gwet 2008).

    AC1 = (p_a - p_e) / (1 - p_e) with p_a as in :func:`percent_agreement` and
    p_e = 1/(Q-1) sum_q pi_q (1 - pi_q), pi_q = (1/n) sum_i r_iq / r_i, Q the number of categories.
    Standard error (Gwet 2008, eq. 30, as ``irrCAC.raw.CAC.gwet``) uses
    p_e,i = 1/(Q-1) sum_q r_iq (1 - pi_q) / r_i.

    Q counts the observed categories unless ``categories`` lists all possible ones, which
    matters here: an unused category changes p_e. When all raters give the same single category,
    AC1 = 1 if Q >= 2; with only one category known it raises :class:`StatsInputError`.

    Args:
        ratings: (n_items, n_raters) category codes, NaN where missing.
        categories: All possible categories, including unused ones.
        level: Confidence level of the interval.

    Returns:
        Estimate with ``se`` and a t-interval (n - 1 degrees of freedom) capped at 1.
    """
    counts, cats = _count_table(ratings, categories)
    level = check.level(level)
    q = cats.size
    if q < 2:
        raise StatsInputError(f"categories: AC1 needs at least 2 categories, got {cats.tolist()}; list all possible")
    r = counts.sum(axis=1, keepdims=True)
    pi = np.mean(counts / r, axis=0)
    pe = float(np.sum(pi * (1.0 - pi))) / (q - 1)
    pe_items = (counts @ (1.0 - pi)) / r[:, 0] / (q - 1)
    return _chance_corrected(counts, pe, pe_items, level, "Gwet's AC1")


def cohen_kappa(
    a: ArrayLike,
    b: ArrayLike,
    *,
    weights: KappaWeights | None = None,
    categories: Sequence[float] | None = None,
) -> Estimate:
    """Cohen's kappa for two raters, unweighted or with linear or quadratic weights.

    kappa = (p_o - p_e) / (1 - p_e), p_o = sum_ij w_ij p_ij, p_e = sum_ij w_ij p_i. p_.j, where p_ij
    is the share of items rated i by ``a`` and j by ``b`` (Cohen 1960, 1968). Agreement weights
    over the positions i, j of the sorted categories (Q of them): identity (unweighted),
    linear w_ij = 1 - |i - j| / (Q - 1), quadratic w_ij = 1 - (i - j)^2 / (Q - 1)^2. Agrees with
    ``sklearn.metrics.cohen_kappa_score(labels=categories, weights=...)``; quadratic weights give
    the kappa that approximates the ICC.

    Items where either rating is NaN are dropped. Since weights depend on Q, pass ``categories``
    when a possible category may go unused. Raises :class:`StatsInputError` when p_e = 1 (both
    raters used one and the same category throughout).

    Args:
        a: Ratings by the first rater (category codes, NaN where missing).
        b: Ratings by the second rater on the same items.
        weights: None, ``"linear"`` or ``"quadratic"``.
        categories: All possible categories, in order.

    Returns:
        Estimate with kappa; n is the number of items rated by both.
    """
    x = check.as_float_array(a, "a")
    y = check.as_float_array(b, "b")
    if x.ndim != 1 or x.shape != y.shape:
        raise StatsInputError(f"a, b: must be one-dimensional with equal length, got shapes {x.shape} and {y.shape}")
    if weights is not None:
        check.choice(weights, "weights", ("linear", "quadratic"))
    if np.any(np.isinf(x)) or np.any(np.isinf(y)):
        raise StatsInputError("a, b: contain infinite values; use NaN for a missing rating")
    both = ~(np.isnan(x) | np.isnan(y))
    x, y = x[both], y[both]
    if x.size < 2:
        raise StatsInputError(f"a, b: need at least 2 items rated by both raters, got {x.size}")
    cats = _categories(np.concatenate([x, y]), categories)
    q = cats.size
    undefined = "a, b: chance agreement p_e is 1 (one category throughout), so kappa is undefined"
    if q < 2:
        raise StatsInputError(undefined)
    table = np.zeros((q, q), dtype=np.float64)
    np.add.at(table, (np.searchsorted(cats, x), np.searchsorted(cats, y)), 1.0)
    p = table / x.size
    expected = np.outer(p.sum(axis=1), p.sum(axis=0))
    gap = np.abs(np.subtract.outer(np.arange(q), np.arange(q))) / (q - 1)
    w = {None: (gap == 0).astype(np.float64), "linear": 1.0 - gap, "quadratic": 1.0 - gap**2}[weights]
    po = float(np.sum(w * p))
    pe = float(np.sum(w * expected))
    if pe >= 1.0:
        raise StatsInputError(undefined)
    name = "Cohen's kappa" if weights is None else f"Cohen's kappa ({weights} weights)"
    return Estimate(value=(po - pe) / (1.0 - pe), n=x.size, method=name)


def krippendorff_alpha(ratings: ArrayLike, *, metric: AlphaMetric = "nominal") -> Estimate:
    """Krippendorff's alpha for any number of raters with missing ratings (Krippendorff 2011).

    alpha = 1 - D_o / D_e = 1 - (n - 1) sum_ck o_ck d_ck / sum_ck n_c n_k d_ck, where o_ck is the
    coincidence matrix o_ck = sum_u (m_uc m_uk - [c = k] m_uc) / (m_u - 1) over units u with
    m_u >= 2 ratings (m_uc of them equal to value c), n_c = sum_k o_ck, n = sum_c n_c, and d_ck is
    the squared distance for the metric:

    * ``"nominal"``: 1 if c != k else 0;
    * ``"ordinal"``: (sum_{g between c and k} n_g - (n_c + n_k)/2)^2, over values in rank order;
    * ``"interval"``: (c - k)^2, over the numeric values.

    Agrees with ``krippendorff.alpha`` (which takes the transposed, raters-by-units table).
    Raises :class:`StatsInputError` when no unit has two ratings or all pairable ratings are
    equal (D_e = 0, alpha undefined).

    Args:
        ratings: (n_items, n_raters) numeric values, NaN where missing.
        metric: ``"nominal"``, ``"ordinal"`` or ``"interval"``.

    Returns:
        Estimate with alpha; n is the number of units with at least two ratings.
    """
    counts, values = _count_table(ratings, None)
    metric = check.choice(metric, "metric", ("nominal", "ordinal", "interval"))
    m = counts.sum(axis=1)
    counts = counts[m >= 2]
    m = m[m >= 2]
    if counts.shape[0] == 0:
        raise StatsInputError("ratings: no item has at least two ratings, so alpha is undefined")
    weighted = counts / (m - 1.0)[:, None]
    o = weighted.T @ counts - np.diag(weighted.sum(axis=0))
    n_c = o.sum(axis=1)
    d: NDArray[np.float64]
    if metric == "nominal":
        d = 1.0 - np.eye(values.size)
    elif metric == "interval":
        gap = np.subtract.outer(values, values)
        d = gap * gap
    else:
        rank = np.arange(values.size)
        lo, hi = np.minimum.outer(rank, rank), np.maximum.outer(rank, rank)
        between = np.cumsum(n_c)[hi] - np.cumsum(n_c)[lo] + n_c[lo]  # sum of n_g for lo <= g <= hi
        d = (between - (n_c[:, None] + n_c[None, :]) / 2.0) ** 2
    expected = np.sum(np.outer(n_c, n_c) * d)
    if expected == 0.0:
        raise StatsInputError("ratings: all pairable ratings are equal, so alpha is undefined (D_e = 0)")
    alpha = 1.0 - (n_c.sum() - 1.0) * float(np.sum(o * d)) / float(expected)
    return Estimate(value=alpha, n=counts.shape[0], method=f"Krippendorff's alpha ({metric})")
