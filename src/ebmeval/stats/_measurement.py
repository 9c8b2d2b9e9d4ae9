"""Agreement between continuous measurements: Bland-Altman analysis and two-way intraclass correlation."""

from typing import Literal, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _scipy
from . import _validate as check
from ._errors import StatsInputError
from ._results import BlandAltman, TestResult

# z for 95% limits of agreement: the limits cover 95% of differences whatever the CI level.
_LOA_Z = 1.959963984540054

IccKind = Literal["A,1", "C,1", "A,k", "C,k"]
_ICC_KINDS: tuple[IccKind, ...] = ("A,1", "C,1", "A,k", "C,k")


def bland_altman(h: ArrayLike, l: ArrayLike, *, level: float = 0.95) -> BlandAltman:  # noqa: E741
    """Bland-Altman analysis of agreement between two methods measuring the same items.

    With d = h - l and m = (h + l) / 2 over n pairs, s = SD(d) (ddof=1), t = t_{n-1, (1+level)/2}:

    * bias = mean(d), CI = bias -/+ t s / sqrt(n);
    * 95% limits of agreement bias -/+ 1.96 s (z = 1.959964), each with
      CI = limit -/+ t s sqrt(1/n + z^2 / (2(n - 1))) (Bland & Altman 1999, Stat Methods Med Res 8:135);
    * proportional bias: ordinary least squares of d on m; t-test of the slope on n - 2 degrees of
      freedom, slope CI with t_{n-2, (1+level)/2} (as ``scipy.stats.linregress``).

    Raises :class:`StatsInputError` for fewer than 3 pairs, zero variance of the differences
    (the limits collapse and the slope test is 0/0) or constant pair means (no slope).

    Args:
        h: Measurements by the first method (e.g. human), one per item.
        l: Measurements by the second method (e.g. LLM) on the same items.
        level: Confidence level of the intervals.

    Returns:
        BlandAltman with the bias as ``value``.
    """
    x, y = check.paired(h, l, ("h", "l"), min_n=3)
    level = check.level(level)
    d = x - y
    m = (x + y) / 2.0
    n = d.size
    if np.all(d == d[0]):
        raise StatsInputError("h - l: the differences are constant, so the limits of agreement are degenerate")
    if np.all(m == m[0]):
        raise StatsInputError("(h + l) / 2: the pair means are constant, so proportional bias cannot be tested")
    bias = float(np.mean(d))
    sd = float(np.std(d, ddof=1))
    t = _scipy.t_ppf(0.5 + level / 2.0, n - 1)
    bias_half = t * sd / np.sqrt(n)
    low, high = bias - _LOA_Z * sd, bias + _LOA_Z * sd
    loa_half = t * sd * float(np.sqrt(1.0 / n + _LOA_Z**2 / (2.0 * (n - 1))))
    return BlandAltman(
        value=bias,
        ci=(bias - bias_half, bias + bias_half),
        sd=sd,
        loa=(low, high),
        loa_low_ci=(low - loa_half, low + loa_half),
        loa_high_ci=(high - loa_half, high + loa_half),
        proportional_bias=_proportional_bias(d, m, bias, level),
        n=n,
        level=level,
    )


def _proportional_bias(d: NDArray[np.float64], m: NDArray[np.float64], bias: float, level: float) -> TestResult:
    """OLS slope of the differences ``d`` (mean ``bias``) on the pair means ``m``, t-tested on n - 2 dof."""
    n = d.size
    mc = m - m.mean()
    sxx = float(np.dot(mc, mc))
    slope = float(np.dot(mc, d - bias)) / sxx
    resid = d - bias - slope * mc
    slope_se = float(np.sqrt(np.dot(resid, resid) / (n - 2) / sxx))
    if slope_se == 0.0:
        # The differences lie exactly on a line in the means: a certain, non-zero slope.
        slope_t, slope_p = float(np.copysign(np.inf, slope)), 0.0
    else:
        slope_t = slope / slope_se
        slope_p = min(1.0, 2.0 * _scipy.t_sf(abs(slope_t), n - 2))
    slope_half = _scipy.t_ppf(0.5 + level / 2.0, n - 2) * slope_se
    return TestResult(
        statistic=slope_t,
        pvalue=slope_p,
        n=n,
        method="OLS slope of (h - l) on (h + l)/2",
        value=slope,
        ci=(slope - slope_half, slope + slope_half),
        level=level,
    )


def icc(ratings: ArrayLike, kind: IccKind = "A,1", *, level: float = 0.95) -> TestResult:
    """Intraclass correlation for the two-way models (McGraw & Wong 1996; Shrout & Fleiss 1979).

    ``ratings`` is an (n targets x k raters) table without missing cells. From the two-way ANOVA
    mean squares MSR (targets), MSC (raters) and MSE (residual):

    * ``"A,1"`` absolute agreement, single rater, ICC(2,1):
      (MSR - MSE) / (MSR + (k-1) MSE + k (MSC - MSE) / n)
    * ``"C,1"`` consistency, single rater, ICC(3,1): (MSR - MSE) / (MSR + (k-1) MSE)
    * ``"A,k"`` absolute agreement, mean of k raters, ICC(2,k): (MSR - MSE) / (MSR + (MSC - MSE) / n)
    * ``"C,k"`` consistency, mean of k raters, ICC(3,k): (MSR - MSE) / MSR

    The test is F = MSR / MSE on (n-1, (n-1)(k-1)) degrees of freedom. Consistency intervals
    use the exact F limits; absolute-agreement intervals use the Satterthwaite-type
    approximation of McGraw & Wong (1996, Table 7), as ``pingouin.intraclass_corr``.

    Raises :class:`StatsInputError` for missing cells, fewer than 2 targets or raters, a zero
    residual mean square (e.g. all ratings identical: F and the intervals are undefined) or a zero
    target mean square (all targets alike). When targets differ less than the residual noise
    (MSR < MSE) the estimates are negative, the average-rater forms can fall far below -1 and
    the absolute-agreement interval approximation can break down (NaN bounds); the references
    return the same numbers.

    Args:
        ratings: (n_targets, n_raters) array of ratings.
        kind: Which ICC, see above.
        level: Confidence level of the interval.

    Returns:
        TestResult with ``value`` = ICC and ``statistic`` = F; n is the number of targets.
    """
    x = check.as_float_array(ratings, "ratings")
    kind = check.choice(kind, "kind", _ICC_KINDS)
    level = check.level(level)
    if x.ndim != 2 or x.shape[0] < 2 or x.shape[1] < 2:
        raise StatsInputError(f"ratings: must be a (targets, raters) table, at least 2 of each; got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise StatsInputError("ratings: the ICC needs a complete table; drop targets with missing ratings")
    a = _two_way(x)
    if a.mse == 0.0:
        raise StatsInputError("ratings: the residual mean square is zero, so the ICC F-test and interval are undefined")
    if a.msr == 0.0:
        raise StatsInputError("ratings: every target has the same mean rating, so the ICC is undefined")
    q = 0.5 + level / 2.0
    value, ci = _consistency_icc(a, kind, q) if kind[0] == "C" else _agreement_icc(a, kind, q)
    return TestResult(
        statistic=a.f,
        pvalue=_scipy.f_sf(a.f, a.df1, a.df2),
        n=a.n,
        method=f"ICC({kind})",
        value=float(value),
        ci=(float(ci[0]), float(ci[1])),
        level=level,
    )


class _TwoWay(NamedTuple):
    """Mean squares of the two-way ANOVA of an (n targets x k raters) table."""

    msr: float  # targets (rows)
    msc: float  # raters (columns)
    mse: float  # residual
    n: int
    k: int

    @property
    def df1(self) -> int:
        return self.n - 1

    @property
    def df2(self) -> int:
        return (self.n - 1) * (self.k - 1)

    @property
    def f(self) -> float:
        """The ICC test statistic MSR / MSE on (df1, df2) degrees of freedom."""
        return self.msr / self.mse


def _two_way(x: NDArray[np.float64]) -> _TwoWay:
    n, k = x.shape
    grand = x.mean()
    row_means = x.mean(axis=1, keepdims=True)
    col_means = x.mean(axis=0, keepdims=True)
    ss_rows = k * float(np.sum((row_means - grand) ** 2))
    ss_cols = n * float(np.sum((col_means - grand) ** 2))
    ss_err = float(np.sum((x - row_means - col_means + grand) ** 2))
    df1, df2 = n - 1, (n - 1) * (k - 1)
    return _TwoWay(ss_rows / df1, ss_cols / (k - 1), ss_err / df2, n, k)


def _consistency_icc(a: _TwoWay, kind: IccKind, q: float) -> tuple[float, tuple[float, float]]:
    """ICC(C,1) or ICC(C,k) with the exact F interval at quantile ``q``."""
    msr, mse, k = a.msr, a.mse, a.k
    f_low = a.f / _scipy.f_ppf(q, a.df1, a.df2)
    f_high = a.f * _scipy.f_ppf(q, a.df2, a.df1)
    if kind == "C,1":
        return (msr - mse) / (msr + (k - 1) * mse), ((f_low - 1) / (f_low + k - 1), (f_high - 1) / (f_high + k - 1))
    return (msr - mse) / msr, (1 - 1 / f_low, 1 - 1 / f_high)


def _agreement_icc(a: _TwoWay, kind: IccKind, q: float) -> tuple[float, tuple[float, float]]:
    """ICC(A,1) or ICC(A,k) with McGraw & Wong's approximate interval at quantile ``q``."""
    msr, msc, mse, n, k = a
    rho = (msr - mse) / (msr + (k - 1) * mse + k * (msc - mse) / n)
    fj = msc / mse
    v_num = k * rho * fj + n * (1 + (k - 1) * rho) - k * rho
    v = a.df2 * v_num**2 / (a.df1 * k**2 * rho**2 * fj**2 + (n * (1 + (k - 1) * rho) - k * rho) ** 2)
    f_up = _scipy.f_ppf(q, a.df1, v)
    f_lo = _scipy.f_ppf(q, v, a.df1)
    common = k * msc + (k * n - k - n) * mse
    low = n * (msr - f_up * mse) / (f_up * common + n * msr)
    high = n * (f_lo * msr - mse) / (common + n * f_lo * msr)
    if kind == "A,1":
        return rho, (low, high)
    return (msr - mse) / (msr + (msc - mse) / n), (low * k / (1 + low * (k - 1)), high * k / (1 + high * (k - 1)))
