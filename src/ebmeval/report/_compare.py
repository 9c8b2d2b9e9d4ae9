"""Paired comparisons of runs on the samples they share."""

from __future__ import annotations

import itertools
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from ..runner import sample_values
from ..stats import (
    StatsInputError,
    cohens_d,
    holm,
    mcnemar,
    newcombe_paired_ci,
    paired_bootstrap_diff,
    paired_ttest,
)
from ..store import RunStore
from ..tasks import is_binary_metric

Key = str
"""A sample id: several epochs of a sample are one value (their mean), the sample being the unit of analysis."""


@dataclass(frozen=True)
class Contrast:
    """One metric compared between two runs on the samples both scored.

    Values are per sample (the mean over its epochs). Metrics their scorer declares binary
    (``@scorer(NAME, binary=...)``) use McNemar's exact test; every other metric, and a
    binary one whose epoch means are not all 0 or 1, the paired t-test with Cohen's
    d_z = mean(a − b) / SD(a − b). The observed values never choose the test.
    ``pvalue_adjusted`` is Holm's adjustment over every contrast reported together.
    ``ci`` is the 95% interval of mean(a) − mean(b), named by ``ci_method``: Newcombe's
    square-and-add interval for paired proportions (:func:`ebmeval.stats.newcombe_paired_ci`)
    where McNemar's test applies, else the percentile bootstrap over samples, the pairs of
    per-sample values resampled together (:func:`ebmeval.stats.paired_bootstrap_diff`).
    """

    scorer: str
    metric: str
    run_a: str
    run_b: str
    n: int
    mean_a: float
    mean_b: float
    test: str
    statistic: float | None
    pvalue: float | None
    effect_size: float | None
    ci: tuple[float, float] | None = None
    ci_method: str = ""
    pvalue_adjusted: float | None = None
    note: str = ""

    @property
    def difference(self) -> float:
        """mean(a) − mean(b)."""
        return self.mean_a - self.mean_b


def metric_values(store: RunStore, run_id: str) -> dict[tuple[str, str], dict[Key, float]]:
    """Per (scorer, metric): each sample's value in a run, the mean over its epochs (``None`` left out)."""
    return {
        key: {sample: value for sample, value in by_sample.items() if value is not None}
        for key, by_sample in sample_values(store, run_id).items()
    }


def compare(
    a: dict[tuple[str, str], dict[Key, float]],
    b: dict[tuple[str, str], dict[Key, float]],
    run_a: str,
    run_b: str,
    binary: Collection[tuple[str, str]] = (),
) -> list[Contrast]:
    """Contrasts of every metric the two runs share, unadjusted; ``binary`` lists the declared binary keys."""
    contrasts = []
    for key in sorted(set(a) & set(b)):
        shared = sorted(set(a[key]) & set(b[key]))
        if len(shared) < 2:
            continue
        x = np.array([a[key][s] for s in shared])
        y = np.array([b[key][s] for s in shared])
        contrasts.append(_contrast(key, run_a, run_b, x, y, key in binary))
    return contrasts


def binary_keys(store: RunStore, run_id: str, keys: Collection[tuple[str, str]]) -> set[tuple[str, str]]:
    """Those of the (score set label, metric) ``keys`` of a run whose scorer declares the metric binary."""
    names = {s.label: s.name for s in store.score_sets(run_id)}
    return {(label, metric) for label, metric in keys if is_binary_metric(names.get(label, label), metric)}


def compare_runs(store: RunStore, run_ids: Sequence[str], *, alpha: float = 0.05) -> list[Contrast]:
    """Every pair of runs, every shared metric, with Holm-adjusted p-values over all tests."""
    ids = [store.get_run(r).run_id for r in run_ids]
    values = {r: metric_values(store, r) for r in ids}
    binary = {r: binary_keys(store, r, values[r]) for r in ids}
    contrasts = [
        c for x, y in itertools.combinations(ids, 2) for c in compare(values[x], values[y], x, y, binary[x] & binary[y])
    ]
    tested = [i for i, c in enumerate(contrasts) if c.pvalue is not None]
    if tested:
        adjusted = holm([float(contrasts[i].pvalue or 0.0) for i in tested], alpha=alpha).pvalues
        for i, p in zip(tested, adjusted, strict=True):
            contrasts[i] = replace(contrasts[i], pvalue_adjusted=float(p))
    return contrasts


def _contrast(
    key: tuple[str, str], run_a: str, run_b: str, x: NDArray[np.float64], y: NDArray[np.float64], binary: bool
) -> Contrast:
    scorer, metric = key

    def made(
        test: str,
        statistic: float | None,
        pvalue: float | None,
        effect: float | None,
        note: str = "",
        interval: tuple[tuple[float, float] | None, str] | None = None,
    ) -> Contrast:
        ci, ci_method = interval or _bootstrap_interval(x, y)
        return Contrast(
            scorer=scorer,
            metric=metric,
            run_a=run_a,
            run_b=run_b,
            n=int(x.size),
            mean_a=float(x.mean()),
            mean_b=float(y.mean()),
            test=test,
            statistic=statistic,
            pvalue=pvalue,
            effect_size=effect,
            ci=ci,
            ci_method=ci_method,
            note=note,
        )

    whole = np.isin(x, (0.0, 1.0)).all() and np.isin(y, (0.0, 1.0)).all()
    if binary and whole:
        result = mcnemar(x, y, exact=True)
        return made("mcnemar", result.statistic, result.pvalue, None, interval=_newcombe_interval(x, y))
    note = "binary metric averaged over epochs: paired t on the per-sample means" if binary else ""
    try:
        result = paired_ttest(x, y)
        effect = cohens_d(x, y, paired=True).value
    except StatsInputError as exc:  # identical differences: no test is defined
        return made("paired-t", None, None, None, "; ".join(filter(None, (note, str(exc)))))
    return made("paired-t", result.statistic, result.pvalue, effect, note)


NEWCOMBE = "Newcombe paired score"
BOOTSTRAP = "paired bootstrap over samples"


def _newcombe_interval(x: NDArray[np.float64], y: NDArray[np.float64]) -> tuple[tuple[float, float], str]:
    """Newcombe's interval of mean(x) − mean(y) for paired 0/1 values."""
    a, b = x == 1.0, y == 1.0
    counts = (int((a & b).sum()), int((a & ~b).sum()), int((~a & b).sum()), int((~a & ~b).sum()))
    return newcombe_paired_ci(*counts), NEWCOMBE


def _bootstrap_interval(x: NDArray[np.float64], y: NDArray[np.float64]) -> tuple[tuple[float, float] | None, str]:
    """Percentile bootstrap interval of mean(x) − mean(y), the pairs resampled together (seed 0)."""
    return paired_bootstrap_diff(x, y, seed=0).ci, BOOTSTRAP
