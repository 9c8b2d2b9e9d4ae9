"""Statistics behind the evaluation claims: plain functions over numpy arrays with typed results.

Nothing here calls a model or touches files. Resampling functions take a ``seed`` and are
bit-for-bit repeatable. Mistakes in the arguments raise :class:`StatsInputError`.
"""

from ._agreement import cohen_kappa, fleiss_kappa, gwet_ac1, krippendorff_alpha, percent_agreement
from ._bootstrap import Statistic, bootstrap_ci, paired_bootstrap_diff
from ._correlation import pearson, spearman
from ._errors import StatsInputError
from ._measurement import bland_altman, icc
from ._multiple import benjamini_hochberg, holm
from ._proportion import newcombe_paired_ci, wilson_ci
from ._ranking import bradley_terry, elo_ratings
from ._results import AdjustedPValues, BlandAltman, Estimate, Ratings, TestResult
from ._tests import cohens_d, mcnemar, paired_ttest, wilcoxon

__all__ = [
    "AdjustedPValues",
    "BlandAltman",
    "Estimate",
    "Ratings",
    "Statistic",
    "StatsInputError",
    "TestResult",
    "benjamini_hochberg",
    "bland_altman",
    "bootstrap_ci",
    "bradley_terry",
    "cohen_kappa",
    "cohens_d",
    "elo_ratings",
    "fleiss_kappa",
    "gwet_ac1",
    "holm",
    "icc",
    "krippendorff_alpha",
    "mcnemar",
    "newcombe_paired_ci",
    "paired_bootstrap_diff",
    "paired_ttest",
    "pearson",
    "percent_agreement",
    "spearman",
    "wilcoxon",
    "wilson_ci",
]
