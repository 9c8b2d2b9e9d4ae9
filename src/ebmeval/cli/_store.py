"""``ebmeval store check``, ``salvage`` and ``merge``: a damaged run store, and the stores of shards."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from ._common import JsonOption, app

store_app = typer.Typer(
    help="Check a run store for damage, copy what is readable out of a damaged one, or merge shard stores."
)
app.add_typer(store_app, name="store")


@store_app.command("check")
def check(
    path: Annotated[Path, typer.Argument(help="The run store (SQLite file).")],
    as_json: JsonOption = False,
) -> None:
    """Run SQLite's integrity check on a store (read-only); exit 1 when it is damaged."""
    from ..store import check_store

    problems = check_store(path)
    if as_json:
        typer.echo(json.dumps({"store": str(path), "ok": not problems, "problems": problems}, indent=2))
    elif problems:
        typer.echo(f"{path}: damaged")
        for problem in problems:
            typer.echo(f"  {problem}")
        typer.echo(f"`ebmeval store salvage {path} --out NEW` copies every readable row into a new store")
    else:
        typer.echo(f"{path}: ok")
    if problems:
        raise typer.Exit(1)


@store_app.command("salvage")
def salvage(
    path: Annotated[Path, typer.Argument(help="The damaged run store (read, never changed).")],
    out: Annotated[Path, typer.Option(help="The new store to write (must not exist).")],
    as_json: JsonOption = False,
) -> None:
    """Copy every readable run, generation, step, score and error into a new store; say what was lost."""
    from ..store import salvage_store

    report = salvage_store(path, out)
    if as_json:
        payload = {
            "source": str(report.source),
            "target": str(report.target),
            "runs": report.runs,
            "tables": [vars(t) for t in report.tables],
            "lost": report.lost,
        }
        typer.echo(json.dumps(payload, indent=2))
        return
    for t in report.tables:
        lost = []
        if t.unreadable:
            lost.append(f"{t.unreadable} unreadable")
        if t.tail_damaged:
            lost.append("an unknown number at the end unreadable")
        if t.orphaned:
            lost.append(f"{t.orphaned} of lost runs")
        typer.echo(f"{t.table}: {t.copied} rows copied" + (f"; lost: {', '.join(lost)}" if lost else ""))
    for run_id, generations in report.runs.items():
        typer.echo(f"run {run_id}: {generations} generations")
    typer.echo(f"wrote {out}" + (" (some rows were lost, see above)" if report.lost else " (nothing lost)"))


@store_app.command("merge")
def merge(
    sources: Annotated[list[Path], typer.Argument(help="The stores of a run's shards (read, never changed).")],
    out: Annotated[Path, typer.Option(help="The store to merge into (created when missing).")],
    as_json: JsonOption = False,
) -> None:
    """Combine the stores of `ebmeval run --shard I/N` invocations into one store, without duplicates."""
    from ..store import merge_stores

    report = merge_stores(list(sources), out)
    if as_json:
        payload = {
            "target": str(report.target),
            "sources": [str(s) for s in report.sources],
            "runs": {r: {"generations": n, "status": report.status[r]} for r, n in report.runs.items()},
            "copied": report.copied,
            "provenance_differs": report.provenance_differs,
        }
        typer.echo(json.dumps(payload, indent=2))
        return
    for run_id, generations in report.runs.items():
        typer.echo(f"run {run_id}: {generations} generations, {report.status[run_id]}")
        if run_id in report.provenance_differs:
            typer.echo(f"  provenance differs from the kept run row in: {', '.join(report.provenance_differs[run_id])}")
    typer.echo(f"wrote {out}")
