"""Judge versus human: correlation, Bland-Altman and agreement from the run store's human scores."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .._util.errors import UsageError
from ..stats import StatsInputError, bland_altman, krippendorff_alpha, pearson, spearman
from ..store import RunStore
from ..tables import Column, Table

Key = tuple[str, str, int]


@dataclass(frozen=True)
class AgreementReport:
    """How an automatic judge agrees with the human scores of a study.

    Attributes:
        study: The study.
        field: The human score field compared (e.g. ``score``).
        judge: The judge scorer and its metric, ``"<scorer>:<metric>"``.
        n_pairs: Generations with both a judge score and at least one human score.
        human_alpha: Krippendorff's alpha (interval) among the annotators, or None where undefined.
        pearson: Pearson r between judge and mean human score, with its p-value and 95% CI.
        spearman: Spearman rho between judge and mean human score, with p-value and 95% CI.
        bland_altman: Bias (judge - human), its 95% CI and the 95% limits of agreement.
        judge_alpha: Krippendorff's alpha (interval) with the judge added as one more rater.
        notes: Statistics that could not be computed and why.
        pairs: (judge score, mean human score) per generation, for plots.
    """

    study: str
    field: str
    judge: str
    n_pairs: int
    human_alpha: float | None
    pearson: dict[str, Any] | None
    spearman: dict[str, Any] | None
    bland_altman: dict[str, Any] | None
    judge_alpha: float | None
    notes: tuple[str, ...]
    pairs: tuple[tuple[float, float], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The report as plain JSON-ready data."""
        return asdict(self)

    def table(self) -> Table:
        """The statistics as a table: value, 95% CI and p-value of each."""
        table = Table(
            "",
            [
                "statistic",
                Column("value", "number"),
                Column("95% CI", "interval"),
                Column("p", "number"),
            ],
        )
        table.add("Krippendorff's alpha, humans", self.human_alpha, None, None)
        table.add("Krippendorff's alpha, humans + judge", self.judge_alpha, None, None)
        for name, d in (("Pearson r", self.pearson), ("Spearman rho", self.spearman)):
            table.add(name, d["value"] if d else None, _interval(d, "ci"), d["pvalue"] if d else None)
        ba = self.bland_altman
        table.add("Bland-Altman bias (judge - human)", ba["bias"] if ba else None, _interval(ba, "ci"), None)
        table.add("Bland-Altman 95% limits of agreement", None, _interval(ba, "loa"), None)
        return table

    def to_markdown(self) -> str:
        """The report as a Markdown section."""
        lines = [
            f"### Judge `{self.judge}` versus humans, study `{self.study}` (field `{self.field}`)",
            "",
            f"{self.n_pairs} generations scored by both.",
            "",
            self.table().markdown().rstrip("\n"),
        ]
        lines.extend(f"\n- {n}" for n in self.notes)
        return "\n".join(lines) + "\n"


def _interval(d: dict[str, Any] | None, key: str) -> tuple[float, float] | None:
    if d is None or d.get(key) is None:
        return None
    return float(d[key][0]), float(d[key][1])


def _human(store: RunStore, study: str, field: str) -> dict[Key, dict[str, float]]:
    out: dict[Key, dict[str, float]] = defaultdict(dict)
    for run_id, sample_id, epoch, annotator, value in store.human_scores(study, field):
        out[(run_id, sample_id, epoch)][annotator] = float(value)
    return out


def agreement_report(
    store_path: str | Path, study: str, *, judge: str, metric: str, field: str = "score"
) -> AgreementReport:
    """Compare the judge scorer ``judge`` (its value ``metric``) with the mean human ``field`` of ``study``.

    The human scores are those :func:`import_scores` wrote into the run store; the judge scores
    are the ``scores`` rows of the same runs. Per generation g with judge score j_g and human
    scores h_ga, the human value is the mean h_g = mean_a h_ga. Reported, from :mod:`ebmeval.stats`:
    Pearson r(j, h) and Spearman rho(j, h) with Fisher-z intervals; Bland-Altman bias
    mean(j - h) with limits bias -/+ 1.96 sd(j - h); Krippendorff's alpha (interval distance
    (c - k)^2) among humans, and again with the judge as an extra rater. Put judge and humans on
    the same scale first (e.g. a 0-5 judge for the 0-5 rubric): Bland-Altman compares raw values.
    """
    store_path = Path(store_path)
    if not store_path.exists():
        raise UsageError(f"no run store at {store_path}")
    store = RunStore(store_path, read_only=True)
    try:
        human = _human(store, study, field)
        if not human:
            raise UsageError(
                f"no human scores of study '{study}', field '{field}' in {store_path}; "
                "import them first (`ebmeval annotate import`)"
            )
        judged: dict[Key, float] = {}
        for run_id in sorted({k[0] for k in human}):
            for sample_id, epoch, _label, score in store.scores(run_id, judge):
                value = score.values.get(metric)
                if value is not None:
                    judged[(run_id, sample_id, epoch)] = float(value)
    finally:
        store.close()
    keys = sorted(k for k in human if k in judged)
    notes: list[str] = []
    annotators = sorted({a for row in human.values() for a in row})
    table = [[human[k].get(a, math.nan) for a in annotators] for k in sorted(human)]

    def alpha(rows: list[list[float]], what: str) -> float | None:
        try:
            return krippendorff_alpha(rows, metric="interval").value
        except StatsInputError as exc:
            notes.append(f"{what}: {exc}")
            return None

    human_alpha = alpha(table, "alpha among humans")
    j = [judged[k] for k in keys]
    h = [sum(human[k].values()) / len(human[k]) for k in keys]
    judge_alpha = alpha(
        [[*(human[k].get(a, math.nan) for a in annotators), judged[k]] for k in keys], "alpha with judge"
    )
    r = rho = ba = None
    try:
        p = pearson(j, h)
        r = {"value": p.value, "ci": p.ci, "pvalue": p.pvalue, "n": p.n}
        s = spearman(j, h)
        rho = {"value": s.value, "ci": s.ci, "pvalue": s.pvalue, "n": s.n}
    except StatsInputError as exc:
        notes.append(f"correlation: {exc}")
    try:
        b = bland_altman(j, h)
        ba = {"bias": b.value, "ci": b.ci, "sd": b.sd, "loa": b.loa, "n": b.n}
    except StatsInputError as exc:
        notes.append(f"Bland-Altman: {exc}")
    return AgreementReport(
        study,
        field,
        f"{judge}:{metric}",
        len(keys),
        human_alpha,
        r,
        rho,
        ba,
        judge_alpha,
        tuple(notes),
        tuple(zip(j, h, strict=True)),
    )
