import numpy as np
import pingouin
import pytest
import scipy.stats
from hypothesis import assume, given
from hypothesis import strategies as st
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

from ebmeval.stats import StatsInputError, cohens_d, mcnemar, paired_ttest, wilcoxon

from .common import PROPERTY, paired_vectors


def _pairs(seed: int, n: int, shift: float = 0.3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.normal(size=n)
    return a, a + rng.normal(shift, 1.0, size=n)


# ---------------------------------------------------------------- paired t-test


@pytest.mark.parametrize(("seed", "n", "level"), [(0, 2, 0.95), (1, 10, 0.9), (2, 300, 0.99)])
def test_paired_ttest_equals_scipy(seed, n, level):
    a, b = _pairs(seed, n)
    ours = paired_ttest(a, b, level=level)
    ref = scipy.stats.ttest_rel(a, b)
    np.testing.assert_allclose(ours.statistic, ref.statistic, rtol=1e-12)
    np.testing.assert_allclose(ours.pvalue, ref.pvalue, rtol=1e-12)
    ci = ref.confidence_interval(level)
    np.testing.assert_allclose(ours.ci, (ci.low, ci.high), rtol=1e-12)
    np.testing.assert_allclose(ours.value, np.mean(a - b), rtol=1e-15)
    assert ours.n == n


def test_paired_ttest_zero_variance_raises():
    with pytest.raises(StatsInputError, match="zero variance"):
        paired_ttest([1.0, 2.0, 3.0], [0.0, 1.0, 2.0])


@PROPERTY
@given(ab=paired_vectors())
def test_paired_ttest_is_antisymmetric(ab):
    a, b = ab
    d = a - b
    assume(np.std(d) > 1e-6 * (1 + np.abs(d).max()))
    ab_result, ba_result = paired_ttest(a, b), paired_ttest(b, a)
    assert ab_result.statistic == pytest.approx(-ba_result.statistic, rel=1e-9)
    assert ab_result.pvalue == pytest.approx(ba_result.pvalue, rel=1e-9, abs=1e-300)
    assert 0.0 <= ab_result.pvalue <= 1.0
    low, high = ab_result.ci
    assert low <= ab_result.value <= high


# ---------------------------------------------------------------- Wilcoxon


@pytest.mark.parametrize(("seed", "n"), [(0, 5), (1, 20), (2, 50)])
def test_wilcoxon_exact_equals_scipy(seed, n):
    a, b = _pairs(seed, n)
    ours = wilcoxon(a, b)
    ref = scipy.stats.wilcoxon(a, b, method="exact")
    assert ours.method == "Wilcoxon signed-rank (exact)"
    assert ours.statistic == ref.statistic
    np.testing.assert_allclose(ours.pvalue, ref.pvalue, rtol=1e-12)


# scipy warns that 12 pairs are few for the approximation; the comparison is still exact.
@pytest.mark.filterwarnings("ignore:Sample size too small:UserWarning")
@pytest.mark.parametrize(
    ("a", "b"),
    [
        (_pairs(3, 80)[0], _pairs(3, 80)[1]),  # n > 50: no exact distribution
        ([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12], [0, 0, 2, 5, 3, 4, 5, 9, 9, 9, 10, 13]),  # tied |d|
        ([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12], [1, 0, 2, 5, 3, 4, 7, 9, 9, 9, 10, 13]),  # a zero and ties
    ],
)
def test_wilcoxon_approximation_equals_scipy(a, b):
    ours = wilcoxon(a, b)
    ref = scipy.stats.wilcoxon(a, b, method="approx")
    assert ours.method == "Wilcoxon signed-rank (normal approximation)"
    assert ours.statistic == ref.statistic
    np.testing.assert_allclose(ours.pvalue, ref.pvalue, rtol=1e-12)


# pingouin's own p-value switches to the approximation (zeros) and says so; only its RBC is compared.
@pytest.mark.filterwarnings("ignore:Exact p-value calculation:UserWarning")
@pytest.mark.parametrize("seed", [0, 1])
def test_wilcoxon_rank_biserial_equals_pingouin(seed):
    a, b = _pairs(seed, 25)
    b[3] = a[3]  # a zero difference, dropped by both
    ref = pingouin.wilcoxon(a, b)
    np.testing.assert_allclose(wilcoxon(a, b).value, ref["RBC"].iloc[0], rtol=1e-12)


def test_wilcoxon_all_zero_differences_raise():
    with pytest.raises(StatsInputError, match="all differences are zero"):
        wilcoxon([1.0, 2.0, 3.0], [1.0, 2.0, 3.0])


def test_wilcoxon_two_pairs():
    result = wilcoxon([3.0, 1.0], [1.0, 2.0])
    ref = scipy.stats.wilcoxon([3.0, 1.0], [1.0, 2.0], method="exact")
    assert (result.n, result.statistic, result.pvalue) == (2, ref.statistic, ref.pvalue)
    assert result.value == pytest.approx(1 / 3, rel=1e-15)


@PROPERTY
@given(ab=paired_vectors())
def test_wilcoxon_is_symmetric_and_bounded(ab):
    a, b = ab
    assume(np.any(a != b))
    ab_result, ba_result = wilcoxon(a, b), wilcoxon(b, a)
    assert ab_result.statistic == ba_result.statistic
    assert ab_result.pvalue == pytest.approx(ba_result.pvalue, rel=1e-12)
    assert ab_result.value == -ba_result.value
    assert 0.0 <= ab_result.pvalue <= 1.0
    assert -1.0 <= ab_result.value <= 1.0


# ---------------------------------------------------------------- McNemar


def _table(a, b):
    a, b = np.asarray(a, bool), np.asarray(b, bool)
    return [[np.sum(a & b), np.sum(a & ~b)], [np.sum(~a & b), np.sum(~a & ~b)]]


@pytest.mark.parametrize("exact", [True, False])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mcnemar_equals_statsmodels(exact, seed):
    rng = np.random.default_rng(seed)
    a = rng.random(60) < 0.7
    b = rng.random(60) < 0.5
    ours = mcnemar(a, b, exact=exact)
    ref = sm_mcnemar(_table(a, b), exact=exact, correction=True)
    np.testing.assert_allclose(ours.statistic, ref.statistic, rtol=1e-12)
    np.testing.assert_allclose(ours.pvalue, ref.pvalue, rtol=1e-12)
    assert ours.value == pytest.approx(a.mean() - b.mean(), rel=1e-12)


@pytest.mark.parametrize("exact", [True, False])
def test_mcnemar_without_disagreement_has_p_one(exact):
    result = mcnemar([1, 0, 1], [True, False, True], exact=exact)
    assert (result.statistic, result.pvalue, result.value) == (0.0, 1.0, 0.0)


def test_mcnemar_rejects_non_binary_input():
    with pytest.raises(StatsInputError, match="a_correct"):
        mcnemar([1, 2, 0], [1, 1, 0])


def test_mcnemar_lengths_must_match():
    with pytest.raises(StatsInputError, match="equal length"):
        mcnemar([1, 0], [1, 0, 1])


@PROPERTY
@given(st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=60), st.booleans())
def test_mcnemar_is_symmetric(pairs, exact):
    a, b = (np.array(col) for col in zip(*pairs, strict=True))
    ab_result, ba_result = mcnemar(a, b, exact=exact), mcnemar(b, a, exact=exact)
    assert ab_result.pvalue == ba_result.pvalue
    assert ab_result.value == -ba_result.value
    assert 0.0 <= ab_result.pvalue <= 1.0


# ---------------------------------------------------------------- Cohen's d


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cohens_d_equals_pingouin(seed):
    a, b = _pairs(seed, 30)
    np.testing.assert_allclose(
        cohens_d(a, b).value, pingouin.compute_effsize(a, b, paired=True, eftype="cohen_dz"), rtol=1e-12
    )
    np.testing.assert_allclose(
        cohens_d(a, b, kind="av").value, pingouin.compute_effsize(a, b, paired=True, eftype="cohen"), rtol=1e-12
    )
    c = np.random.default_rng(seed).normal(1.0, 2.0, size=17)
    np.testing.assert_allclose(
        cohens_d(a, c, paired=False).value, pingouin.compute_effsize(a, c, paired=False, eftype="cohen"), rtol=1e-12
    )


def test_cohens_d_z_is_t_over_root_n():
    a, b = _pairs(4, 12)
    assert cohens_d(a, b).value == pytest.approx(paired_ttest(a, b).statistic / np.sqrt(12), rel=1e-12)


def test_cohens_d_reports_its_variant():
    a, b = _pairs(0, 5)
    assert cohens_d(a, b).method == "Cohen's d_z"
    assert cohens_d(a, b, kind="av").method == "Cohen's d_av"
    assert cohens_d(a, b, paired=False).method == "Cohen's d_s"
    assert cohens_d(a, b, paired=False).n == 10


@pytest.mark.parametrize(
    ("a", "b", "kwargs", "match"),
    [
        ([1.0, 2.0], [0.0, 1.0], {}, "zero"),
        ([1.0, 1.0], [2.0, 2.0], {"kind": "av"}, "zero"),
        ([1.0, 2.0], [0.0, 1.0], {"paired": False, "kind": "z"}, "kind"),
        ([1.0, 2.0], [0.0, 1.0], {"kind": "g"}, "kind"),
        ([1.0, 2.0, 3.0], [0.0, 1.0], {}, "equal length"),
    ],
)
def test_cohens_d_bad_input_raises(a, b, kwargs, match):
    with pytest.raises(StatsInputError, match=match):
        cohens_d(a, b, **kwargs)


@PROPERTY
@given(ab=paired_vectors(min_size=3))
def test_cohens_d_is_antisymmetric(ab):
    a, b = ab
    assume(np.std(a - b) > 1e-6 * (1 + np.abs(a - b).max()))
    assert cohens_d(a, b).value == pytest.approx(-cohens_d(b, a).value, rel=1e-9)
