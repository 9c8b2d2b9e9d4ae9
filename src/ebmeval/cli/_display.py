"""Terminal output: the run progress bar and result tables."""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from ..tables import Column, Table

if TYPE_CHECKING:
    from rich.table import Table as RichTable

    from ..runner import Progress as RunProgress
    from ..runner import RunSummary

console = Console(stderr=True)
"""Progress and messages go to stderr so stdout carries only results (``--json``)."""


class ProgressBar:
    """A rich progress bar on stderr, fed by a runner-style progress callback or by plain counts.

    Like every rich live display it redraws only on a terminal; elsewhere (a pipe, a log file)
    it writes its final line once, when the block ends. ``unit`` names what is counted
    (``samples``, ``comparisons``, ``documents``); ``calls`` adds the cache and error counts of
    the model calls; ``quiet`` (``--quiet``) shows nothing.
    """

    def __init__(self, label: str, *, unit: str = "samples", calls: bool = True, quiet: bool = False) -> None:
        counts = TextColumn("cache {task.fields[hits]}/{task.fields[calls]}  errors {task.fields[errors]}")
        self._bar = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            *([counts] if calls else []),
            console=console,
            transient=False,
            disable=quiet,
        )
        self._label = label
        self._unit = unit
        self._task: TaskID | None = None
        self._resumed = 0

    def __enter__(self) -> ProgressBar:
        self._bar.__enter__()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self._bar.__exit__(kind, value, tb)

    def update(self, progress: RunProgress) -> None:
        """Show ``progress``."""
        self._show(
            progress.done,
            progress.total,
            resumed=progress.resumed,
            completed=progress.done + progress.errors,
            hits=progress.cache_hits,
            calls=progress.model_calls,
            errors=progress.errors,
        )

    def count(self, done: int, total: int) -> None:
        """Show ``done`` of ``total`` (a callback of the ``(done, total)`` form)."""
        self._show(done, total, resumed=0, completed=done, hits=0, calls=0, errors=0)

    def _show(self, done: int, total: int, *, resumed: int, completed: int, hits: int, calls: int, errors: int) -> None:
        if self._task is None:
            self._resumed = resumed
            self._task = self._bar.add_task(
                self._label, total=total, completed=done, rate="", hits=hits, calls=calls, errors=errors
            )
        elapsed = self._bar.tasks[0].elapsed or 0.0
        fresh = done - self._resumed
        rate = f"{fresh / elapsed:.2f} {self._unit}/s" if elapsed > 0 and fresh > 0 else ""
        self._bar.update(self._task, total=total, completed=completed, rate=rate, hits=hits, calls=calls, errors=errors)


def summary_table(summary: RunSummary, *, by: str | None = None) -> RichTable:
    """The metrics of a run as a terminal table."""
    return metrics_table(summary, by=by).rich()


TRUNCATION_COLUMNS = (Column("truncated", "number"), Column("inputs cut", "number"))
"""Beside every metric: answers cut at their token limit (not scored), scored answers whose input was cut."""


def metrics_table(summary: RunSummary, *, by: str | None = None) -> Table:
    """The metrics of a run: value, 95% CI, n, missing and truncations per scorer and metric, the totals as a note.

    ``truncated`` counts the answers cut at their token limit (not scored), ``inputs cut`` the
    scored answers whose input was cut to fit the context window.
    """
    run = summary.run
    table = Table(
        f"{run.task} · {run.model} · run {run.run_id}",
        [
            "scorer",
            "metric",
            *([by] if by is not None else []),
            Column("value", "number"),
            Column("95% CI", "interval", pair="{}–{}"),
            Column("n", "number"),
            Column("missing", "number"),
            *TRUNCATION_COLUMNS,
        ],
    )
    for m in summary.metrics:
        if by is None and m.group is not None:
            continue
        group = [m.group or "all"] if by is not None else []
        table.add(m.scorer, m.metric, *group, m.value, m.ci, m.n, m.missing, m.truncated, m.input_truncated)
    truncated = f"{summary.truncated} truncated ({summary.truncated_unparsed} unparsed) · " if summary.truncated else ""
    truncated += f"{summary.input_truncated} inputs cut to fit · " if summary.input_truncated else ""
    table.notes.append(
        f"{summary.generations} answered · {summary.unparsed} unparsed · {truncated}{summary.failing} failing · "
        f"{summary.usage.input_tokens:,} prompt + {summary.usage.output_tokens:,} completion tokens · "
        f"{summary.mean_latency:.2f} s/sample · status {run.status_text}"
    )
    table.notes += [f"note: {note}" for note in summary.notes]
    return table


def grid_table(summaries: list[RunSummary]) -> Table:
    """The overall metrics of several runs (a grid) in one table, one row per run and metric."""
    table = Table(
        f"{len(summaries)} runs",
        [
            "run",
            "task",
            "model",
            "metric",
            Column("value", "number"),
            Column("95% CI", "interval", pair="{}–{}"),
            Column("n", "number"),
            Column("missing", "number"),
            *TRUNCATION_COLUMNS,
        ],
    )
    for summary in summaries:
        run = summary.run
        overall = [m for m in summary.metrics if m.group is None]
        for m in overall:
            metric = m.metric if m.metric == m.scorer else f"{m.scorer} · {m.metric}"
            table.add(
                run.run_id, run.task, run.model, metric, m.value, m.ci, m.n, m.missing, m.truncated, m.input_truncated
            )
        if not overall:
            table.add(run.run_id, run.task, run.model, "(no metric)", None, None, None, None, None, None)
        table.notes.append(f"{run.run_id}: {summary.unparsed} unparsed · {summary.failing} failing · {run.status}")
    return table
