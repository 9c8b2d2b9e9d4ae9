"""Ratings from pairwise matches: sequential Elo and Bradley-Terry, with bootstrap intervals.

A match is ``(a, b, outcome)`` with player names ``a != b`` and outcome ``"a"`` (a won), ``"b"``
(b won) or ``"tie"``. Both ratings use the Elo scale: a player rated D points above another is
expected to score 1 / (1 + 10^(-D / scale)) against it.
"""

import math
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from types import MappingProxyType
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from . import _validate as check
from ._errors import StatsInputError
from ._results import Ratings

_OUTCOME_SCORE = {"a": 1.0, "b": 0.0, "tie": 0.5}

# Match positions whose bootstrap indices are drawn and laid out at once (bounds memory to
# about 24 bytes * block * n_bootstrap).
_ELO_BLOCK = 512

# Newton iterations allowed for the Bradley-Terry fit; it converges quadratically, typically in
# under ten iterations, whenever the maximum-likelihood estimate exists (checked beforehand).
_BT_MAX_ITER = 100
_BT_TOL = 1e-10


class _Matches(NamedTuple):
    players: list[str]
    a: NDArray[np.intp]
    b: NDArray[np.intp]
    score: NDArray[np.float64]  # S_a: 1 if a won, 0 if b won, 0.5 for a tie


def _encode(matches: Sequence[tuple[str, str, str]]) -> _Matches:
    a_names: list[str] = []
    b_names: list[str] = []
    scores: list[float] = []
    for i, match in enumerate(matches):
        if len(match) != 3:
            raise StatsInputError(f"matches[{i}]={match!r}: must be (a, b, outcome)")
        a, b, outcome = match
        if a == b:
            raise StatsInputError(f"matches[{i}]={match!r}: a player cannot play itself")
        if outcome not in _OUTCOME_SCORE:
            raise StatsInputError(f"matches[{i}]={match!r}: outcome must be 'a', 'b' or 'tie'")
        a_names.append(a)
        b_names.append(b)
        scores.append(_OUTCOME_SCORE[outcome])
    if not scores:
        raise StatsInputError("matches: is empty")
    players, codes = np.unique(np.array(a_names + b_names, dtype=object), return_inverse=True)
    t = len(scores)
    return _Matches(
        players=[str(p) for p in players],
        a=codes[:t].astype(np.intp),
        b=codes[t:].astype(np.intp),
        score=np.array(scores, dtype=np.float64),
    )


def _checked(
    matches: Sequence[tuple[str, str, str]], n_bootstrap: int, level: float, seed: int, scale: float
) -> tuple[_Matches, int, float, np.random.Generator]:
    """The encoded matches and the checked bootstrap settings that both rating methods take."""
    checked = _encode(matches), check.count(n_bootstrap, "n_bootstrap", 2), check.level(level), check.rng(seed)
    if not scale > 0:
        raise StatsInputError(f"scale={scale!r}: must be positive")
    return checked


def _ratings(m: _Matches, value: NDArray[np.float64], boot: NDArray[np.float64], level: float, method: str) -> Ratings:
    alpha = (1.0 - level) / 2.0
    low, high = np.percentile(boot, [100.0 * alpha, 100.0 * (1.0 - alpha)], axis=0)
    return Ratings(
        value=MappingProxyType({p: float(v) for p, v in zip(m.players, value, strict=True)}),
        ci=MappingProxyType({p: (float(lo), float(hi)) for p, lo, hi in zip(m.players, low, high, strict=True)}),
        n=m.score.size,
        method=method,
        level=level,
        n_bootstrap=boot.shape[0],
    )


def _elo_sequential(m: _Matches, k: float, initial: float, scale: float) -> NDArray[np.float64]:
    """Elo over the matches in the given order, exactly as LMSYS's ``compute_online_elo``."""
    r = [float(initial)] * len(m.players)
    for i, j, s in zip(m.a.tolist(), m.b.tolist(), m.score.tolist(), strict=True):
        ra, rb = r[i], r[j]
        ea = 1.0 / (1.0 + 10.0 ** ((rb - ra) / scale))
        eb = 1.0 / (1.0 + 10.0 ** ((ra - rb) / scale))
        r[i] = ra + k * (s - ea)
        r[j] = rb + k * (1.0 - s - eb)
    return np.array(r, dtype=np.float64)


def _elo_orders(n_matches: int, n_lanes: int, rng: np.random.Generator) -> Iterator[NDArray[np.intp]]:
    """Bootstrap match orders, block by block: row t of a block holds, per lane, the match played at that step.

    Each lane's whole order is n_matches draws with replacement from 0..n_matches-1.
    """
    for start in range(0, n_matches, _ELO_BLOCK):
        yield rng.integers(0, n_matches, size=(min(_ELO_BLOCK, n_matches - start), n_lanes), dtype=np.intp)


def _elo_lanes(
    m: _Matches,
    orders: Iterator[NDArray[np.intp]],
    n_lanes: int,
    k: float,
    initial: float,
    scale: float,
) -> NDArray[np.float64]:
    """Run Elo in ``n_lanes`` independent lanes at once, lane l playing the matches in its own order.

    The loop runs over match positions only; each step updates every lane with a few vector
    operations of length n_lanes. Ratings are kept in units of scale / ln(10), where the
    expected score is 1 / (1 + exp(u_b - u_a)), and player p of lane l sits at index p * n_lanes + l.
    """
    c = math.log(10.0) / scale
    kc = k * c
    lanes = np.arange(n_lanes)
    a_at = m.a * n_lanes
    b_at = m.b * n_lanes
    target = kc * m.score

    def next_block() -> tuple[NDArray[np.intp], NDArray[np.float64]] | None:
        order = next(orders, None)
        if order is None:
            return None
        # Row t: indices of the two players of each lane's match t, all a's then all b's.
        where = np.empty((order.shape[0], 2, n_lanes), dtype=np.intp)
        np.add(a_at[order], lanes, out=where[:, 0])
        np.add(b_at[order], lanes, out=where[:, 1])
        return where.reshape(order.shape[0], 2 * n_lanes), target[order]

    u = np.full(len(m.players) * n_lanes, initial * c)
    pair = np.empty(2 * n_lanes)
    ua, ub = pair[:n_lanes], pair[n_lanes:]
    step = np.empty(n_lanes)
    # Bound names and positional out= arguments trim per-call overhead from the loop body, which
    # runs once per match position on short vectors.
    take, subtract, add, divide, exp = u.take, np.subtract, np.add, np.divide, np.exp
    # The next block is drawn and laid out in a helper thread while this one is played: its large
    # numpy operations release the GIL, and the draws stay in order, so results do not change.
    with ThreadPoolExecutor(max_workers=1) as pool, np.errstate(over="ignore"):
        pending = pool.submit(next_block)
        while (block := pending.result()) is not None:
            pending = pool.submit(next_block)
            where, targets = block
            for t in range(where.shape[0]):
                idx = where[t]
                take(idx, None, pair, "clip")  # indices are valid; "clip" avoids a buffered copy
                subtract(ub, ua, step)
                exp(step, step)
                add(step, 1.0, step)
                divide(kc, step, step)  # k c E_a
                subtract(targets[t], step, step)  # k c (S_a - E_a)
                add(ua, step, ua)
                subtract(ub, step, ub)
                u[idx] = pair
    return u.reshape(len(m.players), n_lanes).T / c


def elo_ratings(
    matches: Sequence[tuple[str, str, str]],
    *,
    k: float = 40.0,
    initial: float = 1000.0,
    scale: float = 400.0,
    n_bootstrap: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> Ratings:
    """Sequential (online) Elo ratings as chatbot arenas compute them, with bootstrap intervals.

    Every player starts at ``initial``; each match in order updates
    E_a = 1 / (1 + 10^((R_b - R_a) / scale)), R_a += k (S_a - E_a), R_b += k ((1 - S_a) - E_b), with
    S_a = 1, 0, 1/2 for a win, loss, tie (LMSYS Chatbot Arena, ``compute_online_elo``).

    ``value`` is the Elo after the matches in the given order. Elo depends on match order, so the
    interval is a bootstrap over orders: each of ``n_bootstrap`` replicates plays n matches drawn
    with replacement, in the drawn order (LMSYS's ``get_bootstrap_result``); the interval is the
    percentile interval of each player's replicate ratings. All replicates are run together as
    vectors over replicates, looping over match positions only.

    Args:
        matches: ``(a, b, outcome)`` triples, outcome ``"a"``, ``"b"`` or ``"tie"``.
        k: Update step (K-factor).
        initial: Starting rating of every player.
        scale: Rating difference for 10:1 odds.
        n_bootstrap: Number of bootstrap replicates (>= 2).
        level: Confidence level of the intervals.
        seed: Seed of the bootstrap draws; the same seed gives bit-identical results.

    Returns:
        Ratings keyed by player name.
    """
    m, n_bootstrap, level, rng = _checked(matches, n_bootstrap, level, seed, scale)
    value = _elo_sequential(m, k, initial, scale)
    boot = _elo_lanes(m, _elo_orders(m.score.size, n_bootstrap, rng), n_bootstrap, k, initial, scale)
    return _ratings(m, value, boot, level, "elo")


class _Pairs(NamedTuple):
    """The pairs of players i < j that met at least once."""

    i: NDArray[np.intp]
    j: NDArray[np.intp]


class _Results(NamedTuple):
    """The distinct results among the matches."""

    pair: NDArray[np.intp]  # index into _Pairs
    kind: NDArray[np.intp]  # 0: i beat j, 1: j beat i, 2: tie
    frequency: NDArray[np.float64]  # number of matches with this result


def _tabulate(m: _Matches) -> tuple[_Pairs, _Results]:
    i = np.minimum(m.a, m.b)
    j = np.maximum(m.a, m.b)
    kind = np.where(m.score == 0.5, 2, np.where((m.score == 1.0) == (m.a < m.b), 0, 1))
    keys, frequency = np.unique(np.stack([i, j, kind], axis=1), axis=0, return_counts=True)
    pair_keys, pair = np.unique(keys[:, :2], axis=0, return_inverse=True)
    return _Pairs(pair_keys[:, 0], pair_keys[:, 1]), _Results(pair.ravel(), keys[:, 2], frequency.astype(np.float64))


def _win_counts(
    n_pairs: int, res: _Results, counts: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Wins of i over j and of j over i per pair, a tie counting 1/2 each, when result q occurs counts[r, q] times."""
    w_ij = np.zeros((n_pairs, counts.shape[0]), dtype=np.float64)
    w_ji = np.zeros((n_pairs, counts.shape[0]), dtype=np.float64)
    # Results are distinct, so no pair repeats within any one of these fancy-indexed updates.
    by_result = counts.T
    w_ij[res.pair[res.kind == 0]] = by_result[res.kind == 0]
    w_ji[res.pair[res.kind == 1]] = by_result[res.kind == 1]
    half = 0.5 * by_result[res.kind == 2]
    w_ij[res.pair[res.kind == 2]] += half
    w_ji[res.pair[res.kind == 2]] += half
    return np.ascontiguousarray(w_ij.T), np.ascontiguousarray(w_ji.T)


def _strongly_connected(
    pairs: _Pairs, n_players: int, w_ij: NDArray[np.float64], w_ji: NDArray[np.float64]
) -> NDArray[np.bool_]:
    """Per row: does every player reach every other along "won at least half a game against" edges?

    This is the condition under which the Bradley-Terry likelihood has a finite maximum
    (Zermelo 1929; Ford 1957): no group of players loses every comparison with the rest.
    """
    beats = np.zeros((w_ij.shape[0], n_players, n_players), dtype=bool)
    beats[:, pairs.i, pairs.j] = w_ij > 0
    beats[:, pairs.j, pairs.i] = w_ji > 0
    ok = np.ones(w_ij.shape[0], dtype=bool)
    for edges in (beats, np.swapaxes(beats, 1, 2)):
        reached = np.zeros((w_ij.shape[0], n_players), dtype=bool)
        reached[:, 0] = True
        while True:
            grown = reached | np.any(reached[:, :, None] & edges, axis=1)
            if np.array_equal(grown, reached):
                break
            reached = grown
        ok &= reached.all(axis=1)
    return ok


def _solve_spd(a: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.float64]:
    """Solve a[r] x[r] = b[r] for symmetric positive-definite a[r], by Cholesky factors.

    numpy has no batched triangular solve, and its batched LU solve is several times slower
    for many small systems, so the substitutions run as vector operations over the batch.
    """
    low = np.linalg.cholesky(a)
    n = b.shape[1]
    y = np.empty_like(b)
    for i in range(n):
        y[:, i] = (b[:, i] - np.einsum("rj,rj->r", low[:, i, :i], y[:, :i])) / low[:, i, i]
    x = np.empty_like(b)
    for i in reversed(range(n)):
        x[:, i] = (y[:, i] - np.einsum("rj,rj->r", low[:, i + 1 :, i], x[:, i + 1 :])) / low[:, i, i]
    return x


def _bradley_terry_fit(
    pairs: _Pairs, n_players: int, w_ij: NDArray[np.float64], w_ji: NDArray[np.float64], start: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Maximum-likelihood strengths beta (natural-log odds, mean 0), one row per row of win counts.

    Damped Newton on the concave log-likelihood, summed over pairs with d = beta_i - beta_j,
    l = sum w_ij log sigma(d) + w_ji log sigma(-d) = -sum (n log(1 + e^-d) + w_ji d), n = w_ij + w_ji,
    from ``start`` with the last player's beta held fixed (l is invariant to a common shift).
    Minus the Hessian is the graph Laplacian of the weights n sigma(d) sigma(-d). Steps are halved
    while they would lower l.
    """
    n_fit, p = w_ij.shape[0], n_players
    games = w_ij + w_ji
    on_i = np.zeros((pairs.i.size, p))
    on_i[np.arange(pairs.i.size), pairs.i] = 1.0
    on_j = np.zeros((pairs.j.size, p))
    on_j[np.arange(pairs.j.size), pairs.j] = 1.0
    won = w_ij @ on_i + w_ji @ on_j
    diagonal = np.arange(p)

    def evaluate(beta: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        d = beta[:, pairs.i] - beta[:, pairs.j]
        e = np.exp(-d)
        return 1.0 / (1.0 + e), -np.sum(games * np.log1p(e) + w_ji * d, axis=1)

    beta = np.tile(start, (n_fit, 1))
    with np.errstate(over="ignore", invalid="ignore"):
        prob, ll = evaluate(beta)
        for _ in range(_BT_MAX_ITER):
            grad = won - (games * prob) @ on_i - (games * (1.0 - prob)) @ on_j
            weight = games * prob * (1.0 - prob)
            laplacian = np.zeros((n_fit, p, p))
            laplacian[:, pairs.i, pairs.j] = -weight
            laplacian[:, pairs.j, pairs.i] = -weight
            laplacian[:, diagonal, diagonal] = weight @ (on_i + on_j)
            delta = np.zeros((n_fit, p))
            delta[:, :-1] = _solve_spd(laplacian[:, :-1, :-1], grad[:, :-1])
            step = np.ones(n_fit)
            while True:
                candidate = beta + step[:, None] * delta
                prob_new, ll_new = evaluate(candidate)
                # Written so that a NaN log-likelihood (from an overflowing step) also counts as worse.
                worse = ~(ll_new >= ll - 1e-12 * (1.0 + np.abs(ll)))
                if not worse.any():
                    break
                step[worse] /= 2.0
            beta, prob, ll = candidate, prob_new, ll_new
            if np.max(np.abs(step[:, None] * delta)) < _BT_TOL:
                centred: NDArray[np.float64] = beta - beta.mean(axis=1, keepdims=True)
                return centred
    raise RuntimeError("Bradley-Terry fit did not converge")


def bradley_terry(
    matches: Sequence[tuple[str, str, str]],
    *,
    initial: float = 1000.0,
    scale: float = 400.0,
    n_bootstrap: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> Ratings:
    """Bradley-Terry ratings by maximum likelihood, on the Elo scale, with bootstrap intervals.

    Model: P(i beats j) = 1 / (1 + 10^((R_j - R_i) / scale)); a tie counts as half a win for each
    player (as LMSYS's ``compute_mle_elo``, which weights ties 1/2). Equivalently, with
    beta = R ln(10) / scale, the logistic regression W_ij ~ sigma(beta_i - beta_j) on the win
    counts W. Ratings are anchored so that their mean over players is ``initial``
    (R_i = initial + scale / ln(10) (beta_i - mean beta)); unlike Elo they do not depend on
    match order.

    The interval is a bootstrap over matches: each replicate redraws n matches with replacement
    (as a multinomial count per distinct match) and refits; it is the percentile interval of
    each player's replicate ratings.

    The maximum likelihood exists only if no group of players lost (or won) every comparison with
    the others; otherwise, in the data or in any bootstrap replicate, :class:`StatsInputError` is
    raised (Elo stays defined there).

    Args:
        matches: ``(a, b, outcome)`` triples, outcome ``"a"``, ``"b"`` or ``"tie"``.
        initial: Mean rating over players.
        scale: Rating difference for 10:1 odds.
        n_bootstrap: Number of bootstrap replicates (>= 2).
        level: Confidence level of the intervals.
        seed: Seed of the bootstrap draws; the same seed gives bit-identical results.

    Returns:
        Ratings keyed by player name.
    """
    m, n_bootstrap, level, rng = _checked(matches, n_bootstrap, level, seed, scale)
    p = len(m.players)
    pairs, res = _tabulate(m)
    w_ij, w_ji = _win_counts(pairs.i.size, res, res.frequency[None, :])
    if not _strongly_connected(pairs, p, w_ij, w_ji)[0]:
        raise StatsInputError(
            "matches: some group of players lost (or won) every comparison with the others, so the "
            "Bradley-Terry ratings have no finite maximum-likelihood estimate"
        )
    beta = _bradley_terry_fit(pairs, p, w_ij, w_ji, np.zeros(p))[0]
    # Resampling n matches with replacement = multinomial counts over the distinct results.
    counts = rng.multinomial(m.score.size, res.frequency / m.score.size, size=n_bootstrap).astype(np.float64)
    boot_ij, boot_ji = _win_counts(pairs.i.size, res, counts)
    failed = int(np.count_nonzero(~_strongly_connected(pairs, p, boot_ij, boot_ji)))
    if failed:
        raise StatsInputError(
            f"n_bootstrap={n_bootstrap}: in {failed} replicates some group of players lost (or won) every "
            "comparison, so the maximum-likelihood ratings do not exist there; collect more matches"
        )
    # Replicates lie near the full-data estimate, so starting there saves Newton iterations.
    boot_beta = _bradley_terry_fit(pairs, p, boot_ij, boot_ji, beta)
    to_rating = scale / math.log(10.0)
    return _ratings(m, initial + to_rating * beta, initial + to_rating * boot_beta, level, "bradley-terry")
