"""``ebmeval reproduce``: a paper's tables from one command (see ``ebmeval.reproduce``)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from .._util.defaults import DEFAULT_STORE
from ._common import (
    ConcurrencyOption,
    JsonOption,
    LimitOption,
    ModelArgOption,
    RoleArgOption,
    RoleOption,
    ScorerArgOption,
    SeedOption,
    StoreOption,
    app,
    console,
    key_values,
    role_models,
    scorer_options,
)

if TYPE_CHECKING:
    from ..reproduce import Preset, Reproduction
    from ..runner import RunConfig, RunResult

Format = Literal["terminal", "markdown", "latex", "csv"]


@app.command()
def reproduce(
    paper: Annotated[str | None, typer.Argument(help="Preset name (see --list).")] = None,
    list_presets: Annotated[bool, typer.Option("--list", help="List the presets, what they cover and cannot.")] = False,
    model: Annotated[list[str] | None, typer.Option("--model", help="Model spec to run (repeatable).")] = None,
    model_arg: ModelArgOption = None,
    role: RoleOption = None,
    role_arg: RoleArgOption = None,
    scorer_arg: ScorerArgOption = None,
    preset_arg: Annotated[
        list[str] | None,
        typer.Option("--preset-arg", help="The preset's option KEY=VALUE (see --list): a file or index of yours."),
    ] = None,
    paper_row: Annotated[
        list[str] | None,
        typer.Option("--paper-row", help="SPEC=ROW: the paper's row a model reproduces (repeatable)."),
    ] = None,
    condition: Annotated[
        list[str] | None, typer.Option("--condition", help="Run only this condition (repeatable; default all).")
    ] = None,
    limit: LimitOption = None,
    seed: SeedOption = None,
    concurrency: ConcurrencyOption = None,
    store: StoreOption = DEFAULT_STORE,
    fmt: Annotated[str, typer.Option("--format", help="terminal, markdown, latex or csv.")] = "terminal",
    as_json: JsonOption = False,
) -> None:
    """Run a paper's conditions on the models named and print its tables beside the published values.

    Each condition on each model is an ordinary run in the store: re-running the command
    resumes what is unfinished and reuses what is done. The run options (``--model-arg``,
    ``--role``, ``--role-arg``, ``--scorer-arg``, ``--limit``, ``--seed``) are ``run``'s and
    apply to every condition.
    """
    from ..reproduce import reproduce as reproduce_preset

    if list_presets:
        _list(as_json)
        return
    preset = _named_preset(paper, fmt)
    settings = _run_settings(limit=limit, seed=seed, concurrency=concurrency, store=store, scorer_arg=scorer_arg)
    done = reproduce_preset(
        preset,
        model or [],
        conditions=condition or (),
        options=key_values(preset_arg, "--preset-arg"),
        model_args=key_values(model_arg, "--model-arg"),
        roles=role_models(role, role_arg),
        rows=_rows(paper_row),
        settings=settings,
        run=_run_with_progress,
    )
    _print(done, fmt, as_json)
    _report_failures(done)


def _named_preset(paper: str | None, fmt: str) -> Preset:
    """The preset ``paper`` names, once a preset is named and ``--format`` is known."""
    from .._util.errors import ConfigError, UsageError
    from ..reproduce import preset_registry

    if paper is None:
        raise UsageError("name a preset (ebmeval reproduce --list shows them)")
    if fmt not in ("terminal", "markdown", "latex", "csv"):
        raise ConfigError("--format", f"must be terminal, markdown, latex or csv, not {fmt!r}")
    return preset_registry.get(paper)


def _run_settings(
    *, limit: int | None, seed: int | None, concurrency: int | None, store: str, scorer_arg: list[str] | None
) -> dict[str, Any]:
    """The run settings given on the command line; those left out keep ``run``'s defaults."""
    settings = {
        "limit": limit,
        "seed": seed,
        "concurrency": concurrency,
        "store": store,
        "scorer_args": scorer_options(scorer_arg) or None,
    }
    return {k: v for k, v in settings.items() if v is not None}


def _report_failures(done: Reproduction) -> None:
    """Name each run with failed samples and how to see them; exit 1 if any."""
    failed = [r for r in done.runs.values() if r.errors]
    for found in failed:
        console.print(
            f"[red]{found.errors} samples failed[/] in {found.condition} · {found.model} "
            f"(see `ebmeval show {found.run_id} --errors`); re-run to retry them"
        )
    if failed:
        raise typer.Exit(1)


def _rows(items: list[str] | None) -> dict[str, str]:
    """``--paper-row SPEC=ROW`` → ``{SPEC: ROW}`` (the last ``=`` separates: a spec may hold one)."""
    from .._util.errors import ConfigError

    rows = {}
    for item in items or []:
        spec, sep, row = item.rpartition("=")
        if not sep or not spec or not row:
            raise ConfigError("--paper-row", f"expected SPEC=ROW, got {item!r}")
        rows[spec] = row
    return rows


def _run_with_progress(config: RunConfig, label: str) -> RunResult:
    from ..runner import run
    from ._display import ProgressBar

    with ProgressBar(label) as bar:
        return run(config, on_progress=bar.update)


def _print(done: Reproduction, fmt: str, as_json: bool) -> None:
    """The preset's tables: JSON with every cell's trace, or each table in ``fmt``."""
    tables = [build(done) for build in done.preset.tables]
    if as_json:
        payload: dict[str, Any] = {
            "preset": done.preset.name,
            "version": done.preset.version,
            "paper": done.preset.paper,
            "store": done.store,
            "runs": [vars(r) | {"samples": None if r.samples is None else len(r.samples)} for r in done.runs.values()],
            "tables": [t.as_dict() for t in tables],
        }
        typer.echo(json.dumps(payload, indent=2))
        return
    if fmt == "terminal":
        from rich.console import Console

        shown = Console()
        for traced in tables:
            shown.print(traced.table.rich())
        return
    for traced in tables:
        typer.echo(getattr(traced.table, fmt)())


def _list(as_json: bool) -> None:
    from ..reproduce import preset_registry

    presets = [preset_registry.get(name) for name in preset_registry]
    if as_json:
        rows = [
            {
                "name": p.name,
                "version": p.version,
                "paper": p.paper,
                "covers": list(p.covers),
                "limits": list(p.limits),
                "options": {key: vars(option) for key, option in p.options.items()},
                "conditions": [
                    {
                        "name": c.name,
                        "task": c.task,
                        "task_args": dict(c.task_args),
                        "generate": dict(c.generate),
                        "about": c.about,
                        "default": c.default,
                        "inputs": list(c.inputs),
                    }
                    for c in p.conditions
                ],
            }
            for p in presets
        ]
        typer.echo(json.dumps(rows, indent=2))
        return
    from rich.console import Console

    from ..tables import Table

    table = Table(
        "reproducible papers", ["preset", "version", "paper", "conditions", "options", "covers", "cannot cover"]
    )
    for p in presets:
        table.add(
            p.name,
            p.version,
            p.paper,
            _conditions(p),
            _options(p),
            "; ".join(p.covers),
            "; ".join(p.limits),
        )
    Console().print(table.rich())


def _conditions(preset: Preset) -> str:
    """``full, abstract, none; when named: thinking, …``."""
    named = [c.name for c in preset.conditions if not c.default]
    shown = ", ".join(c.name for c in preset.conditions if c.default)
    return shown + (f"; when named: {', '.join(named)}" if named else "")


def _options(preset: Preset) -> str:
    """``retrieval (required): the folder of …; labels: …``."""
    return "; ".join(f"{key}{' (required)' * o.required}: {o.about}" for key, o in preset.options.items())
