"""Terminal output: the run progress bar and result tables."""

from __future__ import annotations

from types import TracebackType

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
from rich.table import Table

from ..runner import Progress as RunProgress
from ..runner import RunSummary

console = Console(stderr=True)
"""Progress and messages go to stderr so stdout carries only results (``--json``)."""


class ProgressBar:
    """A rich progress bar fed by the runner's progress callback."""

    def __init__(self, label: str) -> None:
        self._bar = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            TextColumn("cache {task.fields[hits]}/{task.fields[calls]}  errors {task.fields[errors]}"),
            console=console,
            transient=False,
        )
        self._label = label
        self._task: TaskID | None = None
        self._resumed = 0

    def __enter__(self) -> ProgressBar:
        self._bar.__enter__()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self._bar.__exit__(kind, value, tb)

    def update(self, progress: RunProgress) -> None:
        """Show ``progress``."""
        if self._task is None:
            self._resumed = progress.resumed
            self._task = self._bar.add_task(
                self._label, total=progress.total, completed=progress.done, rate="", hits=0, calls=0, errors=0
            )
        elapsed = self._bar.tasks[0].elapsed or 0.0
        fresh = progress.done - self._resumed
        rate = f"{fresh / elapsed:.2f} samples/s" if elapsed > 0 and fresh > 0 else ""
        self._bar.update(
            self._task,
            completed=progress.done + progress.errors,
            rate=rate,
            hits=progress.cache_hits,
            calls=progress.model_calls,
            errors=progress.errors,
        )


def summary_table(summary: RunSummary, *, by: str | None = None) -> Table:
    """The metrics of a run as a table."""
    run = summary.run
    table = Table(title=f"{run.task} · {run.model} · run {run.run_id}", title_justify="left")
    table.add_column("scorer")
    table.add_column("metric")
    if by is not None:
        table.add_column(by)
    table.add_column("value", justify="right")
    table.add_column("95% CI", justify="right")
    table.add_column("n", justify="right")
    table.add_column("missing", justify="right")
    for m in summary.metrics:
        if by is None and m.group is not None:
            continue
        row = [m.scorer, m.metric]
        if by is not None:
            row.append(m.group or "all")
        row += [
            "—" if m.value is None else f"{m.value:.3f}",
            f"{m.ci[0]:.3f}–{m.ci[1]:.3f}" if m.ci[0] == m.ci[0] else "—",
            str(m.n),
            str(m.missing),
        ]
        table.add_row(*row)
    truncated = f"{summary.truncated} truncated ({summary.truncated_unparsed} unparsed) · " if summary.truncated else ""
    table.caption = (
        f"{summary.generations} answered · {summary.unparsed} unparsed · {truncated}{summary.failing} failing · "
        f"{summary.usage.input_tokens:,} prompt + {summary.usage.output_tokens:,} completion tokens · "
        f"{summary.mean_latency:.2f} s/sample · status {run.status}"
        + "".join(f"\nnote: {note}" for note in summary.notes)
    )
    table.caption_justify = "left"
    return table
