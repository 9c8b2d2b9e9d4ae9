"""Agreement among the judges of a panel, from their stored per-judge scores."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..stats import Estimate, StatsInputError, TestResult, icc, krippendorff_alpha
from ..store import RunStore, ScoreSet


def panel_score_sets(store: RunStore, run_id: str) -> list[ScoreSet]:
    """The score sets of a run made by a panel: a scorer whose spec has two or more judge roles."""
    return [s for s in store.score_sets(run_id) if len(s.spec.get("roles") or {}) >= 2]


@dataclass
class PanelAgreement:
    """Inter-judge agreement of a panel over the items of one run."""

    judges: list[str]
    n_items: int
    judge_means: dict[str, float]
    alpha: Estimate | None
    """Krippendorff's alpha, ordinal metric, over every item with at least two scores."""
    icc: TestResult | None
    """ICC(A,1) over the items every judge scored."""
    notes: list[str]
    """Why a statistic is missing, when it is."""


def panel_agreement(
    store_path: str | Path, run_id: str, scorer_name: str = "judge/rubric-panel", metric: str = "rubric"
) -> PanelAgreement:
    """Agreement of the panel judges from their stored per-judge scores.

    A panel's scorer stores each judge's value as ``<metric>/<judge>``. Builds the (items ×
    judges) table of those values (NaN where unparsed) and
    reports Krippendorff's alpha (ordinal) and, on complete rows, ICC(A,1) (two-way random,
    absolute agreement, single rater) from :mod:`ebmeval.stats`.
    """
    store = RunStore(store_path, read_only=True)
    try:
        run = store.get_run(run_id)
        rows = [score.values for _, _, _, score in store.scores(run.run_id, scorer_name)]
    finally:
        store.close()
    judges = sorted({k.split("/", 1)[1] for row in rows for k in row if k.startswith(f"{metric}/")})
    table = np.array([[np.nan if r.get(f"{metric}/{j}") is None else r[f"{metric}/{j}"] for j in judges] for r in rows])
    notes: list[str] = []
    alpha: Estimate | None = None
    result: TestResult | None = None
    means: dict[str, float] = {}
    if table.size:
        for position, judge in enumerate(judges):
            column = table[:, position]
            if np.any(~np.isnan(column)):
                means[judge] = float(np.nanmean(column))
        try:
            alpha = krippendorff_alpha(table, metric="ordinal")
        except StatsInputError as exc:
            notes.append(f"alpha: {exc}")
        complete = table[~np.any(np.isnan(table), axis=1)]
        try:
            result = icc(complete, "A,1")
        except StatsInputError as exc:
            notes.append(f"icc: {exc}")
    else:
        notes.append(f"no '{scorer_name}' scores in run {run_id}")
    return PanelAgreement(judges=judges, n_items=len(rows), judge_means=means, alpha=alpha, icc=result, notes=notes)
