"""``ebmeval arena``: pairwise judging of runs against each other."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from .._util.defaults import DEFAULT_STORE
from ._common import JsonOption, QuietOption, StoreOption, app, key_values


@app.command()
def arena(
    run_ids: Annotated[
        list[str],
        typer.Argument(help="Two or more runs of one long-form task, or RUN,RUN groups pooling several tasks."),
    ],
    role: Annotated[list[str], typer.Option("--role", help="The judge, judge=SPEC.")],
    model_arg: Annotated[list[str] | None, typer.Option("--model-arg", help="Judge provider option KEY=VALUE.")] = None,
    axis: Annotated[list[str] | None, typer.Option("--axis", help="Axis to judge (repeatable; default all).")] = None,
    k: Annotated[float, typer.Option(help="Elo K factor.")] = 40,
    limit: Annotated[int | None, typer.Option(help="Judge only the first N shared questions.")] = None,
    min_matches: Annotated[
        int | None,
        typer.Option(help="Sampled design: random questions per pair until N matches on every axis."),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap.")] = 0,
    concurrency: Annotated[int, typer.Option(help="Comparisons judged at once.")] = 4,
    max_tokens: Annotated[int, typer.Option(help="Most tokens of a verdict.")] = 96,
    store: StoreOption = DEFAULT_STORE,
    as_json: JsonOption = False,
    quiet: QuietOption = False,
) -> None:
    """Pairwise arena: each pair judged in both orders on each axis; Elo and Bradley–Terry with CIs."""
    from .._util.errors import ConfigError
    from ..arena import AXES, run_arena
    from ..models import ResponseCache, get_model
    from ._display import ProgressBar

    specs = {k_: str(v) for k_, v in key_values(role, "--role").items()}
    if "judge" not in specs:
        raise ConfigError("--role", "name the judge: --role judge=SPEC")
    judge = get_model(specs["judge"], cache=ResponseCache(), **key_values(model_arg, "--model-arg"))
    with ProgressBar("arena", unit="comparisons", quiet=quiet) as bar:
        result = run_arena(
            store,
            run_ids,
            judge=judge,
            axes=tuple(axis) if axis else tuple(AXES),
            k=k,
            seed=seed,
            concurrency=concurrency,
            limit=limit,
            max_tokens=max_tokens,
            min_matches=min_matches,
            on_progress=bar.update,
        )
    typer.echo(json.dumps(result.as_dict(), indent=2) if as_json else result.to_markdown())


@app.command()
def sweep(
    run_id: Annotated[str, typer.Argument(help="A stored run with rationales (medthink/reasoning).")],
    judge: Annotated[
        list[str], typer.Option("--judge", help="A judge model, NAME=SPEC (repeatable): the sweep's rows.")
    ],
    prompt: Annotated[
        list[str] | None, typer.Option("--prompt", help="Per-step prompt variant p1 … p5 (repeatable; default all).")
    ] = None,
    strategy: Annotated[
        list[str] | None,
        typer.Option("--strategy", help="steps-with-reference (default), -single or steps-without-reference."),
    ] = None,
    prompt_judge: Annotated[str | None, typer.Option(help="The judge NAME that tries every prompt.")] = None,
    temperature: Annotated[float | None, typer.Option(help="Judges' temperature (default 0).")] = None,
    max_tokens: Annotated[int | None, typer.Option(help="Judges' reply budget (default: each judge's own).")] = None,
    concurrency: Annotated[int, typer.Option(help="Samples judged at once.")] = 1,
    store: StoreOption = DEFAULT_STORE,
    as_json: JsonOption = False,
) -> None:
    """Judge a run's rationales with several judges and prompt wordings (MedThink Fig. 5a-b), one row each."""
    from dataclasses import asdict

    from .._util.errors import ConfigError
    from ..analysis import STRATEGIES, format_table
    from ..analysis import sweep as run_sweep
    from ..models import ResponseCache, get_model
    from ..scorers.judges import PROMPT_VARIANTS

    specs = {name: str(spec) for name, spec in key_values(judge, "--judge").items()}
    unknown = [s for s in strategy or [] if s not in STRATEGIES]
    if unknown:
        raise ConfigError("--strategy", f"must be one of {', '.join(STRATEGIES)}; not {unknown[0]!r}")
    cache = ResponseCache()
    rows = run_sweep(
        store,
        run_id,
        {name: get_model(spec, cache=cache) for name, spec in specs.items()},
        tuple(prompt) if prompt else PROMPT_VARIANTS,
        strategies=tuple(strategy) if strategy else ("steps-with-reference",),
        prompt_judge=prompt_judge,
        concurrency=concurrency,
        judge_max_tokens=max_tokens,
        judge_temperature=temperature,
    )
    typer.echo(json.dumps([asdict(r) for r in rows], indent=2, default=str) if as_json else format_table(rows))
