import numpy as np
import pingouin
import pytest
import scipy.stats
from hypothesis import assume, given
from hypothesis import strategies as st

from ebmeval.stats import StatsInputError, pearson, spearman

from .common import PROPERTY, paired_vectors


def _xy(seed: int, n: int, rho: float = 0.5, ties: bool = False) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    y = rho * x + np.sqrt(1 - rho**2) * rng.normal(size=n)
    if ties:
        x, y = np.round(x), np.round(2 * y)
    return x, y


CASES = [(0, 3, 0.5, False), (1, 4, -0.3, False), (2, 30, 0.8, True), (3, 500, 0.1, False), (4, 40, -0.9, True)]


@pytest.mark.parametrize(("seed", "n", "rho", "ties"), CASES)
@pytest.mark.parametrize("level", [0.9, 0.95])
def test_pearson_equals_scipy(seed, n, rho, ties, level):
    x, y = _xy(seed, n, rho, ties)
    ours = pearson(x, y, level=level)
    ref = scipy.stats.pearsonr(x, y)
    np.testing.assert_allclose(ours.value, ref.statistic, rtol=1e-13)
    # scipy takes the p-value from the beta distribution of r, we from the t distribution of t(r):
    # the same number through different special functions.
    np.testing.assert_allclose(ours.pvalue, ref.pvalue, rtol=1e-10)
    ci = ref.confidence_interval(level)
    np.testing.assert_allclose(ours.ci, (ci.low, ci.high), rtol=1e-12)
    assert ours.n == n


# pingouin.corr also reports power, which it declines (with a warning) for n <= 4.
@pytest.mark.filterwarnings("ignore:Sample size is too small to estimate power:UserWarning")
@pytest.mark.parametrize(("seed", "n", "rho", "ties"), CASES)
def test_spearman_equals_scipy_and_pingouin(seed, n, rho, ties):
    x, y = _xy(seed, n, rho, ties)
    ours = spearman(x, y)
    ref = scipy.stats.spearmanr(x, y)
    np.testing.assert_allclose(ours.value, ref.statistic, rtol=1e-13)
    np.testing.assert_allclose(ours.pvalue, ref.pvalue, rtol=1e-12)
    ranks_ci = scipy.stats.pearsonr(scipy.stats.rankdata(x), scipy.stats.rankdata(y)).confidence_interval()
    np.testing.assert_allclose(ours.ci, (ranks_ci.low, ranks_ci.high), rtol=1e-12)
    if n > 3:
        pg = pingouin.corr(x, y, method="spearman")
        # pingouin rounds the bounds of its CI95% to 2 decimals.
        np.testing.assert_allclose(ours.ci, pg["CI95"].iloc[0], atol=0.005 + 1e-12)


def test_perfect_correlation():
    result = pearson([1.0, 2.0, 3.0, 4.0], [2.0, 4.0, 6.0, 8.0])
    assert (result.value, result.pvalue, result.ci, result.statistic) == (1.0, 0.0, (1.0, 1.0), np.inf)
    result = spearman([1.0, 2.0, 3.0, 4.0], [8.0, 4.0, 2.0, 1.0])
    assert (result.value, result.ci) == (-1.0, (-1.0, -1.0))


def test_three_pairs_give_the_widest_interval():
    assert pearson([1.0, 2.0, 3.0], [1.0, 3.0, 2.0]).ci == (-1.0, 1.0)


@pytest.mark.parametrize("func", [pearson, spearman])
@pytest.mark.parametrize(
    ("x", "y", "match"),
    [
        ([1.0, 2.0], [2.0, 1.0], "at least 3 pairs"),
        ([1.0, 1.0, 1.0], [1.0, 2.0, 3.0], "x: is constant"),
        ([0.1] * 10, list(range(10)), "x: is constant"),
        ([1.0, 2.0, 3.0], [5.0, 5.0, 5.0], "y: is constant"),
        ([1.0, 2.0, 3.0], [1.0, 2.0], "equal length"),
        ([1.0, 2.0, np.inf], [1.0, 2.0, 3.0], "x"),
    ],
)
def test_bad_input_raises(func, x, y, match):
    with pytest.raises(StatsInputError, match=match):
        func(x, y)


@PROPERTY
@given(xy=paired_vectors(min_size=4), method=st.sampled_from([pearson, spearman]), data=st.data())
def test_correlation_invariants(xy, method, data):
    x, y = xy
    assume(np.ptp(x) > 1e-3 and np.ptp(y) > 1e-3)
    result = method(x, y)
    assert -1.0 <= result.value <= 1.0
    assert 0.0 <= result.pvalue <= 1.0
    low, high = result.ci
    assert -1.0 <= low <= result.value <= high <= 1.0
    swapped = method(y, x)
    assert swapped.value == pytest.approx(result.value, abs=1e-12)
    perm = data.draw(st.permutations(range(x.size)))
    shuffled = method(x[perm], y[perm])
    assert shuffled.value == pytest.approx(result.value, abs=1e-12)
