import numpy as np
import pandas as pd
import pingouin
import pytest
import scipy.stats
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from ebmeval.stats import StatsInputError, bland_altman, icc

from .common import PROPERTY, paired_vectors

# ---------------------------------------------------------------- Bland-Altman

# Peak expiratory flow (l/min) by the Wright and the mini Wright meter, first readings of 17
# subjects: Bland & Altman (1986), Lancet i:307, Table 1.
WRIGHT = [494, 395, 516, 434, 476, 557, 413, 442, 650, 433, 417, 656, 267, 478, 178, 423, 427]
MINI_WRIGHT = [512, 430, 520, 428, 500, 600, 364, 380, 658, 445, 432, 626, 260, 477, 259, 350, 451]


def test_bland_altman_reproduces_the_published_example():
    result = bland_altman(WRIGHT, MINI_WRIGHT)
    # Published: mean difference -2.1 l/min, SD of the differences 38.8 l/min.
    assert round(result.value, 1) == -2.1
    assert round(result.sd, 1) == 38.8
    assert result.n == 17


@pytest.mark.parametrize(("seed", "n", "level"), [(0, 3, 0.95), (1, 17, 0.9), (2, 200, 0.99)])
def test_bland_altman_equals_references(seed, n, level):
    rng = np.random.default_rng(seed)
    truth = rng.normal(50, 10, size=n)
    h = truth + rng.normal(0, 2, size=n)
    l = 0.9 * truth + 3 + rng.normal(0, 2, size=n)  # noqa: E741
    result = bland_altman(h, l, level=level)
    d, m = h - l, (h + l) / 2
    ttest = scipy.stats.ttest_1samp(d, 0.0)
    ci = ttest.confidence_interval(level)
    np.testing.assert_allclose(result.ci, (ci.low, ci.high), rtol=1e-12)
    np.testing.assert_allclose(result.value, d.mean(), rtol=1e-13)
    np.testing.assert_allclose(result.sd, d.std(ddof=1), rtol=1e-13)
    z = scipy.stats.norm.ppf(0.975)
    np.testing.assert_allclose(result.loa, (d.mean() - z * d.std(ddof=1), d.mean() + z * d.std(ddof=1)), rtol=1e-13)
    # Bland & Altman (1999), section 4.2: SE of a limit = s sqrt(1/n + z^2 / (2 (n - 1))).
    half = scipy.stats.t.ppf((1 + level) / 2, n - 1) * d.std(ddof=1) * np.sqrt(1 / n + z**2 / (2 * (n - 1)))
    np.testing.assert_allclose(result.loa_low_ci, (result.loa[0] - half, result.loa[0] + half), rtol=1e-12)
    np.testing.assert_allclose(result.loa_high_ci, (result.loa[1] - half, result.loa[1] + half), rtol=1e-12)
    fit = scipy.stats.linregress(m, d)
    slope = result.proportional_bias
    np.testing.assert_allclose(slope.value, fit.slope, rtol=1e-11)
    np.testing.assert_allclose(slope.pvalue, fit.pvalue, rtol=1e-9)
    t = scipy.stats.t.ppf((1 + level) / 2, n - 2)
    np.testing.assert_allclose(slope.ci, (fit.slope - t * fit.stderr, fit.slope + t * fit.stderr), rtol=1e-10)


def test_bland_altman_exact_proportional_bias():
    h = np.array([1.0, 2.0, 3.0, 4.0])
    result = bland_altman(h, h / 2)  # d = h / 2 = (2/3) m exactly
    assert result.proportional_bias.pvalue == 0.0
    assert result.proportional_bias.value == pytest.approx(2 / 3, rel=1e-14)


@pytest.mark.parametrize(
    ("h", "l", "match"),
    [
        ([1.0, 2.0], [1.0, 3.0], "at least 3"),
        ([1.0, 2.0, 3.0], [0.0, 1.0, 2.0], "differences are constant"),
        ([1.0, 2.0, 3.0], [3.0, 2.0, 1.0], "pair means are constant"),
        ([1.0, 2.0, 3.0], [3.0, 2.0], "equal length"),
    ],
)
def test_bland_altman_bad_input_raises(h, l, match):  # noqa: E741
    with pytest.raises(StatsInputError, match=match):
        bland_altman(h, l)


@PROPERTY
@given(hl=paired_vectors(min_size=4))
def test_bland_altman_intervals_contain_their_estimates(hl):
    h, l = hl  # noqa: E741
    assume(np.ptp(h - l) > 1e-3 and np.ptp(h + l) > 1e-3)
    result = bland_altman(h, l)
    assert result.ci[0] <= result.value <= result.ci[1]
    assert result.loa_low_ci[0] <= result.loa[0] <= result.loa_low_ci[1]
    assert result.loa_high_ci[0] <= result.loa[1] <= result.loa_high_ci[1]
    assert result.loa[0] <= result.value <= result.loa[1]
    swapped = bland_altman(l, h)
    assert swapped.value == pytest.approx(-result.value, abs=1e-9)
    assert swapped.sd == pytest.approx(result.sd, rel=1e-9)


# ---------------------------------------------------------------- ICC

PINGOUIN_TYPE = {"A,1": "ICC(A,1)", "C,1": "ICC(C,1)", "A,k": "ICC(A,k)", "C,k": "ICC(C,k)"}


def _pingouin_icc(ratings: np.ndarray, monkeypatch: pytest.MonkeyPatch) -> pd.DataFrame:
    # Keep pingouin's confidence bounds unrounded (it rounds CI95 to 2 decimals by default).
    monkeypatch.setitem(pingouin.options, "round.column.CI95", None)
    n, k = ratings.shape
    long = pd.DataFrame(
        {"target": np.repeat(np.arange(n), k), "rater": np.tile(np.arange(k), n), "score": ratings.ravel()}
    )
    return pingouin.intraclass_corr(long, targets="target", raters="rater", ratings="score").set_index("Type")


@pytest.mark.parametrize(
    "ratings",
    [
        np.random.default_rng(0).normal(size=(20, 3)) + np.random.default_rng(1).normal(size=(20, 1)),
        np.random.default_rng(2).integers(1, 6, size=(8, 4)).astype(float),  # Likert scores with ties
        np.array([[1.0, 2.0, 4.0], [3.0, 3.0, 2.0]]),  # n = 2 targets (pingouin needs 5 or more ratings)
        np.array([[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7.0]]),
    ],
)
@pytest.mark.parametrize("kind", ["A,1", "C,1", "A,k", "C,k"])
def test_icc_equals_pingouin(ratings, kind, monkeypatch):
    ref = _pingouin_icc(ratings, monkeypatch).loc[PINGOUIN_TYPE[kind]]
    ours = icc(ratings, kind)
    np.testing.assert_allclose(ours.value, ref["ICC"], rtol=1e-11)
    np.testing.assert_allclose(ours.statistic, ref["F"], rtol=1e-11)
    np.testing.assert_allclose(ours.pvalue, ref["pval"], rtol=1e-9)
    np.testing.assert_allclose(ours.ci, ref["CI95"], rtol=1e-9)
    assert ours.method == f"ICC({kind})"
    assert ours.n == ratings.shape[0]


def test_icc_shrout_fleiss_example():
    # Shrout & Fleiss (1979), Table 2: ICC(2,1) = .29, ICC(3,1) = .71, ICC(2,4) = .62, ICC(3,4) = .91.
    ratings = np.array([[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7.0]])
    published = {"A,1": 0.29, "C,1": 0.71, "A,k": 0.62, "C,k": 0.91}
    for kind, value in published.items():
        assert round(icc(ratings, kind).value, 2) == value


def test_icc_all_raters_identical_raises():
    with pytest.raises(StatsInputError, match="residual mean square is zero"):
        icc(np.tile([[1.0], [2.0], [5.0]], (1, 3)))


def test_icc_targets_alike_raises():
    with pytest.raises(StatsInputError, match="same mean rating"):
        icc([[1.0, 2.0], [2.0, 1.0], [0.0, 3.0]])


@pytest.mark.parametrize(
    ("ratings", "kwargs", "match"),
    [
        ([1.0, 2.0, 3.0], {}, "shape"),
        ([[1.0, 2.0]], {}, "shape"),
        ([[1.0, np.nan], [2.0, 3.0]], {}, "complete"),
        ([[1.0, 2.0], [2.0, 4.0]], {"kind": "ICC1"}, "kind"),
        ([[1.0, 2.0], [2.0, 4.0]], {"level": 0.0}, "level"),
    ],
)
def test_icc_bad_input_raises(ratings, kwargs, match):
    with pytest.raises(StatsInputError, match=match):
        icc(ratings, **kwargs)


@PROPERTY
@given(
    noise=arrays(np.float64, st.tuples(st.integers(3, 12), st.integers(2, 5)), elements=st.floats(-1, 1)),
    spread=st.floats(5, 20),
    kind=st.sampled_from(["A,1", "C,1", "A,k", "C,k"]),
    data=st.data(),
)
def test_icc_invariants(noise, spread, kind, data):
    # Ratings = a clear target effect + rater noise. (Where targets differ less than the noise the
    # estimators leave [-1, 1] and the A-interval approximation fails; see the icc docstring.)
    n, k = noise.shape
    ratings = spread * np.linspace(-1, 1, n)[:, None] + noise
    residual = noise - noise.mean(axis=1, keepdims=True) - noise.mean(axis=0) + noise.mean()
    assume(np.sum(residual**2) > 1e-3)
    result = icc(ratings, kind)
    assert result.value <= 1.0 + 1e-12
    assert result.ci[0] <= result.value <= result.ci[1]
    assert 0.0 <= result.pvalue <= 1.0
    rows = data.draw(st.permutations(range(n)))
    cols = data.draw(st.permutations(range(k)))
    shuffled = icc(ratings[np.ix_(rows, cols)], kind)
    assert shuffled.value == pytest.approx(result.value, rel=1e-9, abs=1e-9)
    if kind.startswith("C"):
        # Consistency ignores a constant offset per rater.
        offsets = data.draw(arrays(np.float64, k, elements=st.floats(-50, 50)))
        assert icc(ratings + offsets, kind).value == pytest.approx(result.value, rel=1e-6, abs=1e-6)
