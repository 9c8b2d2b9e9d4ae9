"""``ebmeval synthesis``: tables, negations and feasibility ratings of conclusion-synthesis runs."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from .._util.defaults import DEFAULT_STORE
from ._common import JsonOption, StoreOption

if TYPE_CHECKING:
    from ..judges import PanelAgreement
    from ..synthesis import Contrast, TableRow
    from ..tables import Table

synthesis_app = typer.Typer(help="Meta-analysis conclusion synthesis: tables and artifacts.", no_args_is_help=True)

NegationStoreOption = Annotated[
    str | None, typer.Option(help="Negation store (default: negations.sqlite beside the response cache).")
]


def _existing(path: str | Path, what: str) -> Path:
    from .._util.errors import DataError

    found = Path(path)
    if not found.is_file():
        raise DataError(found, f"no {what} here")
    return found


@synthesis_app.command("table")
def table(
    run_ids: Annotated[list[str], typer.Argument(help="Synthesis runs (ids or unique prefixes).")],
    metric: Annotated[
        list[str] | None,
        typer.Option("--metric", help="rubric, panel, rouge, bertscore, recall or feasibility (repeatable)."),
    ] = None,
    contrast: Annotated[
        str | None,
        typer.Option(help="Metric of the paired workflow and model contrasts (default: panel if scored, else rubric)."),
    ] = None,
    store: StoreOption = DEFAULT_STORE,
    as_json: JsonOption = False,
) -> None:
    """Model × workflow means with 95% CIs, paired contrasts (t-test, Cohen's d_z) and panel agreement."""
    from ..report import panel_table
    from ..synthesis import synthesis_contrasts, synthesis_table

    metrics = metric or ["rubric", "panel", "rouge", "bertscore", "recall"]
    _check_metrics([*metrics, *([contrast] if contrast else [])])
    path = _existing(store, "run store")
    rows = synthesis_table(path, run_ids, metrics)
    if contrast is None:
        contrast = _default_contrast(path, run_ids, metrics, rows)
    contrasts = synthesis_contrasts(path, run_ids, contrast)
    panels = _panel_agreements(path, rows)
    if as_json:
        payload = {
            "rows": [asdict(r) for r in rows],
            "contrasts": [asdict(c) for c in contrasts],
            "panels": {k: asdict(v) for k, v in panels.items()},
        }
        typer.echo(json.dumps(payload, indent=2, default=str))
        return
    typer.echo(_means_table(rows, metrics).markdown())
    if contrasts:
        typer.echo(_contrasts_table(contrasts, contrast).markdown())
    if panels:
        typer.echo(panel_table(panels).markdown())


def _check_metrics(names: list[str]) -> None:
    """Refuse a name that is not a synthesis metric."""
    from .._util.errors import ConfigError
    from ..synthesis import METRICS

    for name in names:
        if name not in METRICS:
            raise ConfigError("--metric", f"{name!r} is not one of {', '.join(METRICS)}")


def _default_contrast(path: Path, run_ids: list[str], metrics: list[str], rows: list[TableRow]) -> str:
    """The metric contrasted when none is given: panel if any run has panel scores, else rubric."""
    from ..synthesis import synthesis_table

    probe = rows if "panel" in metrics else synthesis_table(path, run_ids, ["panel"])
    return "panel" if any(row.means.get("panel") is not None for row in probe) else "rubric"


def _panel_agreements(path: Path, rows: list[TableRow]) -> dict[str, PanelAgreement]:
    """The panel agreement of each row with panel scores, keyed by run (and score set, for a run with several)."""
    from ..judges import panel_agreement

    judged = [r for r in rows if r.means.get("panel") is not None]
    several = {r.run_id for r in judged if sum(o.run_id == r.run_id for o in judged) > 1}
    return {  # a run with two panels' score sets: one entry per set, never their mean
        f"{r.run_id} {r.score_sets['panel']}" if r.run_id in several else r.run_id: panel_agreement(
            path, r.run_id, r.score_sets["panel"]
        )
        for r in judged
    }


def _means_table(rows: list[TableRow], metrics: list[str]) -> Table:
    """Each run's mean [95% CI] of each metric, with its counts; a column of score sets when a run has several."""
    from ..tables import Column, Estimate, Table

    split = len({r.run_id for r in rows}) < len(rows)  # a run scored by two judges: a row per judge
    means = Table(
        "Mean [95% CI] per run",
        [
            "run",
            "model",
            "source",
            "workflow",
            *(["score sets"] if split else []),
            Column("n", "number"),
            Column("truncated", "number"),
            Column("inputs cut", "number"),
            *[Column(name, "estimate", fmt="{:.2f}", missing=True) for name in metrics],
        ],
    )
    for row in rows:
        cells = [
            Estimate(row.means.get(name), row.cis.get(name), row.missing.get(name) or 0)
            if row.means.get(name) is not None
            else None
            for name in metrics
        ]
        labels = [", ".join(row.score_sets.values())] if split else []
        means.add(
            row.run_id,
            row.model.split("/")[-1],
            row.source,
            row.workflow,
            *labels,
            row.n,
            row.truncated,
            row.input_truncated,
            *cells,
        )
    return means


def _contrasts_table(contrasts: list[Contrast], metric: str) -> Table:
    """The paired workflow and model contrasts of ``metric``."""
    from ..tables import Column, Table

    paired = Table(
        f"Paired contrasts of {metric}",
        [
            "factor",
            "a",
            "b",
            "within",
            Column("n", "number"),
            Column("mean(a − b)", "number", fmt="{:.2f}"),
            Column("t", "number", fmt="{:.2f}"),
            Column("p", "number", fmt="{:.3f}"),
            Column("Cohen's d_z", "number", fmt="{:.2f}"),
            "note",
        ],
    )
    for c in contrasts:
        paired.add(c.factor, c.a, c.b, c.within.split("/")[-1], c.n, c.mean_diff, c.t, c.pvalue, c.cohens_d, c.note)
    return paired


@synthesis_app.command("negations")
def negations(
    out: Annotated[Path, typer.Argument(help="JSONL file to write.")],
    negation_store: NegationStoreOption = None,
    negator: Annotated[str | None, typer.Option(help="Only negations by this model name.")] = None,
) -> None:
    """Export the negated abstracts (original, negation, negating model, prompt) as JSONL."""
    from ..synthesis import default_negation_path, export_negations

    source = _existing(negation_store or default_negation_path(), "negation store")
    count = export_negations(out, store=source, negator=negator)
    typer.echo(f"{count} negations from {source} written to {out}")


@synthesis_app.command("redo-negations")
def redo_negations(
    negation_store: NegationStoreOption = None,
    unchecked: Annotated[
        bool, typer.Option("--unchecked", help="Also redo negations whose check reply was neither yes nor no.")
    ] = False,
) -> None:
    """Mark the negations the negation check found not inverted to be made again by the next run or resume."""
    from ..synthesis import NegationStore, default_negation_path

    source = _existing(negation_store or default_negation_path(), "negation store")
    store = NegationStore(source)
    try:
        count = store.redo(unchecked=unchecked)
    finally:
        store.close()
    typer.echo(f"{count} negations in {source} marked to be made again; resume or re-run to make them")


@synthesis_app.command("feasibility")
def feasibility(
    run_id: Annotated[str, typer.Argument(help="A run of the feasibility workflow.")],
    out: Annotated[Path, typer.Argument(help="JSONL file to write (the task's feasibility_ratings).")],
    store: StoreOption = DEFAULT_STORE,
) -> None:
    """Export a feasibility run's mean ratings, to filter items with ``feasibility_above``."""
    from ..synthesis import export_feasibility

    count = export_feasibility(_existing(store, "run store"), run_id, out)
    typer.echo(f"{count} ratings written to {out}")
