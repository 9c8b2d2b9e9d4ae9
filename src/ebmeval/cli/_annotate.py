"""``ebmeval annotate``: blinded expert annotation studies."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from .._util.defaults import DEFAULT_STORE
from ._common import JsonOption, StoreOption, app, console

annotate_app = typer.Typer(help="Blinded expert annotation studies (web app).", no_args_is_help=True)
app.add_typer(annotate_app, name="annotate")
DbOption = Annotated[str, typer.Option("--db", help="Study database: a SQLite path or a PostgreSQL URL.")]


@annotate_app.command("create")
def annotate_create(
    db: DbOption,
    slug: Annotated[str, typer.Option(help="Short name of the study.")],
    form: Annotated[
        str, typer.Option(help="rubric, factuality, pairwise, checklist or expert-steps (each item's own steps).")
    ],
    annotator: Annotated[list[str], typer.Option("--annotator", help="Annotator name (repeatable).")],
    k: Annotated[int, typer.Option(help="Annotators per item.")] = 2,
    run: Annotated[list[str] | None, typer.Option("--run", help="Run id whose outputs are candidates.")] = None,
    store: Annotated[str | None, typer.Option("--store", help="Run store holding --run.")] = None,
    items: Annotated[list[Path] | None, typer.Option("--items", help="JSONL items file (repeatable).")] = None,
    calibration: Annotated[Path | None, typer.Option(help="JSONL gold examples for calibration.")] = None,
    pass_threshold: Annotated[float, typer.Option(help="Calibration score needed to start.")] = 0.8,
    calibration_size: Annotated[
        int | None, typer.Option(help="Gold examples per calibration attempt (default: all; one attempt).")
    ] = None,
    checklist_step: Annotated[list[str] | None, typer.Option("--checklist-step", help="Checklist item.")] = None,
    title: Annotated[str | None, typer.Option(help="Title shown to annotators.")] = None,
    seed: Annotated[int, typer.Option(help="Seed of assignment and order.")] = 0,
    limit: Annotated[int | None, typer.Option(help="Use only the first N items.")] = None,
    base_url: Annotated[str, typer.Option(help="Where the app will be served.")] = "http://127.0.0.1:8765",
) -> None:
    """Create a study and print each annotator's invitation link."""
    from ..annotate import create_study

    invitations = create_study(
        db,
        slug=slug,
        form=form,
        annotators=annotator,
        k=k,
        runs=run or (),
        store=store,
        files=items or (),
        calibration=calibration,
        pass_threshold=pass_threshold,
        calibration_size=calibration_size,
        checklist=checklist_step,
        title=title,
        seed=seed,
        limit=limit,
    )
    for who, link in invitations.links(base_url).items():
        typer.echo(f"{who}\t{link}")
    if invitations.skipped:
        console.print(f"[yellow]skipped {len(invitations.skipped)} items:[/] {invitations.skipped}")


@annotate_app.command("serve")
def annotate_serve(
    db: DbOption,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8765,
    workers: Annotated[int, typer.Option(help="Server worker processes.")] = 1,
    behind_tls: Annotated[
        bool, typer.Option("--behind-tls", help="Users connect over HTTPS via a proxy: Secure cookies and HSTS.")
    ] = False,
    trusted_proxies: Annotated[
        str,
        typer.Option(help="Comma-separated proxy addresses whose X-Forwarded-Proto/-For are believed (default: none)."),
    ] = "",
) -> None:
    """Serve the annotation app."""
    from ..annotate import serve

    serve(db, host=host, port=port, workers=workers, behind_tls=behind_tls, trusted_proxies=trusted_proxies)


@annotate_app.command("revoke")
def annotate_revoke(
    db: DbOption,
    study: Annotated[str, typer.Option(help="Study slug.")],
    annotator: Annotated[str | None, typer.Option(help="Annotator whose invitation link is revoked.")] = None,
    admin: Annotated[bool, typer.Option("--admin", help="Revoke the lead's admin link instead.")] = False,
    new_link: Annotated[bool, typer.Option("--new-link", help="Issue a replacement link and print it.")] = False,
    base_url: Annotated[str, typer.Option(help="Where the app is served.")] = "http://127.0.0.1:8765",
) -> None:
    """Revoke an invitation (or the admin) link and sign out its sessions; --new-link rotates it."""
    from .._util.errors import ConfigError
    from ..annotate import revoke

    if (annotator is None) == (not admin):
        raise ConfigError("--annotator/--admin", "give exactly one of --annotator NAME or --admin")
    token = revoke(db, study, annotator=annotator, new_link=new_link)
    who = annotator if annotator is not None else "admin"
    console.print(f"revoked the {'admin' if admin else 'invitation'} link of {who}; its sessions are signed out")
    if token is not None:
        path = "/admin/join/" if admin else "/join/"
        typer.echo(f"{who}\t{base_url.rstrip('/')}{path}{token}")


@annotate_app.command("export")
def annotate_export(
    db: DbOption,
    study: Annotated[str, typer.Option(help="Study slug.")],
    out: Annotated[Path, typer.Option(help="Output file.")],
    fmt: Annotated[str, typer.Option("--format", help="csv or json.")] = "csv",
) -> None:
    """Export a study's answers."""
    from .._util.errors import ConfigError
    from ..annotate import export

    if fmt not in ("csv", "json"):
        raise ConfigError("--format", f"must be csv or json, not {fmt!r}")
    export(db, study, out, fmt="csv" if fmt == "csv" else "json")
    console.print(f"wrote {out}")


@annotate_app.command("import")
def annotate_import(
    db: DbOption,
    study: Annotated[str, typer.Option(help="Study slug.")],
    store: StoreOption = DEFAULT_STORE,
) -> None:
    """Write a study's human scores into the run store (who, when, which form)."""
    from ..annotate import import_scores

    console.print(f"imported {import_scores(db, study, store)} human scores into {store}")


@annotate_app.command("report")
def annotate_report(
    study: Annotated[str, typer.Option(help="Study slug.")],
    judge: Annotated[str, typer.Option(help="Scorer whose scores are compared with the humans'.")],
    metric: Annotated[str, typer.Option(help="The scorer's metric key.")],
    field: Annotated[str, typer.Option(help="The human form field.")] = "score",
    store: StoreOption = DEFAULT_STORE,
    as_json: JsonOption = False,
) -> None:
    """Judge-versus-human statistics: Pearson, Bland–Altman and agreement."""
    from ..annotate import agreement_report

    result = agreement_report(store, study, judge=judge, metric=metric, field=field)
    typer.echo(json.dumps(result.to_dict(), indent=2) if as_json else result.to_markdown())
