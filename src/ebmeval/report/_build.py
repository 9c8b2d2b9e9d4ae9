"""Build a report over stored runs: tables, plots and the files that hold them."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from .._util.hashing import stable_hash
from ..judges import PanelAgreement, panel_agreement, panel_score_sets
from ..runner import RunSummary, summarize
from ..store import RunRecord, RunStore
from ..tables import Column, Estimate, Table
from ..workflows import gold_ids as gold_ids_of
from ._compare import Contrast, compare_runs
from ._glossary import CHANCE_SCORERS, chance_level, glossary_table, legend_table
from ._human import SIGN, AgreementReport, add_agreement_row, agreement_report, agreement_table


@dataclass(frozen=True)
class HumanComparison:
    """Which judge metric to compare with which human field of which annotation study."""

    study: str
    scorer: str
    metric: str
    field: str = "score"


Prices = Mapping[str, tuple[float, float]]
"""Model name → (price per million prompt tokens, per million completion tokens)."""


_METRICS_NOTE = (
    "95% CI: Wilson score interval for proportions (metrics whose every value is 0 or 1), percentile "
    "bootstrap over samples otherwise. n: samples with a value; missing: samples without one, left out "
    "of the mean. chance: the accuracy of a uniform guess, 1/k for k options averaged over the answered "
    "items (single-answer multiple choice only). unparsed: answers from which no answer could be read; "
    "a scorer with unparsed=zero (the default of multiple-choice tasks) scores them 0, so they are in n "
    "and in the mean as wrong, while unparsed=skip leaves them out (counted under missing). truncated: "
    "answers whose reply stopped at its token limit, which no scorer grades (neither in n nor in "
    "missing); inputs cut: scored answers whose input (article, evidence) was cut to fit the context "
    "window; failing: samples whose last attempt failed (no answer stored, retried by a re-run)."
)
"""What the columns of the metrics table count."""


@dataclass
class Report:
    """Everything a report shows, before rendering."""

    runs: list[RunRecord]
    labels: dict[str, str]
    summaries: dict[str, RunSummary]
    contrasts: list[Contrast]
    recall_at_k: dict[str, list[float]]
    by: str | None
    prices: Prices = field(default_factory=dict)
    human: list[AgreementReport] = field(default_factory=list)
    """Judge-versus-human comparisons, one per (study, judge metric, human field)."""
    panels: dict[str, PanelAgreement] = field(default_factory=dict)
    """Inter-judge agreement of each run scored by a judge panel."""
    calls: dict[str, list[RoleUsage]] = field(default_factory=dict)
    """Per run, the recorded calls of every role but the model under evaluation (judges, negator …)."""
    view_url: str | None = None
    """Where ``ebmeval view`` serves the store: each metric value links to its samples there."""
    scorer_names: dict[str, str] = field(default_factory=dict)
    """Score set label → the name of its scorer (for metric definitions and declared kinds)."""
    chance: dict[str, float] = field(default_factory=dict)
    """Per run, the accuracy a uniform guess expects on its single-answer multiple-choice items."""

    def tables(self) -> list[Table]:
        """The report's tables in display order, the run legend first."""
        tables = [self.legend_table(), self.metrics_table(), self.pivot_table()]
        if self.contrasts:
            tables.append(self.contrast_table())
        if self.by:
            tables.append(self.breakdown_table())
        if self.recall_at_k:
            tables.append(self.recall_table())
        if self.human:
            tables.append(self.human_table())
            tables += [h.contrast_table() for h in self.human if h.contrasts]
        if self.panels:
            tables.append(self.panel_table())
        if any(self.calls.values()):
            tables.append(self.calls_table())
        tables += [self.glossary_table(), self.provenance_table()]
        return tables

    def legend_table(self) -> Table:
        """Each run's short label with its provider, model, task options and settings in full."""
        return legend_table(self.runs, self.labels)

    def glossary_table(self) -> Table:
        """The definition of every metric the report shows."""
        keys = {
            (m.scorer, self.scorer_names.get(m.scorer, m.scorer), m.metric)
            for s in self.summaries.values()
            for m in s.metrics
            if m.group is None
        }
        return glossary_table(keys, chance=bool(self.chance))

    def chance_of(self, run_id: str, scorer: str, metric: str) -> float | None:
        """The chance level of a run's metric, where its scorer defines one."""
        if metric not in CHANCE_SCORERS.get(self.scorer_names.get(scorer, scorer), ()):
            return None
        return self.chance.get(run_id)

    def metrics_table(self) -> Table:
        """Each metric of each run with its CI, n, unparsed and truncated counts, tokens, latency and cost."""
        table = Table(
            "Metrics (mean with 95% CI)",
            [
                "run",
                "scorer",
                "metric",
                Column("value", "number"),
                Column("95% CI", "interval"),
                "CI method",
                Column("n", "number"),
                Column("missing", "number"),
                Column("chance", "number"),
                Column("unparsed", "number"),
                Column("truncated", "number"),
                Column("inputs cut", "number"),
                Column("failing", "number"),
                Column("tokens in/out", "interval", fmt="{:,}", pair="{}/{}", parts=("tokens in", "tokens out")),
                Column("s/sample", "number", fmt="{:.2f}"),
                Column("cost", "number", fmt="${:.4f}"),
            ],
        )
        for run in self.runs:
            self._add_metric_rows(table, run)
        table.notes.append(_METRICS_NOTE)
        if self.view_url is not None:
            table.notes.append(f"Each value links to its samples in `ebmeval view`, served at {self.view_url}.")
        for run in self.runs:
            table.notes.extend(f"{self.labels[run.run_id]}: {note}" for note in self.summaries[run.run_id].notes)
        return table

    def _add_metric_rows(self, table: Table, run: RunRecord) -> None:
        """One row of the metrics table per overall metric of ``run``, its value linked to its samples."""
        summary = self.summaries[run.run_id]
        cost = self.cost(run, summary)
        for m in summary.metrics:
            if m.group is not None:
                continue
            table.add(
                self.labels[run.run_id],
                m.scorer,
                m.metric,
                m.value,
                m.ci,
                m.ci_method,
                m.n,
                m.missing,
                self.chance_of(run.run_id, m.scorer, m.metric),
                summary.unparsed,
                m.truncated,
                m.input_truncated,
                summary.failing,
                (summary.usage.input_tokens, summary.usage.output_tokens),
                summary.mean_latency,
                cost,
            )
            self._link(table, run.run_id, m.scorer, m.metric)

    def pivot_table(self) -> Table:
        """Model × task (and task options) for every metric: the shape of a paper's main table."""
        columns = sorted({_task_label(r, self._varying()) for r in self.runs})
        table = Table("Model × task", ["model", "metric", *[Column(c, "estimate") for c in columns]])
        metrics = sorted({(m.scorer, m.metric) for s in self.summaries.values() for m in s.metrics if m.group is None})
        for model in sorted({r.model for r in self.runs}):
            for scorer, metric in metrics:
                cells: list[Estimate | None] = []
                for column in columns:
                    found = [
                        m
                        for r in self.runs
                        if r.model == model and _task_label(r, self._varying()) == column
                        for m in self.summaries[r.run_id].metrics
                        if (m.scorer, m.metric) == (scorer, metric) and m.group is None
                    ]
                    cells.append(Estimate(found[0].value, found[0].ci) if found else None)
                if any(c is not None for c in cells):
                    table.add(model, f"{scorer}/{metric}", *cells)
        return table

    def contrast_table(self) -> Table:
        """Paired tests between runs on shared samples, Holm-adjusted."""
        table = Table(
            "Paired contrasts (shared samples)",
            [
                "run A",
                "run B",
                "metric",
                Column("n", "number"),
                Column("A", "number"),
                Column("B", "number"),
                Column("A − B", "number", fmt="{:+.3f}"),
                Column("95% CI (A − B)", "interval", fmt="{:+.3f}"),
                "CI method",
                "test",
                Column("p", "number", fmt="p"),
                Column("p (Holm)", "number", fmt="p"),
                Column("d_z", "number", fmt="{:.2f}"),
                "",
            ],
        )
        for c in self.contrasts:
            adjusted = c.pvalue_adjusted
            mark = "*" if adjusted is not None and adjusted < 0.05 else ""
            table.add(
                self.labels[c.run_a],
                self.labels[c.run_b],
                f"{c.scorer}/{c.metric}",
                c.n,
                c.mean_a,
                c.mean_b,
                c.difference,
                c.ci,
                c.ci_method,
                c.test,
                c.pvalue,
                adjusted,
                c.effect_size,
                mark,
            )
        table.notes.append(
            "Values per sample (the mean over its epochs: the sample is the unit of analysis). Binary metrics: "
            "McNemar's exact test and Newcombe's paired score interval of A − B (Newcombe 1998, method 10); "
            "others: paired t-test with Cohen's d_z = mean(A−B)/SD(A−B) and the percentile bootstrap interval "
            "of A − B over samples (pairs resampled together, 10,000 resamples). "
            "* = Holm-adjusted p < 0.05 over all contrasts in this table."
        )
        return table

    def breakdown_table(self) -> Table:
        """Metrics per value of the ``by`` label."""
        table = Table(
            f"By {self.by}",
            [
                "run",
                "metric",
                str(self.by),
                Column("value", "number"),
                Column("95% CI", "interval"),
                Column("n", "number"),
            ],
        )
        for run in self.runs:
            for m in self.summaries[run.run_id].metrics:
                if m.group is not None:
                    table.add(self.labels[run.run_id], f"{m.scorer}/{m.metric}", m.group, m.value, m.ci, m.n)
                    self._link(table, run.run_id, m.scorer, m.metric, label=f"{self.by}={m.group}")
        return table

    def _link(self, table: Table, run_id: str, scorer: str, metric: str, label: str | None = None) -> None:
        """Link the last row's value to the viewer's page of the samples behind it."""
        if self.view_url is not None:
            from ..view import view_url

            table.link("value", view_url(self.view_url, run_id, score_set=scorer, metric=metric, label=label))

    def recall_table(self) -> Table:
        """Recall of gold documents among the top k retrieved, per run."""
        depth = max(len(v) for v in self.recall_at_k.values())
        ks = [k for k in (1, 2, 3, 5, 8, 10, 20, 50, 100) if k <= depth]
        table = Table("Retrieval recall@k of gold documents", ["run", *[Column(f"@{k}", "number") for k in ks]])
        for run_id, curve in self.recall_at_k.items():
            table.add(self.labels[run_id], *[curve[min(k, len(curve)) - 1] for k in ks])
        return table

    def human_table(self) -> Table:
        """Judge versus human per condition and pooled: correlation, Bland–Altman bias and limits, agreement."""
        table = agreement_table("Judge versus human", "study", "judge", "human field")
        for h in self.human:
            for agreement in (*h.conditions, h.pooled):
                add_agreement_row(table, agreement, h.study, h.judge, h.field)
        table.notes += [
            f"{h.study}, {c.condition}: {n}" for h in self.human for c in (*h.conditions, h.pooled) for n in c.notes
        ]
        table.notes.append(f"{SIGN}; α = Krippendorff's (interval).")
        return table

    def panel_table(self) -> Table:
        """Each judge's mean and the panel's agreement (Krippendorff's α, ICC(A,1)) per run."""
        return panel_table({self.labels[run_id]: panel for run_id, panel in self.panels.items()})

    def provenance_table(self) -> Table:
        """Config hash, versions, seeds and dates of every run."""
        table = Table(
            "Provenance", ["run", "run id", "config hash", "seed", "ebmeval", "python", "git", "created", "status"]
        )
        for run in self.runs:
            git = run.provenance.get("git") or {}
            commit = f"{git.get('commit', '')[:10]}{' (dirty)' if git.get('dirty') else ''}" if git else None
            table.add(
                self.labels[run.run_id],
                run.run_id,
                run.config_hash[:16],
                run.seed,
                run.provenance.get("packages", {}).get("ebmeval", "?"),
                run.provenance.get("python", "?"),
                commit,
                run.created_at,
                run.status_text,
            )
        return table

    def calls_table(self) -> Table:
        """Calls, tokens, time and (where priced) cost of the judges and other roles, per run."""
        table = Table(
            "Judge and role calls",
            [
                "run",
                "role",
                "model",
                "steps",
                Column("calls", "number"),
                Column("prompt tokens", "number"),
                Column("completion tokens", "number"),
                Column("model seconds", "number", fmt="{:.1f}"),
                Column("cost", "number", fmt="${:.4f}"),
            ],
        )
        for run in self.runs:
            for u in self.calls.get(run.run_id, []):
                price = self.prices.get(u.model)
                cost = None if price is None else (u.input_tokens * price[0] + u.output_tokens * price[1]) / 1e6
                table.add(
                    self.labels[run.run_id],
                    u.role,
                    u.model,
                    u.steps,
                    u.calls,
                    u.input_tokens,
                    u.output_tokens,
                    u.seconds,
                    cost,
                )
        table.notes.append(
            "Calls recorded in the run store (a replayed or cached call counts once, when it was made); "
            "model seconds = the sum of the calls' latencies; "
            "cost from the --prices file (USD per million prompt and completion tokens)."
        )
        return table

    def cost(self, run: RunRecord, summary: RunSummary) -> float | None:
        """Estimated cost of the run's tokens when a price is configured for its model."""
        if run.model not in self.prices:
            return None
        per_in, per_out = self.prices[run.model]
        return (summary.usage.input_tokens * per_in + summary.usage.output_tokens * per_out) / 1e6

    def _varying(self) -> set[str]:
        """Task options whose values differ between the runs (they name the columns)."""
        return _varying_args(self.runs)


@dataclass(frozen=True)
class RoleUsage:
    """The recorded calls of one role's model in a run, grouped by the scorer or workflow step family."""

    role: str
    model: str
    steps: str
    calls: int
    input_tokens: int
    output_tokens: int
    seconds: float


def role_usage(store: RunStore, run_id: str) -> list[RoleUsage]:
    """Calls of every role but ``model`` in a run (judges, negator, evaluator …), by role, model and step family.

    The family is the step name up to its last ``/`` (``judge/steps-with-reference`` for its per-step
    calls). Tokens and latencies are those each call's reply recorded.
    """
    totals: dict[tuple[str, str, str], list[float]] = {}
    for sample, generation in store.generations(run_id):
        for step, payload in store.steps(run_id, sample.id, generation.epoch):
            role = payload.get("role")
            if not role or role == "model" or "output" not in payload:
                continue
            output = payload["output"]
            usage = output.get("usage") or {}
            family = step.rsplit("/", 1)[0] if "/" in step else step
            row = totals.setdefault((str(role), str(payload.get("model", "?")), family), [0, 0, 0, 0.0])
            row[0] += 1
            row[1] += int(usage.get("input_tokens", 0))
            row[2] += int(usage.get("output_tokens", 0))
            row[3] += float(output.get("latency", 0.0))
    return [RoleUsage(r, m, f, int(v[0]), int(v[1]), int(v[2]), v[3]) for (r, m, f), v in sorted(totals.items())]


def collect(
    store: RunStore,
    run_ids: Sequence[str],
    *,
    by: str | None = None,
    prices: Prices | None = None,
    human: Sequence[HumanComparison] = (),
    seed: int = 0,
    view_url: str | None = None,
) -> Report:
    """Read the runs, their summaries, pairwise contrasts and retrieval curves from the store.

    ``human`` names judge-versus-human comparisons of annotation studies imported into the store;
    with ``view_url`` (where ``ebmeval view`` serves this store) every metric value links to its samples.
    """
    runs = [store.get_run(r) for r in run_ids]
    labels = _labels(runs)
    summaries = {r.run_id: summarize(store, r.run_id, by=by, seed=seed) for r in runs}
    contrasts = compare_runs(store, [r.run_id for r in runs]) if len(runs) > 1 else []
    recall = {r.run_id: curve for r in runs if (curve := recall_curve(store, r.run_id))}
    comparisons = [agreement_report(store.path, h.study, judge=h.scorer, metric=h.metric, field=h.field) for h in human]
    panels = {
        run.run_id: panel_agreement(store.path, run.run_id, panel.label)
        for run in runs
        for panel in panel_score_sets(store, run.run_id)[:1]
    }
    calls = {r.run_id: role_usage(store, r.run_id) for r in runs}
    names = {s.label: s.name for r in runs for s in store.score_sets(r.run_id)}
    chance = {r.run_id: level for r in runs if (level := chance_level(store, r.run_id)) is not None}
    return Report(
        runs,
        labels,
        summaries,
        contrasts,
        recall,
        by,
        dict(prices or {}),
        comparisons,
        panels,
        calls,
        view_url,
        names,
        chance,
    )


def panel_table(panels: Mapping[str, PanelAgreement]) -> Table:
    """Judge means, Krippendorff's α (ordinal) and ICC(A,1) of judge panels, keyed by run label."""
    table = Table(
        "Judge panel agreement",
        [
            "run",
            Column("items", "number"),
            "judge means",
            Column("Krippendorff α (ordinal)", "number"),
            Column("ICC(A,1) [95% CI]", "estimate"),
        ],
    )
    for label, panel in panels.items():
        means = ", ".join(f"{judge} {mean:.2f}" for judge, mean in panel.judge_means.items()) or None
        icc = panel.icc
        table.add(
            label,
            panel.n_items,
            means,
            panel.alpha.value if panel.alpha else None,
            Estimate(icc.value, icc.ci) if icc is not None else None,
        )
        table.notes += [f"{label}: {note}" for note in panel.notes]
    return table


def recall_curve(store: RunStore, run_id: str) -> list[float]:
    """Mean recall@k for k = 1 … depth over samples whose retrieved documents carry gold flags.

    recall@k = |distinct gold sources in the top k| / |gold sources|. A source is the gold id a
    document matches (its id, else its PMID), so several snippets of one gold article count once;
    |gold sources| is the size of the sample's gold set: ``metadata["gold_ids"]`` or ``["pmids"]``
    when given, else its documents (a synthesis item's studies), as ``synthesis/retrieval-recall``
    counts them, or the ``gold_total`` the workflow recorded (S-RAG over an index: the item's listed
    studies); only a sample with none of these falls back to the gold sources retrieved.
    """
    curves: list[NDArray[np.float64]] = []
    for sample, generation in store.generations(run_id):
        retrieved = generation.retrieved or []
        if not retrieved or all(r.gold is None for r in retrieved):
            continue
        gold_ids = gold_ids_of(sample) or {d.id for d in sample.documents}
        seen: set[str] = set()
        found = []
        for hit in sorted(retrieved, key=lambda r: r.rank):
            document = hit.document
            source = document.id if document.id in gold_ids else str(document.metadata.get("pmid", document.id))
            new = bool(hit.gold) and source not in seen
            if new:
                seen.add(source)
            found.append(1.0 if new else 0.0)
        total = int(generation.metadata.get("gold_total") or 0) or len(gold_ids) or len(seen)
        if total:
            curves.append(np.cumsum(found) / total)
    if not curves:
        return []
    depth = max(c.size for c in curves)
    padded = np.array([np.pad(c, (0, depth - c.size), mode="edge") for c in curves])
    return [float(v) for v in padded.mean(axis=0)]


def _labels(runs: Sequence[RunRecord]) -> dict[str, str]:
    """Short names, ``task · model``; runs that share one add the options that differ if short, else a number.

    The full options, provider and endpoint of each run are in the report's legend.
    """
    from ..models import parse_model_spec

    base = {r.run_id: f"{r.task} · {_model_name(parse_model_spec(r.model))}" for r in runs}
    labels = dict(base)
    for label in set(base.values()):
        group = [r for r in runs if base[r.run_id] == label]
        if len(group) < 2:
            continue
        varying = _varying_args(group)
        named = {r.run_id: f"{label} ({_options_label(r, varying)})" for r in group}
        fits = bool(varying) and len(set(named.values())) == len(group) and max(map(len, named.values())) <= LABEL_WIDTH
        for number, run in enumerate(group, start=1):
            labels[run.run_id] = named[run.run_id] if fits else f"{label} [{number}]"
    return labels


LABEL_WIDTH = 48
"""Longest run label that carries its distinguishing options; longer ones are numbered instead."""


def _model_name(spec: tuple[str, str]) -> str:
    """``gpt-4o`` of ``openai-compatible:gpt-4o@https://host/v1``; a file path's stem; the provider alone."""
    provider, name = spec
    name = name.split("@", 1)[0].rstrip("/")
    name = name.rsplit("/", 1)[-1]
    return name.removesuffix(".gguf") or provider


def _options_label(run: RunRecord, varying: set[str]) -> str:
    args = run.config.get("task_args", {})
    return ", ".join(f"{k}={_short(args[k])}" for k in sorted(varying) if k in args)


def _varying_args(runs: Sequence[RunRecord]) -> set[str]:
    keys = {k for r in runs for k in r.config.get("task_args", {})}
    return {k for k in keys if len({json.dumps(r.config.get("task_args", {}).get(k)) for r in runs}) > 1}


def _task_label(run: RunRecord, varying: set[str]) -> str:
    extra = _options_label(run, varying)
    return f"{run.task} ({extra})" if extra else run.task


def _short(value: object) -> str:
    """A task option for a label: lists of more than 3 values as their first, count and hash."""
    if isinstance(value, list) and len(value) > 3:
        return f"[{value[0]}, … {len(value)} values #{stable_hash(value, 6)}]"
    return str(value)
