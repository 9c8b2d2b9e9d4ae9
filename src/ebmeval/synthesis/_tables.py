"""Model × workflow tables over stored synthesis runs, with CIs and paired contrasts."""

from __future__ import annotations

import itertools
import json
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from .._util.errors import DataError
from ..runner import input_was_cut
from ..stats import StatsInputError, bootstrap_ci, cohens_d, paired_ttest
from ..store import RunRecord, RunStore
from ..tasks import read_jsonl
from ._workflows import DEFAULT_K

METRICS: dict[str, tuple[str, str]] = {
    "rubric": ("judge/rubric-0-5", "rubric"),
    "panel": ("judge/rubric-panel", "rubric_mean"),
    "rouge": ("text/rouge-l", "rougeL"),
    "bertscore": ("text/bertscore", "f1@"),
    "recall": ("synthesis/retrieval-recall", "recall"),
    "feasibility": ("synthesis/feasibility", "feasibility"),
}
"""Column name → (scorer, value) read from the store; a value ending in ``@`` matches the first key
with that prefix (BERTScore keys name their encoder, e.g. ``f1@all-MiniLM-L6-v2-L5``)."""


@dataclass
class TableRow:
    """One run: its model and workflow, and the mean of each metric with a 95% bootstrap CI."""

    run_id: str
    model: str
    workflow: str
    source: str
    n: int
    """Samples with a generation."""
    means: dict[str, float | None]
    cis: dict[str, tuple[float, float] | None]
    missing: dict[str, int]
    """Per metric, samples whose value is ``None`` or absent (answers cut at their token limit included)."""
    score_sets: dict[str, str] = field(default_factory=dict)
    """Per metric, the label of the score set its values come from (one judge's, never pooled)."""
    truncated: int = 0
    """Answers whose reply was cut at its token limit, which no scorer grades."""
    input_truncated: int = 0
    """Answers whose input (the evidence) was cut to fit the context window."""


@dataclass
class Contrast:
    """Paired comparison of two runs that differ only in workflow or only in model."""

    factor: str
    """``workflow`` or ``model``."""
    a: str
    """Label (workflow or model) of the first run."""
    b: str
    metric: str
    within: str
    """The level both runs share: the model of a workflow contrast, the workflow of a model contrast."""
    n: int
    """Samples scored in both runs."""
    mean_diff: float | None
    t: float | None
    pvalue: float | None
    cohens_d: float | None
    """d_z = mean(a − b) / SD(a − b)."""
    note: str = ""


def _per_sample(store: RunStore, run_id: str, scorer: str, value: str) -> dict[str, float | None]:
    """Sample id → the metric averaged over epochs (``None`` if no epoch has it)."""
    collected: dict[str, list[float]] = {}
    for sample_id, _, _, score in store.scores(run_id, scorer):
        key = next((k for k in score.values if k.startswith(value)), value) if value.endswith("@") else value
        found = score.values.get(key)
        collected.setdefault(sample_id, [])
        if found is not None:
            collected[sample_id].append(found)
    return {k: statistics.fmean(v) if v else None for k, v in collected.items()}


def _workflow_label(task_args: dict[str, object]) -> str:
    """The run's workflow, with ``k`` for ``standard-rag`` (K = 5 and K = 10 are different conditions)."""
    workflow = str(task_args.get("workflow", ""))
    if workflow == "standard-rag":
        return f"{workflow} (k={task_args.get('k', DEFAULT_K)})"
    return workflow


def _load(
    store_path: str | Path, run_ids: Sequence[str], metrics: Sequence[str]
) -> list[tuple[TableRow, dict[str, dict[str, float | None]]]]:
    """One row per run and choice of score set.

    A metric whose scorer scored the run with two judges gives a row per judge, never their mean.
    """
    store = RunStore(store_path, read_only=True)
    loaded = []
    try:
        for run_id in run_ids:
            run = store.get_run(run_id)
            n, _ = store.count_generations(run.run_id)
            cut = _truncations(store, run.run_id)
            options: list[list[tuple[str, str | None]]] = [
                [(m, s.label) for s in store.score_sets_of(run.run_id, METRICS[m][0])] or [(m, None)] for m in metrics
            ]
            for chosen in itertools.product(*options):
                labels = {m: label for m, label in chosen if label is not None}
                values = {
                    m: _per_sample(store, run.run_id, labels[m], METRICS[m][1]) if m in labels else {} for m in metrics
                }
                loaded.append((replace(_row(run, n, values, labels), truncated=cut[0], input_truncated=cut[1]), values))
    finally:
        store.close()
    return loaded


def _truncations(store: RunStore, run_id: str) -> tuple[int, int]:
    """The run's answers cut at their token limit, and those whose input was cut to fit."""
    generations = [generation for _sample, generation in store.generations(run_id)]
    return sum(g.answer_truncated for g in generations), sum(input_was_cut(g.metadata) for g in generations)


def _row(run: RunRecord, n: int, values: dict[str, dict[str, float | None]], labels: dict[str, str]) -> TableRow:
    """The table row of ``run`` from each metric's per-sample values, read from the score sets ``labels``."""
    means: dict[str, float | None] = {}
    cis: dict[str, tuple[float, float] | None] = {}
    missing: dict[str, int] = {}
    for metric, per_sample in values.items():
        present = [v for v in per_sample.values() if v is not None]
        missing[metric] = n - len(present)
        means[metric] = statistics.fmean(present) if present else None
        cis[metric] = bootstrap_ci(present, seed=0).ci if len(present) >= 2 else None
    args = run.config.get("task_args", {})
    return TableRow(
        run_id=run.run_id,
        model=run.model,
        workflow=_workflow_label(args),
        source=str(args.get("source", "")),
        n=n,
        means=means,
        cis=cis,
        missing=missing,
        score_sets=labels,
    )


def synthesis_table(
    store_path: str | Path,
    run_ids: Sequence[str],
    metrics: Sequence[str] = ("rubric", "panel", "rouge", "bertscore", "recall"),
) -> list[TableRow]:
    """One row per run: mean of each metric over samples with a 95% percentile-bootstrap CI.

    mean = (1/n) Σ_i x_i over the samples whose value is not ``None``; the CI is
    :func:`ebmeval.stats.bootstrap_ci` (10,000 resamples, seed 0), ``None`` below 2 values.
    A metric whose scorer did not score the run has mean ``None``.
    """
    return [row for row, _ in _load(store_path, run_ids, metrics)]


def synthesis_contrasts(store_path: str | Path, run_ids: Sequence[str], metric: str = "rubric") -> list[Contrast]:
    """Paired t-test and Cohen's d_z for every pair of runs on one source that differ in one factor.

    Only runs scored by the same score set (scorer and judge) are paired, matched by sample id
    over the samples both runs scored; with d_i = a_i − b_i,
    t = mean(d) / (SD(d)/√n) (:func:`ebmeval.stats.paired_ttest`) and d_z = mean(d) / SD(d)
    (:func:`ebmeval.stats.cohens_d`). Fewer than 2 pairs or zero variance leave t and d
    ``None`` with a note.
    """
    loaded = _load(store_path, run_ids, [metric])
    contrasts = []
    for (row_a, va), (row_b, vb) in itertools.combinations(loaded, 2):
        if row_a.source != row_b.source or row_a.score_sets.get(metric) != row_b.score_sets.get(metric):
            continue  # another source, or the metric read from another judge's score set
        if row_a.model == row_b.model and row_a.workflow != row_b.workflow:
            factor, a, b, within = "workflow", row_a.workflow, row_b.workflow, row_a.model
        elif row_a.workflow == row_b.workflow and row_a.model != row_b.model:
            factor, a, b, within = "model", row_a.model, row_b.model, row_a.workflow
        else:
            continue
        pairs: list[tuple[float, float]] = []
        for sample_id in sorted(va[metric]):
            x, y = va[metric][sample_id], vb[metric].get(sample_id)
            if x is not None and y is not None:
                pairs.append((x, y))
        contrast = Contrast(factor, a, b, metric, within, len(pairs), None, None, None, None)
        if pairs:
            contrast.mean_diff = statistics.fmean(x - y for x, y in pairs)
        try:
            test = paired_ttest([x for x, _ in pairs], [y for _, y in pairs])
            contrast.t, contrast.pvalue = test.statistic, test.pvalue
            contrast.cohens_d = cohens_d([x for x, _ in pairs], [y for _, y in pairs]).value
        except StatsInputError as exc:
            contrast.note = str(exc)
        contrasts.append(contrast)
    return contrasts


def export_feasibility(store_path: str | Path, run_id: str, path: str | Path) -> int:
    """Write the feasibility ratings of a ``feasibility`` run as JSONL ``{"id", "feasibility"}``.

    The file is what the ``synthesis`` task's ``feasibility_ratings`` option reads to filter
    items by ``feasibility_above``. Items whose rating did not parse are written with ``null``.
    """
    store = RunStore(store_path, read_only=True)
    try:
        ratings = _per_sample(store, store.get_run(run_id).run_id, *METRICS["feasibility"])
    finally:
        store.close()
    with open(path, "w", encoding="utf-8") as handle:
        for sample_id, value in ratings.items():
            handle.write(json.dumps({"id": sample_id, "feasibility": value}) + "\n")
    return len(ratings)


def read_feasibility(path: str | Path) -> dict[str, float | None]:
    """Item id → feasibility from a file written by :func:`export_feasibility`."""
    ratings: dict[str, float | None] = {}
    for number, record in read_jsonl(path):
        try:
            value = record["feasibility"]
            ratings[str(record["id"])] = None if value is None else float(value)
        except (KeyError, TypeError, ValueError) as exc:
            raise DataError(path, f'expected {{"id", "feasibility"}} ({exc})', line=number) from None
    return ratings
