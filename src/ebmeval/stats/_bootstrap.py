"""Nonparametric bootstrap confidence intervals (percentile and BCa)."""

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Literal, Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _scipy
from . import _validate as check
from ._errors import StatsInputError
from ._results import Estimate

# Resampled values materialised at once: bounds memory (two 8 MiB index blocks) independently of n.
_CHUNK_ELEMENTS = 1 << 20

BootstrapMethod = Literal["percentile", "bca"]
_METHODS: tuple[BootstrapMethod, ...] = ("percentile", "bca")


class Statistic(Protocol):
    """A reduction such as :func:`numpy.mean`: called with ``axis=-1`` it reduces the last axis."""

    def __call__(self, sample: NDArray[np.float64], /, *, axis: int) -> ArrayLike:
        """Reduce ``sample`` along ``axis``."""
        ...


# Maps each sample to a 2-D batch of resamples, one per row.
_Batch = Callable[[NDArray[np.float64]], NDArray[np.float64]]


def _evaluator(stat: Statistic, samples: tuple[NDArray[np.float64], ...]) -> Callable[[_Batch], NDArray[np.float64]]:
    """Return f(batch) = stat(batch(samples[0])) - stat(batch(samples[1])) (or just the first term), per row."""

    def evaluate(batch: _Batch) -> NDArray[np.float64]:
        first = batch(samples[0])
        result = np.asarray(stat(first, axis=-1), dtype=np.float64)
        if len(samples) == 2:
            result = result - np.asarray(stat(batch(samples[1]), axis=-1), dtype=np.float64)
        if result.shape != first.shape[:-1]:
            raise StatsInputError(
                f"stat={stat!r}: must reduce the last axis when called with axis=-1; "
                f"a {first.shape} batch gave shape {result.shape}"
            )
        return result

    return evaluate


def _take(sample: NDArray[np.float64], idx: NDArray[np.intp]) -> NDArray[np.float64]:
    return sample[idx]


def _drop_one(sample: NDArray[np.float64], before: NDArray[np.bool_]) -> NDArray[np.float64]:
    """Row r of the result is the sample without one element: x[i] where before[r, i], else x[i + 1]."""
    return np.where(before, sample[:-1], sample[1:])


def _replicates(
    n: int, n_resamples: int, rng: np.random.Generator, evaluate: Callable[[_Batch], NDArray[np.float64]]
) -> NDArray[np.float64]:
    """Evaluate the statistic on ``n_resamples`` bootstrap resamples.

    Resample r takes the indices in row r of ``rng.integers(0, n, (rows, n))``, drawn block after
    block, which is how :func:`scipy.stats.bootstrap` draws with ``batch=rows``. The next block
    is drawn in a helper thread while the current one is evaluated: both steps are numpy loops
    that release the GIL, and the draw order, hence the result, is unchanged.
    """
    rows = max(1, _CHUNK_ELEMENTS // n)
    starts = range(0, n_resamples, rows)
    out = np.empty(n_resamples, dtype=np.float64)

    def draw(start: int) -> NDArray[np.intp]:
        return rng.integers(0, n, size=(min(rows, n_resamples - start), n), dtype=np.intp)

    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(draw, starts[0])
        for i, start in enumerate(starts):
            idx = pending.result()
            if i + 1 < len(starts):
                pending = pool.submit(draw, starts[i + 1])
            out[start : start + idx.shape[0]] = evaluate(partial(_take, idx=idx))
    return out


def _jackknife(n: int, evaluate: Callable[[_Batch], NDArray[np.float64]]) -> NDArray[np.float64]:
    """Leave-one-out values of the statistic, theta_(i) for i = 0..n-1."""
    rows = max(1, _CHUNK_ELEMENTS // (n - 1))
    position = np.arange(n - 1)
    out = np.empty(n, dtype=np.float64)
    for start in range(0, n, rows):
        left_out = np.arange(start, min(start + rows, n))
        before = position[None, :] < left_out[:, None]
        out[start : start + left_out.size] = evaluate(partial(_drop_one, before=before))
    return out


def _interval(
    theta_hat: float,
    theta_b: NDArray[np.float64],
    level: float,
    method: BootstrapMethod,
    jackknife: Callable[[], NDArray[np.float64]],
) -> tuple[float, float]:
    """Percentile or BCa interval from the bootstrap distribution ``theta_b``."""
    if not np.all(np.isfinite(theta_b)):
        raise StatsInputError("stat: returned NaN or infinity for some bootstrap resamples")
    if np.all(theta_b == theta_b[0]):
        # A point-mass bootstrap distribution: every method's interval collapses onto it.
        return float(theta_b[0]), float(theta_b[0])
    alpha = (1.0 - level) / 2.0
    if method == "percentile":
        lo_q, hi_q = alpha, 1.0 - alpha
    else:
        share_below = (np.count_nonzero(theta_b < theta_hat) + np.count_nonzero(theta_b <= theta_hat)) / (
            2.0 * theta_b.size
        )
        if share_below in (0.0, 1.0):
            raise StatsInputError(
                "method='bca': the estimate lies outside the bootstrap distribution, so the bias "
                "correction is infinite; use method='percentile'"
            )
        z0 = _scipy.norm_ppf(share_below)
        theta_i = jackknife()
        dev = theta_i.mean() - theta_i
        ss = float(np.sum(dev**2))
        if ss == 0.0:
            raise StatsInputError(
                "method='bca': all leave-one-out values of stat are equal, so the acceleration is "
                "undefined; use method='percentile'"
            )
        accel = float(np.sum(dev**3)) / (6.0 * ss**1.5)
        z_alpha = _scipy.norm_ppf(alpha)
        lo_q, hi_q = (_scipy.norm_cdf(z0 + (z0 + z) / (1.0 - accel * (z0 + z))) for z in (z_alpha, -z_alpha))
    low, high = np.percentile(theta_b, [100.0 * lo_q, 100.0 * hi_q])
    return float(low), float(high)


def _bootstrap(
    samples: tuple[NDArray[np.float64], ...],
    stat: Statistic,
    n_resamples: int,
    level: float,
    method: BootstrapMethod,
    seed: int,
) -> Estimate:
    """The estimate of :func:`bootstrap_ci` (one sample) or :func:`paired_bootstrap_diff` (a pair).

    ``samples`` come checked by the caller; the bootstrap settings are checked here.
    """
    n_resamples = check.count(n_resamples, "n_resamples", 2)
    level = check.level(level)
    method = check.choice(method, "method", _METHODS)
    rng = check.rng(seed)
    n = samples[0].size
    evaluate = _evaluator(stat, samples)
    theta_hat = float(evaluate(lambda sample: sample[None, :])[0])
    theta_b = _replicates(n, n_resamples, rng, evaluate)
    ci = _interval(theta_hat, theta_b, level, method, lambda: _jackknife(n, evaluate))
    name = "BCa" if method == "bca" else "percentile"
    return Estimate(
        value=theta_hat,
        n=n,
        method=f"bootstrap {name}",
        ci=ci,
        level=level,
        se=float(np.std(theta_b, ddof=1)),
    )


def bootstrap_ci(
    values: ArrayLike,
    stat: Statistic = np.mean,
    *,
    n_resamples: int = 10_000,
    level: float = 0.95,
    method: BootstrapMethod = "percentile",
    seed: int = 0,
) -> Estimate:
    """Bootstrap confidence interval of ``stat(values)``.

    Draws ``n_resamples`` samples of size n with replacement and evaluates ``stat`` on each,
    giving the bootstrap distribution theta*_1..theta*_B (Efron & Tibshirani 1993).

    * ``"percentile"``: the alpha/2 and 1 - alpha/2 quantiles of theta*, alpha = 1 - level.
    * ``"bca"`` (bias-corrected and accelerated, Efron 1987): quantiles
      Phi(z0 + (z0 + z_q) / (1 - a (z0 + z_q))) for z_q = Phi^-1(alpha/2), Phi^-1(1 - alpha/2), with
      z0 = Phi^-1((#{theta* < theta} + #{theta* <= theta}) / 2B) and
      a = sum(d_i^3) / (6 (sum d_i^2)^(3/2)), d_i = mean(theta_(.)) - theta_(i) over the jackknife values.

    Quantiles interpolate linearly (``numpy.percentile``). The resamples, and so the interval, are
    those of ``scipy.stats.bootstrap(..., batch=2**20 // n, random_state=rng)`` with
    ``rng = numpy.random.Generator(numpy.random.SFC64(seed))``.

    Edge cases: if every resample gives the same value (e.g. constant data) the interval is that
    value for both methods. BCa raises :class:`StatsInputError` when z0 or a is infinite or
    undefined (the estimate outside the bootstrap distribution, or equal jackknife values).

    Args:
        values: One-dimensional sample, at least 2 finite values.
        stat: Reduction accepting ``axis=-1`` (``np.mean``, ``np.median``, ...); it receives
            2-D batches of resamples.
        n_resamples: Number of bootstrap resamples (>= 2).
        level: Confidence level.
        method: ``"percentile"`` or ``"bca"``.
        seed: Seed of the random generator; the same seed gives bit-identical results.

    Returns:
        Estimate with ``value = stat(values)``, the interval, and ``se`` = SD of theta* (ddof=1).
    """
    return _bootstrap((check.vector(values, "values"),), stat, n_resamples, level, method, seed)


def paired_bootstrap_diff(
    a: ArrayLike,
    b: ArrayLike,
    stat: Statistic = np.mean,
    *,
    n_resamples: int = 10_000,
    level: float = 0.95,
    method: BootstrapMethod = "percentile",
    seed: int = 0,
) -> Estimate:
    """Bootstrap confidence interval of ``stat(a) - stat(b)`` for paired observations.

    Pairs (a_i, b_i) are resampled together, as when two models are scored on the same items, so
    the interval reflects the item-level correlation. Each resample gives
    theta* = stat(a*) - stat(b*); the interval is then formed as in :func:`bootstrap_ci` (the
    BCa jackknife leaves out one pair at a time). Equals ``scipy.stats.bootstrap((a, b),
    lambda x, y, axis: stat(x, axis=axis) - stat(y, axis=axis), paired=True, ...)`` under the
    conditions given in :func:`bootstrap_ci`.

    Args:
        a: Scores of the first system, one per item.
        b: Scores of the second system on the same items.
        stat: Reduction accepting ``axis=-1``.
        n_resamples: Number of bootstrap resamples (>= 2).
        level: Confidence level.
        method: ``"percentile"`` or ``"bca"``.
        seed: Seed of the random generator.

    Returns:
        Estimate with ``value = stat(a) - stat(b)``.
    """
    return _bootstrap(check.paired(a, b), stat, n_resamples, level, method, seed)
