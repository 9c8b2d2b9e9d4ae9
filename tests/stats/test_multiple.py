import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from statsmodels.stats.multitest import multipletests

from ebmeval.stats import StatsInputError, benjamini_hochberg, holm

from .common import PROPERTY

METHODS = [(holm, "holm"), (benjamini_hochberg, "fdr_bh")]

P_VECTORS = [
    np.array([0.01, 0.04, 0.03, 0.005, 0.5]),
    np.array([0.02, 0.02, 0.02, 0.9]),  # ties
    np.array([0.0, 1.0, 0.049, 0.051]),  # the bounds of [0, 1]
    np.array([0.03]),  # a single test
    np.random.default_rng(0).random(200) ** 3,
]


@pytest.mark.parametrize(("func", "name"), METHODS)
@pytest.mark.parametrize("pvalues", P_VECTORS)
@pytest.mark.parametrize("alpha", [0.05, 0.1])
def test_equals_statsmodels(func, name, pvalues, alpha):
    ours = func(pvalues, alpha=alpha)
    reject, corrected, _, _ = multipletests(pvalues, alpha=alpha, method=name)
    np.testing.assert_allclose(ours.pvalues, corrected, rtol=1e-12)
    np.testing.assert_array_equal(ours.reject, reject)
    assert ours.alpha == alpha


def test_results_are_read_only():
    result = holm([0.01, 0.02])
    with pytest.raises(ValueError, match="read-only"):
        result.pvalues[0] = 0.5


@pytest.mark.parametrize(("func", "name"), METHODS)
@pytest.mark.parametrize(
    ("pvalues", "alpha", "match"),
    [
        ([0.1, 1.2], 0.05, "pvalues"),
        ([-0.1], 0.05, "pvalues"),
        ([0.1, np.nan], 0.05, "pvalues"),
        ([[0.1, 0.2]], 0.05, "pvalues"),
        ([], 0.05, "pvalues"),
        ([0.1], 1.0, "alpha"),
    ],
)
def test_bad_input_raises(func, name, pvalues, alpha, match):
    with pytest.raises(StatsInputError, match=match):
        func(pvalues, alpha=alpha)


@PROPERTY
@given(
    p=arrays(np.float64, st.integers(1, 40), elements=st.floats(0, 1)),
    method=st.sampled_from([holm, benjamini_hochberg]),
    data=st.data(),
)
def test_adjustment_invariants(p, method, data):
    result = method(p)
    adjusted = result.pvalues
    assert np.all(adjusted >= p) and np.all(adjusted <= 1.0)
    order = np.argsort(p, kind="stable")
    assert np.all(np.diff(adjusted[order]) >= 0)  # monotone in the raw p-values
    perm = np.array(data.draw(st.permutations(range(p.size))))
    shuffled = method(p[perm])
    np.testing.assert_array_equal(shuffled.pvalues, adjusted[perm])
    np.testing.assert_array_equal(shuffled.reject, result.reject[perm])


@PROPERTY
@given(p=arrays(np.float64, st.integers(1, 40), elements=st.floats(0, 1)))
def test_holm_is_never_less_conservative_than_bh(p):
    assert np.all(holm(p).pvalues >= benjamini_hochberg(p).pvalues - 1e-15)
