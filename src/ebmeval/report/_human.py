"""Judge versus human: correlation, Bland-Altman and agreement from the run store's human scores.

One sign convention throughout: d = human − judge (MedMeta's d = S_H − S_L), so a positive bias
means the judge scores lower than the humans. Every statistic is given per condition (the
runs of one task, workflow and model) and pooled over all of them, labelled as such: opposite
biases in two conditions cancel in the pooled value and show in the conditions'.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from .._util.errors import UsageError
from ..stats import (
    StatsInputError,
    bland_altman,
    cohens_d,
    krippendorff_alpha,
    paired_ttest,
    pearson,
    spearman,
    wilcoxon,
)
from ..store import RunRecord, RunStore
from ..tables import Column, Estimate, Table

Key = tuple[str, str, int]

SIGN = "d = human − judge (MedMeta: d = S_H − S_L); bias = mean(d), limits = bias ∓ 1.96 SD(d)"
"""The sign convention of every judge-versus-human difference ebmeval reports."""
POOLED = "pooled (all conditions)"
"""The label of statistics computed over the generations of every condition together."""


@dataclass(frozen=True)
class AgreementStatistics:
    """Judge-versus-human statistics over one set of generations.

    Attributes:
        n_pairs: Generations with both a judge score and at least one human score.
        human_alpha: Krippendorff's alpha (interval) among the annotators, or None where undefined.
        pearson: Pearson r between judge and mean human score, with its p-value and 95% CI.
        spearman: Spearman rho between judge and mean human score, with p-value and 95% CI.
        bland_altman: Bias mean(human − judge), its 95% CI and the 95% limits of agreement.
        judge_alpha: Krippendorff's alpha (interval) with the judge added as one more rater.
        notes: Statistics that could not be computed and why.
        pairs: (judge score, mean human score) per generation, for plots.
    """

    n_pairs: int
    human_alpha: float | None
    pearson: dict[str, Any] | None
    spearman: dict[str, Any] | None
    bland_altman: dict[str, Any] | None
    judge_alpha: float | None
    notes: tuple[str, ...]
    pairs: tuple[tuple[float, float], ...] = ()

    def statistics(self) -> dict[str, Any]:
        """The fields of :class:`AgreementStatistics`, by name, to build another record of the same statistics."""
        return {f.name: getattr(self, f.name) for f in fields(AgreementStatistics)}


@dataclass(frozen=True, kw_only=True)
class Agreement(AgreementStatistics):
    """The statistics of one condition, or of all pooled.

    Attributes:
        condition: The condition's label (task · workflow · model), or :data:`POOLED`.
        runs: The run ids the generations come from.
    """

    condition: str
    runs: tuple[str, ...]


@dataclass(frozen=True)
class HumanContrast:
    """Human scores of two conditions compared on the items both have (MedMeta Table 4's human rows).

    Each item's value in a condition is the mean over its annotators (and epochs). With
    d = a − b over the n shared items: paired t-test, Wilcoxon signed-rank and Cohen's
    d_z = mean(d) / SD(d); ``None`` where a test is undefined (see ``note``).
    """

    condition_a: str
    condition_b: str
    n: int
    mean_a: float
    mean_b: float
    t: float | None
    p_t: float | None
    wilcoxon: float | None
    p_wilcoxon: float | None
    cohens_d: float | None
    note: str = ""

    @property
    def difference(self) -> float:
        """mean(a) − mean(b)."""
        return self.mean_a - self.mean_b


@dataclass(frozen=True, kw_only=True)
class AgreementReport(AgreementStatistics):
    """How an automatic judge agrees with the human scores of a study.

    The statistics it inherits are the pooled ones (:data:`POOLED`, over every condition);
    ``conditions`` holds the same statistics per condition and ``contrasts`` the paired tests
    of human scores between conditions.

    Attributes:
        study: The study.
        field: The human score field compared (e.g. ``score``).
        judge: The judge scorer and its metric, ``"<scorer>:<metric>"``.
        conditions: The statistics of each condition.
        contrasts: Paired tests of human scores between every two conditions.
        sign: The sign convention (:data:`SIGN`).
        pooled_label: The label of the top-level statistics (:data:`POOLED`).
    """

    study: str
    field: str
    judge: str
    conditions: tuple[Agreement, ...] = ()
    contrasts: tuple[HumanContrast, ...] = ()
    sign: str = SIGN
    pooled_label: str = POOLED

    @property
    def pooled(self) -> Agreement:
        """The top-level statistics as an :class:`Agreement` labelled :data:`POOLED`."""
        runs = tuple(sorted({r for c in self.conditions for r in c.runs}))
        return Agreement(condition=POOLED, runs=runs, **self.statistics())

    def to_dict(self) -> dict[str, Any]:
        """The report as plain JSON-ready data."""
        return asdict(self)

    def table(self) -> Table:
        """Per condition and pooled: n, correlation, Bland-Altman bias and limits, Krippendorff's alphas."""
        table = agreement_table("")
        for agreement in (*self.conditions, self.pooled):
            add_agreement_row(table, agreement)
        table.notes.append(SIGN)
        return table

    def contrast_table(self) -> Table:
        """Paired tests of the human scores between conditions."""
        table = Table(
            f"Human scores between conditions: study {self.study}, field {self.field}",
            [
                "a",
                "b",
                Column("n", "number"),
                Column("mean a", "number"),
                Column("mean b", "number"),
                Column("a − b", "number", fmt="{:+.3f}"),
                Column("paired t", "number"),
                Column("p (t)", "number"),
                Column("Wilcoxon T", "number"),
                Column("p (Wilcoxon)", "number"),
                Column("Cohen's d_z", "number"),
            ],
        )
        for c in self.contrasts:
            table.add(
                c.condition_a,
                c.condition_b,
                c.n,
                c.mean_a,
                c.mean_b,
                c.difference,
                c.t,
                c.p_t,
                c.wilcoxon,
                c.p_wilcoxon,
                c.cohens_d,
            )
        table.notes += [f"{c.condition_a} vs {c.condition_b}: {c.note}" for c in self.contrasts if c.note]
        table.notes.append("Per item: mean of annotators; d_z = mean(a − b) / SD(a − b); tests unadjusted.")
        return table

    def to_markdown(self) -> str:
        """The report as a Markdown section."""
        lines = [
            f"### Judge `{self.judge}` versus humans, study `{self.study}` (field `{self.field}`)",
            "",
            f"{self.n_pairs} generations scored by both, in {len(self.conditions)} condition(s); "
            f"the last row is {POOLED}.",
            "",
            self.table().markdown().rstrip("\n"),
        ]
        if self.contrasts:
            lines += ["", self.contrast_table().markdown().rstrip("\n")]
        lines.extend(f"\n- {c.condition}: {n}" for c in (*self.conditions, self.pooled) for n in c.notes)
        return "\n".join(lines) + "\n"


def agreement_table(title: str, *lead: str | Column) -> Table:
    """The columns of a judge-versus-human table, after the ``lead`` columns."""
    return Table(
        title,
        [
            *lead,
            "condition",
            Column("n", "number"),
            Column("Pearson r [95% CI]", "estimate"),
            Column("Spearman ρ", "number"),
            Column("bias (human − judge)", "number", fmt="{:+.3f}"),
            Column("limits of agreement", "interval"),
            Column("α humans", "number"),
            Column("α humans + judge", "number"),
        ],
    )


def add_agreement_row(table: Table, a: Agreement, *lead: str) -> None:
    """One row of :func:`agreement_table` for ``a``."""
    r, rho, ba = a.pearson, a.spearman, a.bland_altman
    table.add(
        *lead,
        a.condition,
        a.n_pairs,
        Estimate(r["value"], _interval(r, "ci")) if r else None,
        rho["value"] if rho else None,
        ba["bias"] if ba else None,
        _interval(ba, "loa"),
        a.human_alpha,
        a.judge_alpha,
    )


def _interval(d: dict[str, Any] | None, key: str) -> tuple[float, float] | None:
    if d is None or d.get(key) is None:
        return None
    return float(d[key][0]), float(d[key][1])


def _human(store: RunStore, study: str, field: str) -> dict[Key, dict[str, float]]:
    out: dict[Key, dict[str, float]] = defaultdict(dict)
    for run_id, sample_id, epoch, annotator, value in store.human_scores(study, field):
        out[(run_id, sample_id, epoch)][annotator] = float(value)
    return out


def condition_label(run: RunRecord) -> str:
    """``task · workflow · model`` of a run (the workflow where the task has that option)."""
    workflow = (run.config.get("task_args") or {}).get("workflow")
    return " · ".join(str(p) for p in (run.task, workflow, run.model) if p)


def agreement(
    condition: str,
    keys: list[Key],
    human: dict[Key, dict[str, float]],
    judged: dict[Key, float],
) -> Agreement:
    """The statistics of the generations ``keys`` (those with human scores; judged ones are paired).

    Pearson r(j, h) and Spearman rho(j, h) with Fisher-z intervals; Bland-Altman on
    d = h − j: bias mean(d), limits bias ∓ 1.96 sd(d); Krippendorff's alpha (interval
    distance (c - k)^2) among humans, and again with the judge as an extra rater.
    """
    notes: list[str] = []
    paired = [k for k in keys if k in judged]
    annotators = sorted({a for k in keys for a in human[k]})
    human_alpha = _alpha([[human[k].get(a, math.nan) for a in annotators] for k in keys], "alpha among humans", notes)
    j = [judged[k] for k in paired]
    h = [sum(human[k].values()) / len(human[k]) for k in paired]
    judge_alpha = _alpha(
        [[*(human[k].get(a, math.nan) for a in annotators), judged[k]] for k in paired], "alpha with judge", notes
    )
    r, rho = _correlations(j, h, notes)
    bias = _bias(h, j, notes)
    return Agreement(
        len(paired),
        human_alpha,
        r,
        rho,
        bias,
        judge_alpha,
        tuple(notes),
        tuple(zip(j, h, strict=True)),
        condition=condition,
        runs=tuple(sorted({k[0] for k in keys})),
    )


def _alpha(rows: list[list[float]], what: str, notes: list[str]) -> float | None:
    """Krippendorff's alpha (interval) of the rating ``rows``; None, with a note, where undefined."""
    try:
        return krippendorff_alpha(rows, metric="interval").value
    except StatsInputError as exc:
        notes.append(f"{what}: {exc}")
        return None


def _correlations(
    j: list[float], h: list[float], notes: list[str]
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """Pearson r and Spearman rho of judge ``j`` and human ``h``; None, with a note, where undefined."""
    r = rho = None
    try:
        p = pearson(j, h)
        r = {"value": p.value, "ci": p.ci, "pvalue": p.pvalue, "n": p.n}
        s = spearman(j, h)
        rho = {"value": s.value, "ci": s.ci, "pvalue": s.pvalue, "n": s.n}
    except StatsInputError as exc:
        notes.append(f"correlation: {exc}")
    return r, rho


def _bias(h: list[float], j: list[float], notes: list[str]) -> dict[str, Any] | None:
    """Bland-Altman of human ``h`` minus judge ``j``; None, with a note, where undefined."""
    try:
        b = bland_altman(h, j)
    except StatsInputError as exc:
        notes.append(f"Bland-Altman: {exc}")
        return None
    return {"bias": b.value, "ci": b.ci, "sd": b.sd, "loa": b.loa, "n": b.n, "sign": "human − judge"}


def human_contrast(a: str, b: str, x: dict[str, float], y: dict[str, float]) -> HumanContrast:
    """Paired t, Wilcoxon and Cohen's d_z of the human item scores ``x`` (condition a) and ``y`` (b)."""
    shared = sorted(set(x) & set(y))
    xs, ys = [x[s] for s in shared], [y[s] for s in shared]
    n = len(shared)
    if n < 2:
        means = (xs[0], ys[0]) if n else (math.nan, math.nan)
        return HumanContrast(a, b, n, *means, None, None, None, None, None, f"{n} shared item(s); 2 are needed")
    notes: list[str] = []
    t = p_t = w = p_w = d = None
    try:
        tested = paired_ttest(xs, ys)
        t, p_t, d = tested.statistic, tested.pvalue, cohens_d(xs, ys, paired=True).value
    except StatsInputError as exc:
        notes.append(f"paired t: {exc}")
    try:
        ranked = wilcoxon(xs, ys)
        w, p_w = ranked.statistic, ranked.pvalue
    except StatsInputError as exc:
        notes.append(f"Wilcoxon: {exc}")
    return HumanContrast(a, b, n, sum(xs) / n, sum(ys) / n, t, p_t, w, p_w, d, "; ".join(notes))


def agreement_report(
    store_path: str | Path, study: str, *, judge: str, metric: str, field: str = "score"
) -> AgreementReport:
    """Compare the judge scorer ``judge`` (its value ``metric``) with the mean human ``field`` of ``study``.

    The human scores are those :func:`import_scores` wrote into the run store; the judge scores
    are the ``scores`` rows of the same runs. Per generation g with judge score j_g and human
    scores h_ga, the human value is the mean h_g = mean_a h_ga. The statistics of
    :func:`agreement` are computed per condition (:func:`condition_label`) and pooled; the human
    item scores of every two conditions are compared with :func:`human_contrast`. Put judge and
    humans on the same scale first (e.g. a 0-5 judge for the 0-5 rubric): Bland-Altman compares
    raw values.
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
        judged, labels = _judged(store, sorted({k[0] for k in human}), judge, metric)
    finally:
        store.close()
    by_condition: dict[str, list[Key]] = defaultdict(list)
    for key in sorted(human):
        by_condition[labels[key[0]]].append(key)
    conditions = tuple(agreement(c, keys, human, judged) for c, keys in sorted(by_condition.items()))
    items = {c: _item_means(keys, human) for c, keys in by_condition.items()}
    contrasts = tuple(human_contrast(a, b, items[a], items[b]) for a, b in itertools.combinations(sorted(items), 2))
    pooled = agreement(POOLED, sorted(human), human, judged)
    return AgreementReport(
        study=study,
        field=field,
        judge=f"{judge}:{metric}",
        conditions=conditions,
        contrasts=contrasts,
        **pooled.statistics(),
    )


def _judged(store: RunStore, run_ids: list[str], judge: str, metric: str) -> tuple[dict[Key, float], dict[str, str]]:
    """Per generation of the runs, the ``metric`` of scorer ``judge`` where it has one; per run, its condition."""
    judged: dict[Key, float] = {}
    labels: dict[str, str] = {}
    for run_id in run_ids:
        labels[run_id] = condition_label(store.get_run(run_id))
        for sample_id, epoch, _label, score in store.scores(run_id, judge):
            value = score.values.get(metric)
            if value is not None:
                judged[(run_id, sample_id, epoch)] = float(value)
    return judged, labels


def _item_means(keys: list[Key], human: dict[Key, dict[str, float]]) -> dict[str, float]:
    """Per sample id: the mean over its epochs of the annotators' mean."""
    values: dict[str, list[float]] = defaultdict(list)
    for key in keys:
        values[key[1]].append(sum(human[key].values()) / len(human[key]))
    return {sample: sum(v) / len(v) for sample, v in values.items()}
