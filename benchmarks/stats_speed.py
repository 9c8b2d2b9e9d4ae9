"""Timings of the resampling statistics in ebmeval.stats against naive alternatives.

Run from the repository root: ``python benchmarks/stats_speed.py``. Prints a table and writes
``benchmarks/results/stats_speed.json``. Each timing is the best of several runs after a warm-up;
baselines that would take minutes are timed on a slice of the work and scaled up, and say so.
Wall-clock time is what a user waits; CPU time (all threads of this process) is printed beside it
because on a shared machine the wall clock also counts time spent waiting for a core.
"""

import json
import os
import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import numpy as np
import scipy
import scipy.stats

from ebmeval.stats import bootstrap_ci, bradley_terry, elo_ratings
from ebmeval.stats._ranking import _bradley_terry_fit, _encode, _tabulate, _win_counts

N_VALUES = 10_000
N_RESAMPLES = 10_000
N_MATCHES = 20_000
N_PLAYERS = 30
N_BOOTSTRAP = 1_000
REPEATS = 5
RESULTS = Path(__file__).parent / "results" / "stats_speed.json"


class Timing(NamedTuple):
    wall: float
    cpu: float

    def scaled(self, factor: float) -> "Timing":
        return Timing(self.wall * factor, self.cpu * factor)


def best_of(func: Callable[[], object], repeats: int = REPEATS) -> Timing:
    func()  # warm-up: imports, caches, page faults
    walls, cpus = [], []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        func()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return Timing(min(walls), min(cpus))


def tournament(seed: int) -> list[tuple[str, str, str]]:
    rng = np.random.default_rng(seed)
    strength = rng.normal(0, 1, N_PLAYERS)
    a = rng.integers(0, N_PLAYERS, N_MATCHES)
    b = (a + rng.integers(1, N_PLAYERS, N_MATCHES)) % N_PLAYERS
    p_a = 1 / (1 + np.exp(strength[b] - strength[a]))
    u = rng.random(N_MATCHES)
    outcome = np.where(u < 0.1, "tie", np.where(rng.random(N_MATCHES) < p_a, "a", "b"))
    return [(f"model-{i}", f"model-{j}", str(o)) for i, j, o in zip(a, b, outcome, strict=True)]


def naive_elo(matches: list[tuple[str, str, str]], order: np.ndarray) -> dict[str, float]:
    """Plain-Python sequential Elo over one bootstrap order (LMSYS ``compute_online_elo``)."""
    rating: dict[str, float] = {}
    score = {"a": 1.0, "b": 0.0, "tie": 0.5}
    for t in order.tolist():
        a, b, outcome = matches[t]
        ra, rb = rating.get(a, 1000.0), rating.get(b, 1000.0)
        ea = 1 / (1 + 10 ** ((rb - ra) / 400))
        eb = 1 / (1 + 10 ** ((ra - rb) / 400))
        rating[a] = ra + 40 * (score[outcome] - ea)
        rating[b] = rb + 40 * (1 - score[outcome] - eb)
    return rating


def main() -> None:
    rows: list[dict[str, object]] = []
    print(f"{'ebmeval.stats':<40} {'wall (cpu) s':>15} | {'baseline':<36} {'wall (cpu) s':>17} | speedup (wall)")

    def record(name: str, ours: Timing, baseline: str, theirs: Timing, scaled_from: str | None) -> None:
        rows.append(
            {
                "benchmark": name,
                "seconds": round(ours.wall, 4),
                "cpu_seconds": round(ours.cpu, 4),
                "baseline": baseline,
                "baseline_seconds": round(theirs.wall, 4),
                "baseline_cpu_seconds": round(theirs.cpu, 4),
                "speedup": round(theirs.wall / ours.wall, 1),
                "baseline_scaled_from": scaled_from,
            }
        )
        note = f" (scaled from {scaled_from})" if scaled_from else ""
        print(
            f"{name:<40} {ours.wall:6.3f} ({ours.cpu:6.3f}) | {baseline:<36} {theirs.wall:7.3f} ({theirs.cpu:7.3f})"
            f" | x{theirs.wall / ours.wall:.1f}{note}"
        )

    x = np.random.default_rng(0).normal(size=N_VALUES)
    label = f"bootstrap_ci n={N_VALUES:,} B={N_RESAMPLES:,}"

    def ours_percentile() -> object:
        return bootstrap_ci(x, np.mean, n_resamples=N_RESAMPLES, method="percentile", seed=1)

    def scipy_percentile() -> object:
        # batch bounds scipy's memory to 1,000 resamples at a time (all at once needs 1.6 GB).
        return scipy.stats.bootstrap(
            (x,), np.mean, n_resamples=N_RESAMPLES, method="percentile", batch=1000, random_state=1
        )

    percentile = best_of(ours_percentile)
    record(f"{label} percentile", percentile, "scipy.stats.bootstrap", best_of(scipy_percentile), None)

    def ours_bca() -> object:
        return bootstrap_ci(x, np.mean, n_resamples=N_RESAMPLES, method="bca", seed=1)

    def scipy_bca() -> object:
        return scipy.stats.bootstrap((x,), np.mean, n_resamples=N_RESAMPLES, method="BCa", batch=1000, random_state=1)

    record(f"{label} BCa", best_of(ours_bca), "scipy.stats.bootstrap", best_of(scipy_bca, repeats=1), None)

    rng = np.random.default_rng(2)
    slice_n = 1_000

    def python_loop() -> object:
        return [float(np.mean(x[rng.integers(0, N_VALUES, N_VALUES)])) for _ in range(slice_n)]

    record(
        f"{label} percentile",
        percentile,
        "Python loop, a resample at a time",
        best_of(python_loop, repeats=1).scaled(N_RESAMPLES / slice_n),
        f"{slice_n:,} resamples",
    )

    matches = tournament(3)
    elo_label = f"elo_ratings {N_MATCHES:,} matches B={N_BOOTSTRAP:,}"
    elo = best_of(lambda: elo_ratings(matches, n_bootstrap=N_BOOTSTRAP, seed=4))
    orders = np.random.default_rng(5).integers(0, N_MATCHES, (20, N_MATCHES))
    naive = best_of(lambda: [naive_elo(matches, order) for order in orders], repeats=1)
    record(elo_label, elo, "Python loop, a round at a time", naive.scaled(N_BOOTSTRAP / 20), "20 rounds")

    bt_label = f"bradley_terry {N_MATCHES:,} matches B={N_BOOTSTRAP:,}"
    bt = best_of(lambda: bradley_terry(matches, n_bootstrap=N_BOOTSTRAP, seed=4))
    m = _encode(matches)
    pairs, res = _tabulate(m)
    counts = np.random.default_rng(6).multinomial(N_MATCHES, res.frequency / N_MATCHES, size=50).astype(float)
    w_ij, w_ji = _win_counts(pairs.i.size, res, counts)
    start = np.zeros(len(m.players))

    def one_fit_at_a_time() -> object:
        return [_bradley_terry_fit(pairs, len(m.players), w_ij[r : r + 1], w_ji[r : r + 1], start) for r in range(50)]

    record(
        bt_label,
        bt,
        "the same fit, a round at a time",
        best_of(one_fit_at_a_time, repeats=1).scaled(N_BOOTSTRAP / 50),
        "50 rounds",
    )

    report = {
        "machine": {
            "cpus": os.cpu_count(),
            "load_average_1min": round(os.getloadavg()[0], 2),
            "python": platform.python_version(),
            "numpy": np.__version__,
            "scipy": scipy.__version__,
        },
        "repeats": REPEATS,
        "results": rows,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")
    print(f"load average {report['machine']['load_average_1min']} on {os.cpu_count()} CPUs; wrote {RESULTS}")


if __name__ == "__main__":
    main()
