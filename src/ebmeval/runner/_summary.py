"""Aggregate a stored run into metrics with confidence intervals."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..models import Usage
from ..stats import bootstrap_ci
from ..store import RunRecord, RunStore


@dataclass(frozen=True)
class MetricSummary:
    """One metric of one scorer, over the samples of one group.

    ``value`` is the mean of the per-sample values; ``ci`` its percentile bootstrap
    interval; ``missing`` counts samples whose value could not be computed (e.g. the
    answer was unparsed), which are left out of the mean and counted here instead.
    """

    scorer: str
    metric: str
    value: float
    ci: tuple[float, float]
    n: int
    missing: int
    group: str | None = None


@dataclass
class RunSummary:
    """Everything ``ebmeval show`` prints about a run."""

    run: RunRecord
    generations: int
    unparsed: int
    failing: int
    """Sample × epoch pairs whose last attempt failed and that have no generation."""
    usage: Usage
    mean_latency: float
    metrics: list[MetricSummary] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready form (what ``--json`` prints)."""
        return {
            "run_id": self.run.run_id,
            "task": self.run.task,
            "model": self.run.model,
            "status": self.run.status,
            "generations": self.generations,
            "unparsed": self.unparsed,
            "failing": self.failing,
            "usage": self.usage.model_dump(),
            "mean_latency": self.mean_latency,
            "metrics": [
                {
                    "scorer": m.scorer,
                    "metric": m.metric,
                    "group": m.group,
                    "value": m.value,
                    "ci": None if math.isnan(m.ci[0]) else list(m.ci),
                    "n": m.n,
                    "missing": m.missing,
                }
                for m in self.metrics
            ],
        }


def summarize(
    store: RunStore,
    run_id: str,
    *,
    by: str | None = None,
    level: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> RunSummary:
    """Per-metric means with bootstrap CIs, overall and, with ``by``, per metadata value.

    A sample whose ``metadata[by]`` is a list counts in every group it names.
    """
    run = store.get_run(run_id)
    groups: dict[str, list[str]] = {}
    usage = Usage()
    latencies: list[float] = []
    for sample, generation in store.generations(run.run_id):
        usage = usage + generation.usage
        latencies.append(generation.latency)
        if by is not None:
            label = sample.metadata.get(by)
            labels = label if isinstance(label, list) else [label]
            groups[sample.id] = [str(x) for x in labels if x is not None]
    count, unparsed = store.count_generations(run.run_id)
    failed = {(s, e) for s, e, _stage, _err, _t in store.errors(run.run_id)}
    failing = len(failed - store.done_generations(run.run_id))

    values: dict[tuple[str, str, str | None], list[float | None]] = defaultdict(list)
    for sample_id, _epoch, scorer, score in store.scores(run.run_id):
        for metric, value in score.values.items():
            values[(scorer, metric, None)].append(value)
            for label in groups.get(sample_id, []):
                values[(scorer, metric, label)].append(value)

    metrics = []
    for (scorer, metric, group), raw in sorted(values.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2] or "")):
        present = np.array([v for v in raw if v is not None], dtype=float)
        if present.size == 0:
            continue
        if present.size < 2:  # a bootstrap needs two values; the interval is undefined
            low = high = float("nan")
        else:
            estimate = bootstrap_ci(present, n_resamples=n_resamples, level=level, seed=seed)
            low, high = estimate.ci if estimate.ci is not None else (estimate.value, estimate.value)
        metrics.append(
            MetricSummary(
                scorer=scorer,
                metric=metric,
                value=float(present.mean()),
                ci=(float(low), float(high)),
                n=int(present.size),
                missing=len(raw) - int(present.size),
                group=group,
            )
        )
    return RunSummary(
        run=run,
        generations=count,
        unparsed=unparsed,
        failing=failing,
        usage=usage,
        mean_latency=float(np.mean(latencies)) if latencies else 0.0,
        metrics=metrics,
    )
