"""The paper's tables with our value, the published value and their difference, each cell traced to its run."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..runner import MetricSummary, RunSummary
from ..tables import Column, Table
from ._reproduce import Reproduction


@dataclass(frozen=True)
class Measure:
    """What one group of columns shows: a metric of a scorer, in one condition, perhaps for one group.

    Attributes:
        header: Column header, as in the paper (``EMR``, ``abstract``, ``statistics`` …).
        condition: The preset's condition whose runs it reads.
        scorer: Name of the scorer (its task's own score set is read).
        metric: Metric name (``exact_match`` …).
        by: Metadata key the metric is broken down by (``labels`` …), with ``group`` its value.
        group: The group's value.
    """

    header: str
    condition: str
    scorer: str
    metric: str
    by: str | None = None
    group: str | None = None


@dataclass(frozen=True)
class CellTrace:
    """Where one of our values comes from, beside the published value it is compared with."""

    row: str
    column: str
    value: float | None
    published: float | None
    difference: float | None
    model: str
    condition: str
    run_id: str
    score_set: str
    """Id of the score set read (``ebmeval show RUN`` lists it)."""
    scorer: str
    metric: str
    group: str | None
    n: int
    missing: int
    truncated: int = 0
    """Answers of the score set cut at their token limit (not scored)."""
    input_truncated: int = 0
    """Scored answers whose input was cut to fit the context window."""


@dataclass
class TracedTable:
    """A :class:`~ebmeval.tables.Table` of the paper and the trace of each value of ours in it."""

    table: Table
    cells: list[CellTrace]

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready form: the table's header, rows and notes, and every traced cell."""
        return {
            "title": self.table.title,
            "header": self.table.header,
            "rows": self.table.texts(),
            "notes": self.table.notes,
            "cells": [asdict(cell) for cell in self.cells],
        }


@dataclass(frozen=True)
class Entry:
    """One row of a comparison table.

    Attributes:
        model: The model whose runs fill our cells (``None``: a published row no model reproduced).
        row: The paper's row it stands beside, as the paper names it (``""`` when none).
        measures: What each of our cells reads, by header (a header without one stays empty).
        published: The paper's value by header.
        setting: The condition the row shows, where a model has several rows (a ``setting`` column).
        traced: Values the table builder computed itself (an arena's ratings), by header; they
            take the place of a measure's.
    """

    model: str | None
    row: str
    measures: Sequence[Measure]
    published: Mapping[str, float] = field(default_factory=dict)
    setting: str | None = None
    traced: Mapping[str, CellTrace] = field(default_factory=dict)


def comparison(
    reproduction: Reproduction,
    title: str,
    measures: Sequence[Measure],
    published: Mapping[str, Mapping[str, float]],
    *,
    source: str,
    decimals: int = 2,
) -> TracedTable:
    """A table with one row per model, and per measure our value, the published one and ours minus it.

    Rows: each model the user named (beside the paper's row it reproduces, see
    :meth:`~ebmeval.reproduce.Reproduction.row`), then each published row no model reproduced,
    with our columns empty. ``published`` maps the paper's row → measure header → value;
    ``source`` says where in the paper they are (``Table 4`` …). Notes name the run and score
    set behind every value of ours, and repeat once each note of those runs' summaries.
    """
    rows = {model: reproduction.row(model, published) for model in reproduction.models}
    entries = [Entry(model, row or "", measures, published.get(row or "", {})) for model, row in rows.items()]
    entries += [Entry(None, row, measures, values) for row, values in published.items() if row not in rows.values()]
    headers = [m.header for m in measures]
    return comparison_table(reproduction, title, headers, entries, source=source, decimals=decimals)


def comparison_table(
    reproduction: Reproduction,
    title: str,
    headers: Sequence[str],
    entries: Sequence[Entry],
    *,
    source: str,
    decimals: int = 2,
) -> TracedTable:
    """The rows of ``entries`` under ``model``, ``paper row`` and, per header, ours, the paper's and Δ.

    Our values have one decimal more than the paper's; Δ is ours minus the paper's. When no
    entry has a published value (a figure the paper shows only as a plot), the paper and Δ
    columns are left out. A layout other than one row per model (a model under two settings,
    say) builds its entries itself.
    """
    printed = any(entry.published for entry in entries)
    settings = any(entry.setting is not None for entry in entries)
    columns: list[Column | str] = ["model", "paper row", *(["setting"] if settings else [])]
    for header in headers:
        columns += paper_columns(header, decimals)[: 3 if printed else 1]
    table = Table(f"{title} ({source})", columns)
    cells: list[CellTrace] = []
    for entry in entries:
        by_header = {m.header: m for m in entry.measures}
        values: tuple[float | None, ...] = ()
        for header in headers:
            paper = entry.published.get(header)
            measure = by_header.get(header)
            trace = entry.traced.get(header)
            if trace is None and entry.model is not None and measure is not None:
                trace = _trace(reproduction, entry.model, entry.row or entry.model, measure, paper)
            if trace is not None:
                cells.append(trace)
            value = trace.value if trace else None
            values += with_paper(value, paper) if printed else (value,)
        first = [entry.model or "", entry.row, *([entry.setting or ""] if settings else [])]
        table.add(*first, *values)
    table.notes += _run_notes(cells) + _summary_notes(reproduction, cells)
    table.notes.append(
        f"paper: published values from {source}; Δ = ours − paper"
        if printed
        else f"{source} prints no values: our values only"
    )
    return TracedTable(table, cells)


def setting_row(row: str, setting: str) -> str:
    """The label of a paper row shown under one of its settings (a model with and without RAG …)."""
    return f"{row} ({setting})"


def unreproduced(published: Mapping[str, Mapping[str, Mapping[str, float]]], shown: Collection[str]) -> list[Entry]:
    """An entry of published values only for each paper row → setting → header → value not among ``shown``.

    Each is labelled by :func:`setting_row`; ``shown`` holds the labels of the rows a model reproduced.
    """
    return [
        Entry(None, setting_row(row, setting), (), values)
        for row, settings in published.items()
        for setting, values in settings.items()
        if setting_row(row, setting) not in shown
    ]


def _trace(
    reproduction: Reproduction, model: str, row: str, measure: Measure, published: float | None
) -> CellTrace | None:
    """Our value of ``measure`` for ``model`` with its run and score set, ``None`` when that condition was not run."""
    summary = reproduction.summary(measure.condition, model, by=measure.by)
    if summary is None:
        return None
    found = _metric(summary, measure, reproduction.runs[(measure.condition, model)].score_sets)
    value = found.value if found else None
    return CellTrace(
        row=row,
        column=measure.header,
        value=value,
        published=published,
        difference=difference(value, published),
        model=model,
        condition=measure.condition,
        run_id=summary.run.run_id,
        score_set=_score_set(summary, found.scorer if found else measure.scorer),
        scorer=found.scorer if found else measure.scorer,
        metric=measure.metric,
        group=measure.group,
        n=found.n if found else 0,
        missing=found.missing if found else 0,
        truncated=found.truncated if found else 0,
        input_truncated=found.input_truncated if found else 0,
    )


def _metric(summary: RunSummary, measure: Measure, score_sets: Sequence[str]) -> MetricSummary | None:
    """The measure's value in the score set of the condition's scorer (one of ``score_sets``)."""
    labels = [s.label for s in summary.score_sets if s.name == measure.scorer and s.id in score_sets]
    for label in labels:
        for metric in summary.metrics:
            if metric.scorer == label and metric.metric == measure.metric and metric.group == measure.group:
                return metric
    return None


def _score_set(summary: RunSummary, label: str) -> str:
    return next((s.id for s in summary.score_sets if s.label == label), "")


def paper_columns(header: str, decimals: int = 2) -> list[Column]:
    """The three columns of a value beside the paper's: ours (one decimal more), ``paper`` and ``Δ``."""
    return [
        Column(header, "number", fmt=f"{{:.{decimals + 1}f}}"),
        Column(f"{header} paper", "number", fmt=f"{{:.{decimals}f}}"),
        Column(f"{header} Δ", "number", fmt=f"{{:+.{decimals + 1}f}}"),
    ]


def with_paper(ours: float | None, paper: float | None) -> tuple[float | None, float | None, float | None]:
    """The cells under :func:`paper_columns`: our value, the paper's and ours minus it (``None`` without both)."""
    return ours, paper, difference(ours, paper)


def difference(ours: float | None, paper: float | None) -> float | None:
    """Ours minus the paper's value, ``None`` unless both are known."""
    return None if ours is None or paper is None else ours - paper


def _summary_notes(reproduction: Reproduction, cells: Sequence[CellTrace]) -> list[str]:
    """The notes of the runs' summaries (a flawed item's key, greedy epochs …), each once."""
    found: dict[str, None] = {}
    for model, condition in dict.fromkeys((cell.model, cell.condition) for cell in cells):
        summary = reproduction.summary(condition, model)
        found.update(dict.fromkeys(f"note: {note}" for note in (summary.notes if summary else [])))
    return list(found)


def _run_notes(cells: Sequence[CellTrace]) -> list[str]:
    """One note per run a table reads: model, condition, run id and score set."""
    seen: dict[tuple[str, str], str] = {}
    for cell in cells:
        seen.setdefault(
            (cell.model, cell.condition), f"run {cell.run_id}, score set {cell.score_set[:12]} ({cell.scorer})"
        )
    return [f"{model} · {condition}: {where}" for (model, condition), where in seen.items()]
