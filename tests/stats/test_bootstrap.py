import numpy as np
import pytest
import scipy.stats
from hypothesis import given
from hypothesis import strategies as st

from ebmeval.stats import StatsInputError, bootstrap_ci, paired_bootstrap_diff
from ebmeval.stats._bootstrap import _CHUNK_ELEMENTS

from .common import PROPERTY, vectors


def _rng(seed: int) -> np.random.Generator:
    return np.random.Generator(np.random.SFC64(seed))


def _scipy_ci(data, statistic, n, *, seed, level, method, n_resamples, paired=False):
    res = scipy.stats.bootstrap(
        data,
        statistic,
        n_resamples=n_resamples,
        confidence_level=level,
        method=method,
        paired=paired,
        vectorized=True,
        batch=_CHUNK_ELEMENTS // n,
        random_state=_rng(seed),
    )
    return res


def _std(x, axis):
    return np.std(x, axis=axis, ddof=1)


@pytest.mark.parametrize("method", ["percentile", "bca"])
@pytest.mark.parametrize(
    ("n", "stat", "level", "seed"),
    [
        (20, np.mean, 0.95, 0),
        (7, np.median, 0.9, 1),
        (50, _std, 0.99, 2),
        (3000, np.mean, 0.95, 3),  # 349 resamples per block: the draws span several blocks
    ],
)
def test_bootstrap_ci_equals_scipy(method, n, stat, level, seed):
    x = np.random.default_rng(seed).gamma(2.0, size=n)
    ours = bootstrap_ci(x, stat, n_resamples=1000, level=level, method=method, seed=seed)
    ref = _scipy_ci((x,), stat, n, seed=seed, level=level, method=method.replace("bca", "BCa"), n_resamples=1000)
    # Same resamples, same formulas: only the order of floating-point operations may differ.
    np.testing.assert_allclose(ours.ci, (ref.confidence_interval.low, ref.confidence_interval.high), rtol=1e-12)
    np.testing.assert_allclose(ours.se, ref.standard_error, rtol=1e-12)
    assert ours.value == stat(x, axis=-1)
    assert (ours.n, ours.level) == (n, level)


@pytest.mark.parametrize("method", ["percentile", "bca"])
@pytest.mark.parametrize("stat", [np.mean, np.median])
def test_paired_bootstrap_diff_equals_scipy(method, stat):
    rng = np.random.default_rng(5)
    a = rng.normal(size=40)
    b = a + rng.normal(0.3, 0.5, size=40)
    ours = paired_bootstrap_diff(a, b, stat, n_resamples=2000, method=method, seed=11)
    ref = _scipy_ci(
        (a, b),
        lambda x, y, axis: stat(x, axis=axis) - stat(y, axis=axis),
        40,
        seed=11,
        level=0.95,
        method=method.replace("bca", "BCa"),
        n_resamples=2000,
        paired=True,
    )
    np.testing.assert_allclose(ours.ci, (ref.confidence_interval.low, ref.confidence_interval.high), rtol=1e-12)
    assert ours.value == pytest.approx(stat(a) - stat(b), rel=1e-15)


def test_paired_resampling_keeps_pairs_together():
    a = np.arange(30.0)
    # With b = a + 1 the medians of every joint resample differ by exactly 1; split pairs would not.
    result = paired_bootstrap_diff(a, a + 1.0, np.median, n_resamples=500, seed=0)
    assert result.ci == (-1.0, -1.0)


def test_seeded_results_are_bit_identical():
    x = np.random.default_rng(0).normal(size=500)
    for method in ("percentile", "bca"):
        first = bootstrap_ci(x, n_resamples=3000, method=method, seed=42)
        assert bootstrap_ci(x, n_resamples=3000, method=method, seed=42) == first
        assert bootstrap_ci(x, n_resamples=3000, method=method, seed=43) != first


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_constant_data_give_a_point_interval(method):
    result = bootstrap_ci(np.full(10, 3.5), method=method, n_resamples=200)
    assert result.value == 3.5
    assert result.ci == (3.5, 3.5)
    assert result.se == 0.0


def test_two_values_are_enough():
    result = bootstrap_ci([0.0, 1.0], n_resamples=4000, seed=1)
    # The resampled means are 0, 1/2 and 1 with probabilities 1/4, 1/2, 1/4.
    assert result.ci == (0.0, 1.0)


def test_bca_undefined_acceleration_raises():
    # Two copies of the maximum: every leave-one-out maximum is 9, yet resamples may miss both.
    x = np.array([1, 2, 3, 4, 5, 6, 7, 8, 9, 9.0])
    with pytest.raises(StatsInputError, match="acceleration"):
        bootstrap_ci(x, np.max, method="bca", n_resamples=500)
    assert bootstrap_ci(x, np.max, method="percentile", n_resamples=500).ci[1] == 9.0


def test_bca_infinite_bias_correction_raises():
    def n_distinct(x, axis):
        return (np.diff(np.sort(x, axis=axis), axis=axis) != 0).sum(axis=axis) + 1

    # All 30 values differ, while a resample almost surely repeats one: theta* < theta always.
    with pytest.raises(StatsInputError, match="bias correction"):
        bootstrap_ci(np.arange(30.0), n_distinct, method="bca", n_resamples=500)


def test_stat_that_does_not_reduce_is_rejected():
    with pytest.raises(StatsInputError, match="stat="):
        bootstrap_ci(np.arange(5.0), lambda x, axis: x, n_resamples=10)


def test_stat_returning_nan_is_rejected():
    with np.errstate(divide="ignore", invalid="ignore"), pytest.raises(StatsInputError, match="NaN"):
        bootstrap_ci(np.arange(5.0), lambda x, axis: np.log(np.mean(x, axis=axis) - 2.0), n_resamples=200)


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"values": [1.0]}, "values"),
        ({"values": [[1.0, 2.0], [3.0, 4.0]]}, "values"),
        ({"values": [1.0, np.nan, 2.0]}, "values"),
        ({"values": ["a", "b"]}, "values"),
        ({"values": [1.0, 2.0], "method": "basic"}, "method"),
        ({"values": [1.0, 2.0], "level": 1.0}, "level"),
        ({"values": [1.0, 2.0], "n_resamples": 1}, "n_resamples"),
        ({"values": [1.0, 2.0], "seed": -1}, "seed"),
    ],
)
def test_bad_arguments_raise(kwargs, argument):
    with pytest.raises(StatsInputError, match=argument):
        bootstrap_ci(**kwargs)


def test_paired_lengths_must_match():
    with pytest.raises(StatsInputError, match="equal length"):
        paired_bootstrap_diff([1.0, 2.0, 3.0], [1.0, 2.0])


def test_stats_input_error_is_a_value_error():
    assert issubclass(StatsInputError, ValueError)


@PROPERTY
@given(x=vectors(), seed=st.integers(0, 2**32 - 1))
def test_percentile_interval_of_the_mean_brackets_it(x, seed):
    result = bootstrap_ci(x, n_resamples=400, seed=seed)
    low, high = result.ci
    tol = 1e-9 * (1.0 + np.max(np.abs(x)))
    assert x.min() - tol <= low <= result.value + tol
    assert result.value - tol <= high <= x.max() + tol


@PROPERTY
@given(x=vectors(min_size=3), seed=st.integers(0, 2**32 - 1), shift=st.floats(-100, 100))
def test_interval_moves_with_a_shift_of_the_data(x, seed, shift):
    base = bootstrap_ci(x, n_resamples=300, seed=seed)
    moved = bootstrap_ci(x + shift, n_resamples=300, seed=seed)
    np.testing.assert_allclose(np.array(moved.ci) - shift, base.ci, atol=1e-9 * (1 + abs(shift) + np.abs(x).max()))


@PROPERTY
@given(x=vectors(min_size=3), seed=st.integers(0, 2**32 - 1))
def test_paired_difference_is_antisymmetric(x, seed):
    y = x[::-1].copy()
    ab = paired_bootstrap_diff(x, y, n_resamples=300, seed=seed)
    ba = paired_bootstrap_diff(y, x, n_resamples=300, seed=seed)
    assert ab.value == -ba.value
    np.testing.assert_allclose(ab.ci, (-ba.ci[1], -ba.ci[0]), atol=1e-9 * (1 + np.abs(x).max()))
