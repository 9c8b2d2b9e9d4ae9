"""Report figures as PNG bytes (matplotlib, no display needed)."""

from __future__ import annotations

import io
from types import ModuleType
from typing import TYPE_CHECKING

from .._util.errors import MissingDependencyError
from ._human import POOLED

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from ..runner import MetricSummary
    from ._build import Report


def _pyplot() -> ModuleType:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise MissingDependencyError("Report plots", "matplotlib", "report") from exc
    return plt


def _png(figure: Figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    _pyplot().close(figure)
    return buffer.getvalue()


def metric_bars(report: Report) -> dict[str, bytes]:
    """One bar chart per metric with a value: each run's mean with its 95% CI as an error bar and its n."""
    plt = _pyplot()
    figures: dict[str, bytes] = {}
    keys = sorted({(m.scorer, m.metric) for s in report.summaries.values() for m in s.metrics if m.group is None})
    for scorer, metric in keys:
        names, values, low, high, counts, methods, chance = [], [], [], [], [], set(), []
        for run in report.runs:
            for m in report.summaries[run.run_id].metrics:
                if (m.scorer, m.metric) == (scorer, metric) and m.group is None and m.value is not None:
                    names.append(report.labels[run.run_id])
                    values.append(m.value)
                    counts.append(m.n)
                    methods.add(m.ci_method)
                    chance.append(report.chance_of(run.run_id, scorer, metric))
                    ok = m.ci[0] == m.ci[0]
                    low.append(m.value - m.ci[0] if ok else 0.0)
                    high.append(m.ci[1] - m.value if ok else 0.0)
        if not names:  # no run has a value of this metric: no empty plot
            continue
        figure, axis = plt.subplots(figsize=(max(4.0, 1.2 * len(names) + 2), 3.2))
        axis.bar(range(len(names)), values, yerr=[low, high], capsize=4, color="#4C72B0")
        _n_labels(axis, counts)
        _chance_marks(axis, chance)
        axis.set_xticks(range(len(names)), names, rotation=20, ha="right", fontsize=8)
        axis.set_ylabel(metric)
        if methods == {"wilson"}:
            axis.set_ylim(0, 1.05)  # a proportion's axis is its whole range
        axis.set_title(f"{scorer}/{metric} (95% CI: {', '.join(sorted(methods))})", fontsize=10)
        axis.spines[["top", "right"]].set_visible(False)
        figures[f"bars-{scorer}-{metric}".replace("/", "_")] = _png(figure)
    return figures


def _n_labels(axis: Axes, counts: list[int]) -> None:
    """Each bar's n at its foot, on a light box: readable on a bar of any height, zero included."""
    for x, n in enumerate(counts):
        axis.annotate(
            f"n={n}",
            (x, 0),
            xytext=(0, 3),
            textcoords="offset points",
            ha="center",
            va="bottom",
            fontsize=8,
            color="#222",
            bbox={"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none", "alpha": 0.85},
        )


def _chance_marks(axis: Axes, chance: list[float | None]) -> None:
    """A dashed line across each bar whose metric has a chance level, labelled once in a legend."""
    label = "chance (1/k options)"
    for x, level in enumerate(chance):
        if level is not None:
            axis.hlines(level, x - 0.45, x + 0.45, colors="#C44E52", linestyles="--", linewidth=1.2, label=label)
            label = "_nolegend_"
    if label == "_nolegend_":
        axis.legend(fontsize=7, loc="upper right")


def label_heatmap(report: Report) -> dict[str, bytes]:
    """Label × run heatmap of each metric's mean when the report is broken down by a label."""
    if report.by is None:
        return {}
    plt = _pyplot()
    figures: dict[str, bytes] = {}
    keys = sorted({(m.scorer, m.metric) for s in report.summaries.values() for m in s.metrics if m.group is not None})
    for scorer, metric in keys:
        groups = sorted(
            {
                m.group
                for s in report.summaries.values()
                for m in s.metrics
                if m.group and (m.scorer, m.metric) == (scorer, metric)
            }
        )
        found = {
            (g, r.run_id): m
            for r in report.runs
            for m in report.summaries[r.run_id].metrics
            for g in groups
            if (m.scorer, m.metric, m.group) == (scorer, metric, g) and m.value is not None
        }
        if not found:  # no value anywhere: no empty plot
            continue
        grid = [[_value(found.get((g, r.run_id))) for r in report.runs] for g in groups]
        figure, axis = plt.subplots(figsize=(2 + 1.3 * len(report.runs), 1 + 0.35 * len(groups)))
        image = axis.imshow(grid, aspect="auto", cmap="viridis", vmin=0, vmax=max(1.0, max(max(r) for r in grid)))
        axis.set_xticks(
            range(len(report.runs)), [report.labels[r.run_id] for r in report.runs], rotation=20, ha="right", fontsize=8
        )
        axis.set_yticks(range(len(groups)), groups, fontsize=8)
        for i, row in enumerate(grid):
            for j, value in enumerate(row):
                if value == value:
                    n = found[(groups[i], report.runs[j].run_id)].n
                    axis.text(j, i, f"{value:.2f}\nn={n}", ha="center", va="center", fontsize=7, color="white")
        figure.colorbar(image, ax=axis)
        axis.set_title(f"{scorer}/{metric} by {report.by}", fontsize=10)
        figures[f"heatmap-{scorer}-{metric}".replace("/", "_")] = _png(figure)
    return figures


def _value(metric: MetricSummary | None) -> float:
    """A heatmap cell: the metric's mean, NaN (left blank) where the run has none."""
    return float("nan") if metric is None or metric.value is None else metric.value


def recall_curves(report: Report) -> dict[str, bytes]:
    """Recall@k curves of the runs that retrieve."""
    if not report.recall_at_k:
        return {}
    plt = _pyplot()
    figure, axis = plt.subplots(figsize=(5, 3.2))
    for run_id, curve in report.recall_at_k.items():
        axis.plot(range(1, len(curve) + 1), curve, marker="o", markersize=3, label=report.labels[run_id])
    axis.set_xlabel("k")
    axis.set_ylabel("recall@k")
    axis.set_ylim(0, 1.02)
    axis.legend(fontsize=7)
    axis.spines[["top", "right"]].set_visible(False)
    return {"recall-at-k": _png(figure)}


def judge_versus_human(report: Report) -> dict[str, bytes]:
    """Per comparison: judge against mean human score with the identity line, and a Bland–Altman plot."""
    if not report.human:
        return {}
    plt = _pyplot()
    figures: dict[str, bytes] = {}
    for index, comparison in enumerate(report.human):
        if not comparison.pairs:
            continue
        judge = [p[0] for p in comparison.pairs]
        human = [p[1] for p in comparison.pairs]
        figure, (scatter, agreement) = plt.subplots(1, 2, figsize=(9, 3.6))
        low, high = min(judge + human), max(judge + human)
        scatter.plot([low, high], [low, high], color="#999", linestyle="--", linewidth=1, label="identity")
        scatter.scatter(human, judge, s=14, alpha=0.7)
        scatter.set_xlabel(f"human {comparison.field} (mean of annotators)")
        scatter.set_ylabel(comparison.judge)
        scatter.legend(fontsize=7)
        means = [(j + h) / 2 for j, h in comparison.pairs]
        differences = [h - j for j, h in comparison.pairs]
        agreement.scatter(means, differences, s=14, alpha=0.7)
        if comparison.bland_altman is not None:
            bias = comparison.bland_altman["bias"]
            lo, hi = comparison.bland_altman["loa"]
            agreement.axhline(bias, color="#C44E52", label=f"bias {bias:+.2f}")
            agreement.axhline(lo, color="#999", linestyle="--", label=f"limits {lo:.2f}, {hi:.2f}")
            agreement.axhline(hi, color="#999", linestyle="--")
            agreement.legend(fontsize=7)
        agreement.set_xlabel("mean of judge and human")
        agreement.set_ylabel("human − judge")
        figure.suptitle(
            f"{comparison.study}: {comparison.judge} vs humans, {POOLED} (n = {comparison.n_pairs})", fontsize=10
        )
        figures[f"human-{index}"] = _png(figure)
    return figures


def all_figures(report: Report) -> dict[str, bytes]:
    """Every figure the report's data allows, by file stem."""
    return {**metric_bars(report), **label_heatmap(report), **recall_curves(report), **judge_versus_human(report)}
