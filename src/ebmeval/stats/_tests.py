"""Paired comparisons of two systems: t-test, Wilcoxon signed-rank, McNemar, Cohen's d."""

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _scipy
from . import _validate as check
from ._errors import StatsInputError
from ._results import Estimate, TestResult

# Largest number of non-zero differences for which the exact signed-rank distribution is used (as scipy's "auto").
_WILCOXON_EXACT_MAX_N = 50


def paired_ttest(a: ArrayLike, b: ArrayLike, *, level: float = 0.95) -> TestResult:
    """Paired (dependent-samples) t-test of mean(a - b) = 0.

    With d = a - b: t = mean(d) / (s_d / sqrt(n)), s_d the SD of d (ddof=1), n - 1 degrees of
    freedom, two-sided p-value; CI = mean(d) -/+ t_{n-1, (1+level)/2} s_d / sqrt(n).
    Agrees with ``scipy.stats.ttest_rel``.

    Raises :class:`StatsInputError` if the differences have zero variance (t is then 0/0 or
    infinite), as well as for fewer than 2 pairs.

    Args:
        a: Scores of the first system, one per item.
        b: Scores of the second system on the same items.
        level: Confidence level of the interval for the mean difference.

    Returns:
        TestResult with ``statistic`` = t and ``value`` = mean difference.
    """
    x, y = check.paired(a, b)
    level = check.level(level)
    d = x - y
    n = d.size
    se = float(np.sqrt(np.var(d, ddof=1) / n))
    if se == 0.0:
        raise StatsInputError("a - b: the differences have zero variance, so the t statistic is undefined")
    mean = float(np.mean(d))
    t = mean / se
    half = _scipy.t_ppf(0.5 + level / 2.0, n - 1) * se
    return TestResult(
        statistic=t,
        pvalue=min(1.0, 2.0 * _scipy.t_sf(abs(t), n - 1)),
        n=n,
        method="paired t-test",
        value=mean,
        ci=(mean - half, mean + half),
        level=level,
    )


def _signed_rank_pmf(n: int) -> NDArray[np.float64]:
    """Null distribution of W+ for n untied, non-zero differences: P(W+ = w), w = 0..n(n+1)/2."""
    counts = np.zeros(n * (n + 1) // 2 + 1, dtype=np.float64)
    counts[0] = 1.0
    for k in range(1, n + 1):
        # Rank k is either negative (W+ unchanged) or positive (W+ + k); counts stay exact below 2**53.
        counts[k:] = counts[k:] + counts[:-k].copy()
    return counts / 2.0**n


def wilcoxon(a: ArrayLike, b: ArrayLike) -> TestResult:
    """Wilcoxon signed-rank test of the paired differences d = a - b (two-sided).

    Zero differences are dropped (Wilcoxon's method) and n is the number of non-zero ones.
    |d| is ranked with midranks for ties; W+ and W- are the rank sums of the positive and
    negative differences and the statistic is T = min(W+, W-), as in ``scipy.stats.wilcoxon``.

    The p-value is exact (the null distribution of W+) when there are no zeros, no ties and
    n <= 50; otherwise it uses the normal approximation z = (T - n(n+1)/4) / sigma with
    sigma^2 = (n(n+1)(2n+1) - sum(t^3 - t)/2) / 24 over tie groups of size t, no continuity
    correction (``scipy.stats.wilcoxon(method="approx")``).

    ``value`` is the matched-pairs rank-biserial correlation r = (W+ - W-) / (W+ + W-)
    (Kerby 2014), in [-1, 1].

    Raises :class:`StatsInputError` if all differences are zero.

    Args:
        a: Scores of the first system, one per item.
        b: Scores of the second system on the same items.

    Returns:
        TestResult with ``statistic`` = T and ``value`` = rank-biserial correlation.
    """
    x, y = check.paired(a, b)
    d = x - y
    n_zero = int(np.count_nonzero(d == 0))
    d = d[d != 0]
    n = d.size
    if n == 0:
        raise StatsInputError("a - b: all differences are zero; the signed-rank test is undefined")
    ranks = _scipy.rankdata(np.abs(d))
    w_plus = float(np.sum(ranks[d > 0]))
    w_minus = float(np.sum(ranks[d < 0]))
    t = min(w_plus, w_minus)
    _, tie_sizes = np.unique(ranks, return_counts=True)
    has_ties = bool(np.any(tie_sizes > 1))
    if n_zero == 0 and not has_ties and n <= _WILCOXON_EXACT_MAX_N:
        pmf = _signed_rank_pmf(n)
        k = int(w_plus)
        pvalue = min(1.0, 2.0 * min(float(np.sum(pmf[: k + 1])), float(np.sum(pmf[k:]))))
        method = "Wilcoxon signed-rank (exact)"
    else:
        mean = n * (n + 1) / 4.0
        var = (n * (n + 1) * (2 * n + 1) - 0.5 * float(np.sum(tie_sizes * (tie_sizes**2 - 1)))) / 24.0
        z = (t - mean) / np.sqrt(var)
        pvalue = min(1.0, 2.0 * _scipy.norm_sf(abs(z)))
        method = "Wilcoxon signed-rank (normal approximation)"
    return TestResult(
        statistic=t,
        pvalue=pvalue,
        n=n,
        method=method,
        value=(w_plus - w_minus) / (w_plus + w_minus),
    )


def _binary(x: ArrayLike, name: str) -> NDArray[np.bool_]:
    arr = check.vector(x, name, min_n=1)
    if not np.all((arr == 0) | (arr == 1)):
        raise StatsInputError(f"{name}: must hold only 0/1 or False/True values")
    return np.asarray(arr == 1, dtype=np.bool_)


def mcnemar(a_correct: ArrayLike, b_correct: ArrayLike, *, exact: bool = True) -> TestResult:
    """McNemar's test for two classifiers (or graders) scored right/wrong on the same items.

    With b = #(a right, b wrong) and c = #(a wrong, b right):

    * ``exact=True``: statistic = min(b, c), p = min(1, 2 P(X <= min(b, c))), X ~ Binomial(b + c, 1/2).
    * ``exact=False``: chi-squared with Edwards' continuity correction, statistic =
      (|b - c| - 1)^2 / (b + c) on 1 degree of freedom.

    Both follow ``statsmodels.stats.contingency_tables.mcnemar`` (and R's ``mcnemar.test``).
    If the two never disagree (b + c = 0) there is no evidence of a difference: statistic 0 and
    p-value 1 for both versions.

    Args:
        a_correct: 1/True where system A was right, per item.
        b_correct: 1/True where system B was right, on the same items.
        exact: Use the exact binomial test rather than the chi-squared approximation.

    Returns:
        TestResult with ``value`` = accuracy(A) - accuracy(B) = (b - c) / n.
    """
    ra = _binary(a_correct, "a_correct")
    rb = _binary(b_correct, "b_correct")
    if ra.size != rb.size:
        raise StatsInputError(f"a_correct and b_correct: must have equal length, got {ra.size} and {rb.size}")
    b = int(np.count_nonzero(ra & ~rb))
    c = int(np.count_nonzero(~ra & rb))
    if exact:
        statistic = float(min(b, c))
        pvalue = min(1.0, 2.0 * _scipy.binom_cdf(min(b, c), b + c, 0.5))
        method = "McNemar (exact binomial)"
    else:
        method = "McNemar (chi-squared, continuity-corrected)"
        if b + c == 0:
            statistic, pvalue = 0.0, 1.0
        else:
            statistic = (abs(b - c) - 1.0) ** 2 / (b + c)
            pvalue = _scipy.chi2_sf(statistic, 1)
    return TestResult(statistic=statistic, pvalue=pvalue, n=ra.size, method=method, value=(b - c) / ra.size)


def cohens_d(a: ArrayLike, b: ArrayLike, paired: bool = True, *, kind: Literal["z", "av"] | None = None) -> Estimate:
    """Cohen's d, the standardised mean difference of a over b.

    Paired samples (``paired=True``), with d_i = a_i - b_i:

    * ``kind="z"`` (default): d_z = mean(d) / SD(d), the mean difference in units of the SD of the
      differences (Cohen 1988; Lakens 2013); equals t / sqrt(n) of the paired t-test.
    * ``kind="av"``: d_av = (mean(a) - mean(b)) / sqrt((SD(a)^2 + SD(b)^2) / 2), in units of the
      average SD of the two conditions (Cumming 2012), comparable with between-subjects d.

    Independent samples (``paired=False``, ``kind`` left as None):
    d_s = (mean(a) - mean(b)) / s_p, s_p^2 = ((n_a - 1) SD(a)^2 + (n_b - 1) SD(b)^2) / (n_a + n_b - 2).

    All SDs use ddof=1. Agrees with ``pingouin.compute_effsize`` (``eftype="cohen_dz"`` for d_z,
    ``"cohen"`` paired for d_av, ``"cohen"`` unpaired for d_s). A zero standardiser raises
    :class:`StatsInputError`.

    Args:
        a: First sample.
        b: Second sample (same length as ``a`` when paired).
        paired: Whether a and b are paired observations.
        kind: Paired standardiser, ``"z"`` or ``"av"``; must be None for independent samples.

    Returns:
        Estimate with the effect size as ``value``; n is the number of pairs (paired) or n_a + n_b.
    """
    if paired:
        x, y = check.paired(a, b)
        kind = check.choice(kind or "z", "kind", ("z", "av"))
        if kind == "z":
            diff = x - y
            num, den, n = float(np.mean(diff)), float(np.std(diff, ddof=1)), x.size
        else:
            num = float(np.mean(x) - np.mean(y))
            den = float(np.sqrt((np.var(x, ddof=1) + np.var(y, ddof=1)) / 2.0))
            n = x.size
        method = f"Cohen's d_{kind}"
    else:
        if kind is not None:
            raise StatsInputError(f"kind={kind!r}: applies to paired samples only; leave it None when paired=False")
        x = check.vector(a, "a")
        y = check.vector(b, "b")
        dof = x.size + y.size - 2
        num = float(np.mean(x) - np.mean(y))
        den = float(np.sqrt(((x.size - 1) * np.var(x, ddof=1) + (y.size - 1) * np.var(y, ddof=1)) / dof))
        n = x.size + y.size
        method = "Cohen's d_s"
    if den == 0.0:
        raise StatsInputError("a, b: the standardising SD is zero, so Cohen's d is undefined")
    return Estimate(value=num / den, n=n, method=method)
