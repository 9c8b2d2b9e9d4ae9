import json
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from hypothesis import given, reject
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from ebmeval.stats import (
    StatsInputError,
    cohen_kappa,
    fleiss_kappa,
    gwet_ac1,
    krippendorff_alpha,
    percent_agreement,
)

from .common import PROPERTY

NAN = np.nan

# Gwet (2014), Table 2.16 / the irrCAC package's raw_4raters data: 12 units, 4 raters, 5 categories.
GWET_4RATERS = np.array(
    [
        [1, 1, NAN, 1],
        [2, 2, 3, 2],
        [3, 3, 3, 3],
        [3, 3, 3, 3],
        [2, 2, 2, 2],
        [1, 2, 3, 4],
        [4, 4, 4, 4],
        [1, 1, 2, 1],
        [2, 2, 2, 2],
        [NAN, 5, 5, 5],
        [NAN, NAN, 1, 1],
        [NAN, NAN, 3, NAN],
    ]
)


def _random_ratings(seed: int, n: int, raters: int, q: int, missing: float) -> np.ndarray:
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, q, size=(n, 1))
    ratings = np.where(rng.random((n, raters)) < 0.7, truth, rng.integers(0, q, size=(n, raters))).astype(float)
    ratings[rng.random((n, raters)) < missing] = NAN
    return ratings


DATASETS = [
    GWET_4RATERS,
    _random_ratings(0, 40, 3, 4, 0.0),
    _random_ratings(1, 25, 5, 3, 0.2),
    _random_ratings(2, 60, 2, 5, 0.1),
    np.array([[0.0, 0.0], [0.0, 1.0]]),  # n = 2 items
]


# irrCAC pins old numpy/scipy releases, so its results are committed (computed by reference/irrcac_values.py).
IRRCAC = json.loads((Path(__file__).parent / "reference" / "irrcac_values.json").read_text())["datasets"]


def _irr(ratings: np.ndarray, categories: list[float] | None = None) -> dict:
    """irrCAC's Fleiss and Gwet estimates for ``ratings`` (one of IRRCAC_CASES), as committed."""
    for case in IRRCAC:
        stored = np.array([[NAN if x is None else x for x in row] for row in case["ratings"]])
        if stored.shape == ratings.shape and np.array_equal(stored, ratings, equal_nan=True):
            if case["categories"] == (None if categories is None else [float(c) for c in categories]):
                return case
    raise AssertionError("no committed irrCAC values for these ratings: run reference/irrcac_values.py")


def _assert_matches_irrcac(ours, est, rtol):
    np.testing.assert_allclose(ours.value, est["value"], rtol=rtol)
    np.testing.assert_allclose(ours.se, est["se"], rtol=1e-9)
    # the committed CIs used scipy 1.12's t quantiles; later scipy releases differ from them by ~2e-9
    np.testing.assert_allclose(ours.ci, est["ci"], rtol=1e-8)


@pytest.mark.parametrize("ratings", DATASETS)
def test_percent_agreement_equals_irrcac(ratings):
    ours = percent_agreement(ratings)
    np.testing.assert_allclose(ours.value, _irr(ratings)["fleiss"]["pa"], rtol=1e-13)


@pytest.mark.parametrize("ratings", DATASETS)
def test_fleiss_kappa_equals_irrcac(ratings):
    _assert_matches_irrcac(fleiss_kappa(ratings), _irr(ratings)["fleiss"], rtol=1e-12)


def test_fleiss_kappa_equals_statsmodels_on_complete_data():
    ratings = _random_ratings(3, 50, 6, 4, 0.0)
    table, _ = aggregate_raters(ratings.astype(int))
    np.testing.assert_allclose(fleiss_kappa(ratings).value, sm_fleiss_kappa(table, method="fleiss"), rtol=1e-12)


def test_fleiss_kappa_published_example():
    # irrCAC's documented result on Gwet's 4-rater data: 0.76117 (se 0.15302).
    result = fleiss_kappa(GWET_4RATERS)
    assert round(result.value, 5) == 0.76117
    assert round(result.se, 5) == 0.15302


@pytest.mark.parametrize("ratings", DATASETS)
def test_gwet_ac1_equals_irrcac(ratings):
    _assert_matches_irrcac(gwet_ac1(ratings), _irr(ratings)["gwet"], rtol=1e-12)


def test_gwet_ac1_published_example():
    # Gwet (2014) / irrCAC: AC1 = 0.77544, se 0.14295, 95% CI (0.46081, 1).
    result = gwet_ac1(GWET_4RATERS)
    assert round(result.value, 5) == 0.77544
    assert round(result.se, 5) == 0.14295
    assert (round(result.ci[0], 5), result.ci[1]) == (0.46081, 1.0)


BELOW_MINUS_ONE = np.array([[0.0, 1.0], [0.0, NAN]])
UNUSED_CATEGORY = (_random_ratings(4, 30, 3, 3, 0.1), [0, 1, 2, 3])  # 3 is never used
ONE_CATEGORY = (np.ones((5, 3)), [0, 1])
IRRCAC_CASES = [*((d, None) for d in DATASETS), (BELOW_MINUS_ONE, None), UNUSED_CATEGORY, ONE_CATEGORY]
"""Every (ratings, categories) whose irrCAC estimates are committed in reference/irrcac_values.json."""


def test_fleiss_kappa_can_fall_below_minus_one_with_missing_ratings():
    ratings = BELOW_MINUS_ONE  # p_a = 0, p_e = 0.75^2 + 0.25^2
    result = fleiss_kappa(ratings)
    assert result.value == pytest.approx(-5 / 3, rel=1e-15)
    _assert_matches_irrcac(result, _irr(ratings)["fleiss"], rtol=1e-12)


def test_unused_category_changes_ac1_but_not_fleiss():
    ratings, categories = UNUSED_CATEGORY
    with_unused = gwet_ac1(ratings, categories=categories)
    _assert_matches_irrcac(with_unused, _irr(ratings, categories)["gwet"], rtol=1e-12)
    assert with_unused.value != gwet_ac1(ratings).value
    np.testing.assert_allclose(fleiss_kappa(ratings).value, _irr(ratings, categories)["fleiss"]["value"], rtol=1e-12)


def test_all_raters_identical():
    ratings = np.array([[0, 0, 0], [1, 1, 1], [2, 2, 2], [1, 1, 1.0]])
    assert percent_agreement(ratings).value == 1.0
    assert fleiss_kappa(ratings).value == 1.0
    assert gwet_ac1(ratings).value == 1.0
    assert gwet_ac1(ratings).ci == (1.0, 1.0)
    assert krippendorff_alpha(ratings).value == 1.0
    assert cohen_kappa(ratings[:, 0], ratings[:, 1], weights="linear").value == 1.0


def test_one_category_throughout():
    ratings = ONE_CATEGORY[0]
    for func in (fleiss_kappa, krippendorff_alpha):
        with pytest.raises(StatsInputError, match="undefined"):
            func(ratings)
    with pytest.raises(StatsInputError, match="undefined"):
        cohen_kappa(ratings[:, 0], ratings[:, 1], categories=[0, 1])
    with pytest.raises(StatsInputError, match="categories"):
        gwet_ac1(ratings)
    # With the possible categories known, AC1 is defined: p_e = 0, so AC1 = p_a = 1.
    result = gwet_ac1(ratings, categories=[0, 1])
    assert result.value == 1.0
    np.testing.assert_allclose(result.value, _irr(ratings, [0.0, 1.0])["gwet"]["value"])


def test_categories_must_cover_the_ratings():
    with pytest.raises(StatsInputError, match=r"categories: does not contain the rated values \[2.0\]"):
        gwet_ac1([[0, 1], [1, 2]], categories=[0, 1])


def test_items_nobody_rated_are_ignored():
    with_empty = np.vstack([GWET_4RATERS, [NAN, NAN, NAN, NAN]])
    assert fleiss_kappa(with_empty) == fleiss_kappa(GWET_4RATERS)
    assert gwet_ac1(with_empty) == gwet_ac1(GWET_4RATERS)


@pytest.mark.parametrize(
    ("func", "ratings", "match"),
    [
        (percent_agreement, [0, 1, 1], "shape"),
        (gwet_ac1, [[NAN, NAN], [NAN, NAN]], "no rating at all"),
        (fleiss_kappa, [[0], [1]], "shape"),
        (gwet_ac1, [[0, NAN], [NAN, 1]], "no item has at least two ratings"),
        (krippendorff_alpha, [[0, NAN], [NAN, 1]], "no item has at least two ratings"),
        (fleiss_kappa, [[0, np.inf], [1, 1]], "infinite"),
        (gwet_ac1, [[0, 1]], "at least 2 rated items"),
        (percent_agreement, [["a", "b"]], "numbers"),
    ],
)
def test_bad_ratings_raise(func, ratings, match):
    with pytest.raises(StatsInputError, match=match):
        func(ratings)


# ---------------------------------------------------------------- Cohen's kappa


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cohen_kappa_equals_sklearn(weights, seed):
    ratings = _random_ratings(seed, 50, 2, 5, 0.0)
    ours = cohen_kappa(ratings[:, 0], ratings[:, 1], weights=weights)
    ref = cohen_kappa_score(ratings[:, 0], ratings[:, 1], weights=weights)
    np.testing.assert_allclose(ours.value, ref, rtol=1e-12)
    assert ours.n == 50


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_cohen_kappa_unused_category_and_missing_ratings(weights):
    a = np.array([1, 2, 2, 4, 1, NAN, 4, 2, 1, 4])
    b = np.array([1, 2, 4, 4, 2, 2, NAN, 2, 1, 1])
    categories = [1, 2, 3, 4]  # 3 is never used; it sits between 2 and 4 in the weights
    ours = cohen_kappa(a, b, weights=weights, categories=categories)
    both = ~(np.isnan(a) | np.isnan(b))
    ref = cohen_kappa_score(a[both], b[both], labels=categories, weights=weights)
    np.testing.assert_allclose(ours.value, ref, rtol=1e-12)
    assert ours.n == 8


def test_cohen_kappa_bad_input_raises():
    with pytest.raises(StatsInputError, match="weights"):
        cohen_kappa([1, 2], [1, 2], weights="cubic")
    with pytest.raises(StatsInputError, match="equal length"):
        cohen_kappa([1, 2, 3], [1, 2])
    with pytest.raises(StatsInputError, match="at least 2 items"):
        cohen_kappa([1, NAN, 3], [1, 2, NAN])


# ---------------------------------------------------------------- Krippendorff's alpha


@pytest.mark.parametrize("metric", ["nominal", "ordinal", "interval"])
@pytest.mark.parametrize("ratings", DATASETS + [_random_ratings(5, 30, 4, 7, 0.3) * 1.5 - 2])
def test_krippendorff_alpha_equals_krippendorff(metric, ratings):
    ours = krippendorff_alpha(ratings, metric=metric)
    ref = krippendorff.alpha(reliability_data=ratings.T, level_of_measurement=metric)
    np.testing.assert_allclose(ours.value, ref, rtol=1e-12)


def test_krippendorff_alpha_published_examples():
    # Krippendorff (2011), "Computing Krippendorff's alpha-reliability", section C (12 units, 4 observers).
    data = np.array(
        [
            [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
            [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
            [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
            [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
        ]
    ).T
    assert round(krippendorff_alpha(data, metric="nominal").value, 3) == 0.743
    assert round(krippendorff_alpha(data, metric="ordinal").value, 3) == 0.815
    assert round(krippendorff_alpha(data, metric="interval").value, 3) == 0.849
    assert krippendorff_alpha(data).n == 11


def test_krippendorff_alpha_bad_metric_raises():
    with pytest.raises(StatsInputError, match="metric"):
        krippendorff_alpha(GWET_4RATERS, metric="ratio")


# ---------------------------------------------------------------- properties


def rating_tables(max_items: int = 15, max_raters: int = 5, q: int = 4) -> st.SearchStrategy[np.ndarray]:
    """(items, raters) tables of codes 0..q-1 with some NaN (missing) cells."""
    values = st.one_of(st.integers(0, q - 1).map(float), st.just(NAN))
    return arrays(np.float64, st.tuples(st.integers(2, max_items), st.integers(2, max_raters)), elements=values)


def _defined(func, *args, **kwargs):
    try:
        return func(*args, **kwargs)
    except StatsInputError:
        reject()


MULTI_RATER = [percent_agreement, fleiss_kappa, gwet_ac1, krippendorff_alpha]


@PROPERTY
@given(ratings=rating_tables(), func=st.sampled_from(MULTI_RATER), data=st.data())
def test_multi_rater_invariants(ratings, func, data):
    result = _defined(func, ratings)
    assert result.value <= 1.0 + 1e-12
    if func is percent_agreement:
        assert result.value >= 0.0
    if result.ci is not None:
        assert result.ci[0] <= result.value + 1e-12
        assert result.value - 1e-12 <= result.ci[1] <= 1.0
        assert result.se >= 0.0
    rows = data.draw(st.permutations(range(ratings.shape[0])))
    cols = data.draw(st.permutations(range(ratings.shape[1])))
    assert func(ratings[np.ix_(rows, cols)]).value == pytest.approx(result.value, abs=1e-12)
    # Renaming the categories (a bijection) changes nothing for nominal data.
    renamed = np.where(np.isnan(ratings), NAN, 10.0 - 3.0 * ratings)
    assert func(renamed).value == pytest.approx(result.value, abs=1e-12)


@PROPERTY
@given(ratings=rating_tables(max_raters=2), weights=st.sampled_from([None, "linear", "quadratic"]))
def test_cohen_kappa_invariants(ratings, weights):
    a, b = ratings[:, 0], ratings[:, 1]
    result = _defined(cohen_kappa, a, b, weights=weights, categories=[0, 1, 2, 3])
    assert -1.0 - 1e-12 <= result.value <= 1.0 + 1e-12
    assert cohen_kappa(b, a, weights=weights, categories=[0, 1, 2, 3]).value == pytest.approx(result.value, abs=1e-12)
