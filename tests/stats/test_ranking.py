import math
from collections import defaultdict

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from hypothesis import given
from hypothesis import strategies as st

from ebmeval.stats import StatsInputError, bradley_terry, elo_ratings
from ebmeval.stats import _validate as check
from ebmeval.stats._ranking import _bradley_terry_fit, _elo_orders, _encode, _tabulate, _win_counts

from .common import PROPERTY


def lmsys_online_elo(battles: pd.DataFrame, K=4, SCALE=400, BASE=10, INIT_RATING=1000):
    """``compute_online_elo`` from the LMSYS Chatbot Arena notebook, verbatim but for the tie labels."""
    rating = defaultdict(lambda: INIT_RATING)
    for _rd, model_a, model_b, winner in battles[["model_a", "model_b", "winner"]].itertuples():
        ra = rating[model_a]
        rb = rating[model_b]
        ea = 1 / (1 + BASE ** ((rb - ra) / SCALE))
        eb = 1 / (1 + BASE ** ((ra - rb) / SCALE))
        if winner == "model_a":
            sa = 1
        elif winner == "model_b":
            sa = 0
        elif winner == "tie":
            sa = 0.5
        else:
            raise Exception(f"unexpected vote {winner}")
        rating[model_a] += K * (sa - ea)
        rating[model_b] += K * (1 - sa - eb)
    return rating


def _battles(matches):
    label = {"a": "model_a", "b": "model_b", "tie": "tie"}
    return pd.DataFrame([(a, b, label[o]) for a, b, o in matches], columns=["model_a", "model_b", "winner"])


def _tournament(seed: int, n_matches: int, n_players: int, tie_rate: float = 0.1):
    rng = np.random.default_rng(seed)
    strength = rng.normal(0, 1, n_players)
    matches = []
    for _ in range(n_matches):
        i, j = rng.choice(n_players, 2, replace=False)
        if rng.random() < tie_rate:
            outcome = "tie"
        else:
            outcome = "a" if rng.random() < 1 / (1 + math.exp(strength[j] - strength[i])) else "b"
        matches.append((f"model-{i}", f"model-{j}", outcome))
    return matches


# ---------------------------------------------------------------- Elo


@pytest.mark.parametrize(("seed", "k"), [(0, 4), (1, 32), (2, 40)])
def test_elo_equals_lmsys(seed, k):
    matches = _tournament(seed, 300, 6)
    ours = elo_ratings(matches, k=k, n_bootstrap=2)
    ref = lmsys_online_elo(_battles(matches), K=k)
    assert ours.value == pytest.approx(dict(ref), rel=1e-15)


def test_elo_bootstrap_equals_lmsys_on_the_same_orders():
    matches = _tournament(3, 60, 5)
    n_bootstrap, seed = 200, 7
    ours = elo_ratings(matches, n_bootstrap=n_bootstrap, seed=seed, level=0.9)
    orders = np.concatenate(list(_elo_orders(len(matches), n_bootstrap, check.rng(seed))))
    battles = _battles(matches)
    players = sorted(ours.value)
    replicates = np.array(
        [
            [ratings[p] for p in players]
            for ratings in (lmsys_online_elo(battles.iloc[orders[:, lane]], K=40) for lane in range(n_bootstrap))
        ]
    )
    low, high = np.percentile(replicates, [5, 95], axis=0)
    # The replicates run in scaled units with E_b = 1 - E_a, LMSYS in rating points with 10**x for
    # both: the same numbers up to rounding, which accumulates over the 60 updates.
    np.testing.assert_allclose([ours.ci[p] for p in players], np.column_stack([low, high]), rtol=1e-11)
    assert ours.n_bootstrap == n_bootstrap and ours.level == 0.9 and ours.n == 60


def test_elo_is_bit_for_bit_repeatable():
    matches = _tournament(4, 2000, 8)
    first = elo_ratings(matches, n_bootstrap=300, seed=5)
    assert elo_ratings(matches, n_bootstrap=300, seed=5) == first
    assert elo_ratings(matches, n_bootstrap=300, seed=6).ci != first.ci


def test_elo_over_several_blocks_of_positions():
    # More matches than one block of bootstrap draws: the lanes continue across blocks.
    matches = _tournament(5, 1100, 3)
    orders = np.concatenate(list(_elo_orders(len(matches), 3, check.rng(0))))
    ours = elo_ratings(matches, n_bootstrap=3, seed=0, level=0.5)
    battles = _battles(matches)
    lane_ratings = [lmsys_online_elo(battles.iloc[orders[:, lane]], K=40) for lane in range(3)]
    for player, (low, high) in ours.ci.items():
        replicate = [r[player] for r in lane_ratings]
        np.testing.assert_allclose((low, high), np.percentile(replicate, [25, 75]), rtol=1e-11)


def test_ratings_cannot_be_modified():
    result = elo_ratings([("x", "y", "a"), ("y", "x", "tie")], n_bootstrap=2)
    with pytest.raises(TypeError):
        result.value["x"] = 0.0  # type: ignore[index]


@PROPERTY
@given(
    matches=st.lists(
        st.tuples(st.sampled_from("pqrs"), st.sampled_from("pqrs"), st.sampled_from(["a", "b", "tie"])).filter(
            lambda m: m[0] != m[1]
        ),
        min_size=1,
        max_size=40,
    ),
    seed=st.integers(0, 2**32 - 1),
)
def test_elo_invariants(matches, seed):
    result = elo_ratings(matches, n_bootstrap=20, seed=seed)
    # Every update moves k (S_a - E_a) points from one player to the other.
    assert sum(result.value.values()) == pytest.approx(1000.0 * len(result.value), abs=1e-9)
    for low, high in result.ci.values():
        assert low <= high
    flip = {"a": "b", "b": "a", "tie": "tie"}
    mirrored = elo_ratings([(b, a, flip[o]) for a, b, o in matches], n_bootstrap=20, seed=seed)
    for player, value in result.value.items():
        assert mirrored.value[player] == pytest.approx(value, abs=1e-9)


# ---------------------------------------------------------------- Bradley-Terry


def statsmodels_bradley_terry(matches, initial=1000.0, scale=400.0):
    """Binomial GLM on the pairwise (half-)win counts, last player as the reference level."""
    players = sorted({p for a, b, _ in matches for p in (a, b)})
    index = {p: i for i, p in enumerate(players)}
    wins = np.zeros((len(players), len(players)))
    for a, b, outcome in matches:
        i, j = index[a], index[b]
        if outcome == "a":
            wins[i, j] += 1
        elif outcome == "b":
            wins[j, i] += 1
        else:
            wins[i, j] += 0.5
            wins[j, i] += 0.5
    rows, endog = [], []
    for i in range(len(players)):
        for j in range(i + 1, len(players)):
            if wins[i, j] + wins[j, i] > 0:
                x = np.zeros(len(players))
                x[i], x[j] = 1.0, -1.0
                rows.append(x[:-1])
                endog.append([wins[i, j], wins[j, i]])
    fit = sm.GLM(np.array(endog), np.array(rows), family=sm.families.Binomial()).fit(tol=1e-14)
    beta = np.append(fit.params, 0.0)
    return dict(zip(players, initial + scale / math.log(10) * (beta - beta.mean()), strict=True))


@pytest.mark.parametrize(("seed", "n_matches", "n_players", "tie_rate"), [(0, 200, 4, 0.1), (1, 2000, 12, 0.3)])
def test_bradley_terry_equals_statsmodels(seed, n_matches, n_players, tie_rate):
    matches = _tournament(seed, n_matches, n_players, tie_rate)
    ours = bradley_terry(matches, n_bootstrap=50)
    ref = statsmodels_bradley_terry(matches)
    # Both solve the same likelihood equations iteratively, to about 1e-10 in log-odds.
    assert ours.value == pytest.approx(ref, abs=1e-7)
    assert sum(ours.value.values()) == pytest.approx(1000.0 * n_players, abs=1e-8)


def test_bradley_terry_bootstrap_fits_equal_statsmodels():
    matches = _tournament(2, 300, 5)
    m = _encode(matches)
    pairs, res = _tabulate(m)
    # One representative match per distinct result: kind 0 = i beat j, 1 = j beat i, 2 = tie.
    representative = [
        (m.players[pairs.i[p]], m.players[pairs.j[p]], ("a", "b", "tie")[kind])
        for p, kind in zip(res.pair, res.kind, strict=True)
    ]
    counts = np.random.default_rng(0).multinomial(len(matches), res.frequency / len(matches), size=3)
    w_ij, w_ji = _win_counts(pairs.i.size, res, counts.astype(float))
    betas = _bradley_terry_fit(pairs, len(m.players), w_ij, w_ji, np.zeros(len(m.players)))
    for replicate, beta in zip(counts, betas, strict=True):
        resampled = [match for match, times in zip(representative, replicate, strict=True) for _ in range(times)]
        ref = statsmodels_bradley_terry(resampled)
        np.testing.assert_allclose(1000.0 + 400.0 / math.log(10) * beta, [ref[p] for p in m.players], atol=1e-7)


def test_bradley_terry_ignores_match_order_and_is_repeatable():
    matches = _tournament(3, 500, 6)
    first = bradley_terry(matches, n_bootstrap=100, seed=1)
    assert bradley_terry(matches[::-1], n_bootstrap=100, seed=1) == first


def test_bradley_terry_all_ties_gives_equal_ratings():
    result = bradley_terry([("x", "y", "tie"), ("y", "z", "tie"), ("z", "x", "tie")] * 3, n_bootstrap=20)
    assert result.value == pytest.approx({"x": 1000.0, "y": 1000.0, "z": 1000.0}, abs=1e-9)


def test_bradley_terry_without_a_finite_estimate_raises():
    matches = [("x", "y", "a"), ("x", "z", "a"), ("y", "z", "a"), ("z", "y", "a")]  # x never lost
    with pytest.raises(StatsInputError, match="no finite maximum-likelihood"):
        bradley_terry(matches)
    assert elo_ratings(matches, n_bootstrap=5).value["x"] > 1000.0


def test_bradley_terry_bootstrap_without_a_finite_estimate_raises():
    matches = [("x", "y", "a"), ("y", "x", "a"), ("y", "z", "a"), ("z", "y", "a"), ("x", "z", "tie")]
    with pytest.raises(StatsInputError, match="n_bootstrap=200: in [0-9]+ replicates"):
        bradley_terry(matches, n_bootstrap=200)


# ---------------------------------------------------------------- input checks


@pytest.mark.parametrize("func", [elo_ratings, bradley_terry])
@pytest.mark.parametrize(
    ("matches", "kwargs", "match"),
    [
        ([], {}, "matches: is empty"),
        ([("x", "x", "a")], {}, "itself"),
        ([("x", "y", "draw")], {}, "outcome"),
        ([("x", "y")], {}, r"matches\[0\]"),
        ([("x", "y", "a"), ("y", "x", "b")], {"n_bootstrap": 1}, "n_bootstrap"),
        ([("x", "y", "a"), ("y", "x", "a")], {"scale": 0.0}, "scale"),
        ([("x", "y", "a"), ("y", "x", "a")], {"level": 95}, "level"),
        ([("x", "y", "a"), ("y", "x", "a")], {"seed": -3}, "seed"),
    ],
)
def test_bad_input_raises(func, matches, kwargs, match):
    with pytest.raises(StatsInputError, match=match):
        func(matches, **kwargs)
