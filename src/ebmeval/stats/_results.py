"""Immutable result types returned by the statistics."""

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray


@dataclass(frozen=True, slots=True)
class Estimate:
    """A point estimate with, where the method provides them, a confidence interval and standard error.

    Attributes:
        value: The estimate.
        n: Number of observations (items, pairs) the estimate used.
        method: Name of the estimator and, for intervals, the interval method.
        ci: ``(low, high)`` confidence interval, or None where the method gives none.
        level: Confidence level of ``ci``, or None without one.
        se: Standard error, or None where the method gives none.
    """

    value: float
    n: int
    method: str
    ci: tuple[float, float] | None = None
    level: float | None = None
    se: float | None = None


@dataclass(frozen=True, slots=True)
class TestResult:
    """A hypothesis test (two-sided) with, where meaningful, the effect it tests.

    Attributes:
        statistic: The test statistic (t, W, chi-squared, F, ... as named by ``method``).
        pvalue: Two-sided p-value.
        n: Number of observations (pairs, targets) the test used.
        method: Name of the test.
        value: The effect estimate the test is about (mean difference, r, ICC, ...), or None.
        ci: ``(low, high)`` confidence interval of ``value``, or None.
        level: Confidence level of ``ci``, or None without one.
    """

    # pytest would otherwise try to collect this class from test modules that import it.
    __test__ = False

    statistic: float
    pvalue: float
    n: int
    method: str
    value: float | None = None
    ci: tuple[float, float] | None = None
    level: float | None = None


@dataclass(frozen=True, slots=True)
class BlandAltman:
    """Bland-Altman agreement between two measurement methods.

    Attributes:
        value: Bias, the mean of the differences ``h - l``.
        ci: Confidence interval of the bias.
        sd: Standard deviation of the differences (ddof=1).
        loa: ``(lower, upper)`` 95% limits of agreement, bias -/+ 1.959964 * sd.
        loa_low_ci: Confidence interval of the lower limit of agreement.
        loa_high_ci: Confidence interval of the upper limit of agreement.
        proportional_bias: Test of the slope of the differences on the pair means (value = slope).
        n: Number of pairs.
        level: Confidence level of the three intervals.
        method: ``"Bland-Altman"``.
    """

    value: float
    ci: tuple[float, float]
    sd: float
    loa: tuple[float, float]
    loa_low_ci: tuple[float, float]
    loa_high_ci: tuple[float, float]
    proportional_bias: TestResult
    n: int
    level: float
    method: str = "Bland-Altman"


@dataclass(frozen=True, slots=True)
class Ratings:
    """Per-player ratings from pairwise matches, with bootstrap confidence intervals.

    Attributes:
        value: Rating of each player, keyed by player name (sorted by name).
        ci: ``(low, high)`` bootstrap percentile interval of each player's rating.
        n: Number of matches.
        method: ``"elo"`` or ``"bradley-terry"``.
        level: Confidence level of the intervals.
        n_bootstrap: Number of bootstrap replicates behind ``ci``.
    """

    value: Mapping[str, float]
    ci: Mapping[str, tuple[float, float]]
    n: int
    method: str
    level: float
    n_bootstrap: int


@dataclass(frozen=True, slots=True, eq=False)
class AdjustedPValues:
    """P-values adjusted for multiple comparisons, in the order they were given.

    Attributes:
        pvalues: Adjusted p-values (read-only array).
        reject: Whether each null hypothesis is rejected at ``alpha`` (read-only array).
        alpha: Family-wise error rate (Holm) or false discovery rate (Benjamini-Hochberg).
        method: ``"holm"`` or ``"benjamini-hochberg"``.
    """

    pvalues: NDArray[np.float64]
    reject: NDArray[np.bool_]
    alpha: float
    method: str
