"""``ebmeval run``, ``rescore``, ``score`` and ``show-prompt``: running tasks and scoring outputs."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .._util.defaults import DEFAULT_STORE
from ._common import (
    ConcurrencyOption,
    JsonOption,
    LimitOption,
    ModelArgOption,
    NoCacheOption,
    OptionalStoreOption,
    QuietOption,
    RoleArgOption,
    RoleOption,
    ScorerArgOption,
    SeedOption,
    StoreOption,
    TaskArgOption,
    TaskArgument,
    app,
    console,
    key_values,
    resume_command,
    role_models,
    scorer_options,
)

if TYPE_CHECKING:
    from ..runner import RunConfig


@app.command()
def run(
    config: Annotated[Path | None, typer.Argument(help="YAML run config; flags override its fields.")] = None,
    task: Annotated[
        list[str] | None, typer.Option(help="Task name (see `ebmeval list tasks`); repeat for a grid of runs.")
    ] = None,
    model: Annotated[
        list[str] | None,
        typer.Option(help="Model spec: local, local:PATH.gguf, openai-compatible:M@URL …; repeat for a grid."),
    ] = None,
    task_arg: TaskArgOption = None,
    model_arg: ModelArgOption = None,
    role: RoleOption = None,
    role_arg: RoleArgOption = None,
    scorer_arg: ScorerArgOption = None,
    limit: LimitOption = None,
    shard: Annotated[
        str | None, typer.Option(help="Answer only shard I of N of the samples, I/N (same run id for every shard).")
    ] = None,
    no_shuffle: Annotated[
        bool, typer.Option("--no-shuffle", help="With --limit, take the first N in dataset order.")
    ] = False,
    seed: SeedOption = None,
    request_seed: Annotated[
        int | None,
        typer.Option(
            "--request-seed",
            help="Send this sampling seed, literally, with every request of the model under test "
            "(default: a per-sample seed derived from --seed).",
        ),
    ] = None,
    epochs: Annotated[int | None, typer.Option(help="Times each sample is answered.")] = None,
    concurrency: ConcurrencyOption = None,
    temperature: Annotated[float | None, typer.Option(help="Sampling temperature.")] = None,
    max_tokens: Annotated[int | None, typer.Option(help="Most tokens to generate per call.")] = None,
    top_p: Annotated[float | None, typer.Option(help="Nucleus sampling mass (0 < p <= 1).")] = None,
    repetition_penalty: Annotated[
        float | None, typer.Option(help="Penalty on repeated tokens (1 is none); refused by servers without one.")
    ] = None,
    store: OptionalStoreOption = None,
    no_cache: NoCacheOption = False,
    by: Annotated[str | None, typer.Option(help="Also break metrics down by this sample metadata key.")] = None,
    as_json: JsonOption = False,
    quiet: QuietOption = False,
) -> None:
    """Run a task on a model; re-running the same command resumes it.

    Several --task or --model (or lists in the YAML config) run every task × model pair, each its
    own run, one after the other, reported together at the end; re-running resumes them all.
    """
    flags = {
        "task": _one_or_list(task),
        "model": _one_or_list(model),
        "limit": limit,
        "shard": shard,
        "seed": seed,
        "epochs": epochs,
        "concurrency": concurrency,
        "store": store,
        **_option_flags(task_arg, model_arg, role, role_arg, scorer_arg),
        "generate": _request_settings(temperature, max_tokens, request_seed, top_p, repetition_penalty),
        "cache": False if no_cache else None,
        "shuffle": False if no_shuffle else None,
    }
    configs = _run_configs(config, flags)
    resume = resume_command(sys.argv[1:])
    done = _run_all(configs, resume, by=by, as_json=as_json, quiet=quiet)
    _report_failures(done, resume)


def _option_flags(
    task_arg: list[str] | None,
    model_arg: list[str] | None,
    role: list[str] | None,
    role_arg: list[str] | None,
    scorer_arg: list[str] | None,
) -> dict[str, Any]:
    """The task, model, role and scorer options given as ``KEY=VALUE`` flags, as config fields."""
    flags: dict[str, Any] = {}
    if task_arg:
        flags["task_args"] = key_values(task_arg, "--task-arg")
    if model_arg:
        flags["model_args"] = key_values(model_arg, "--model-arg")
    if role:
        flags["roles"] = role_models(role, role_arg)
    if scorer_arg:
        flags["scorer_args"] = scorer_options(scorer_arg)
    return flags


def _request_settings(
    temperature: float | None,
    max_tokens: int | None,
    seed: int | None,
    top_p: float | None,
    repetition_penalty: float | None,
) -> dict[str, Any] | None:
    """The decoding settings given, sent with every request of the model under test (``None``: none given)."""
    decoding = {
        "temperature": temperature,
        "max_tokens": max_tokens,
        "seed": seed,
        "top_p": top_p,
        "repetition_penalty": repetition_penalty,
    }
    return {k: v for k, v in decoding.items() if v is not None} or None


def _run_configs(config: Path | None, flags: dict[str, Any]) -> list[RunConfig]:
    """The runs to make: the YAML ``config`` with the flags given overriding its fields, or the flags alone."""
    from ..runner import grid_from_flags, load_grid

    given = {k: v for k, v in flags.items() if v is not None}
    return load_grid(config, given) if config is not None else grid_from_flags(**given)


def _run_all(
    configs: list[RunConfig], resume: str, *, by: str | None, as_json: bool, quiet: bool
) -> list[tuple[Any, Any]]:
    """Run (or resume) each config and print its results, then, for a grid, every run's in one table."""
    done = [
        _run_one(cfg, resume, by=by, as_json=as_json, grid=(i, len(configs)), quiet=quiet)
        for i, cfg in enumerate(configs, 1)
    ]
    if len(done) > 1:
        _report_grid(done, as_json=as_json)
    return done


def _report_failures(done: list[tuple[Any, Any]], resume: str) -> None:
    """Name each run's failed samples and how to retry them; exit 1 if any failed."""
    for _summary, result in done:
        if result.progress.errors:
            console.print(
                f"[red]{result.progress.errors} samples failed[/] (see `ebmeval show {result.run.run_id} --errors`)"
            )
    if any(result.progress.errors for _summary, result in done):
        console.print(f"re-run to retry them:\n  {resume}")
        raise typer.Exit(1)


def _one_or_list(values: list[str] | None) -> str | list[str] | None:
    """A repeatable flag's values: one value as itself, several as a list (a grid)."""
    return values if values is None or len(values) > 1 else values[0]


def _run_one(
    cfg: Any, resume: str, *, by: str | None, as_json: bool, grid: tuple[int, int], quiet: bool = False
) -> tuple[Any, Any]:
    """Run (or resume) one config and print its results; (summary, result)."""
    from ..runner import run as run_task
    from ..runner import summarize
    from ..store import RunStore
    from ._display import ProgressBar, summary_table

    index, count = grid
    label = cfg.task if count == 1 else f"[{index}/{count}] {cfg.task} · {cfg.model}"
    try:
        with ProgressBar(label, quiet=quiet) as bar:
            result = run_task(cfg, on_progress=bar.update)
    except KeyboardInterrupt:
        console.print(f"[yellow]Interrupted.[/] Finished samples are saved; resume with:\n  {resume}")
        raise typer.Exit(130) from None
    subset = result.sample_ids if cfg.limit is not None or cfg.shard is not None else None
    summary = summarize(RunStore(cfg.store, read_only=True), result.run.run_id, by=by, samples=subset)
    for note in result.notes:
        console.print(f"Note: {note}", style="yellow", markup=False, highlight=False)
    if as_json:
        if count == 1:
            typer.echo(json.dumps(_json_payload(summary, result), indent=2))
        return summary, result
    from rich.console import Console

    Console().print(summary_table(summary, by=by))
    console.print(
        f"run {result.run.run_id} in {cfg.store}: {result.progress.done - result.progress.resumed} new, "
        f"{result.progress.resumed} resumed, {result.progress.errors} failed, "
        f"{result.progress.cache_hits}/{result.progress.model_calls} model calls cached, "
        f"{result.elapsed:.1f} s"
    )
    if result.next_step:  # one line, unwrapped, so the command can be copied
        next_step = f"Next: {result.run.task} computes no metric; {result.next_step}"
        console.print(next_step, markup=False, highlight=False, soft_wrap=True)
    return summary, result


def _json_payload(summary: Any, result: Any) -> dict[str, Any]:
    payload: dict[str, Any] = summary.as_dict()
    payload["invocation"] = {
        "resumed_samples": result.progress.resumed,
        "new_samples": result.progress.done - result.progress.resumed,
        "errors": result.progress.errors,
        "model_calls": result.progress.model_calls,
        "cache_hits": result.progress.cache_hits,
        "elapsed": result.elapsed,
        "notes": result.notes,
        "next_step": result.next_step,
    }
    return payload


def _report_grid(done: list[tuple[Any, Any]], *, as_json: bool) -> None:
    """Every run of a grid in one table (or one JSON document of every run's results)."""
    if as_json:
        typer.echo(json.dumps({"runs": [_json_payload(summary, result) for summary, result in done]}, indent=2))
        return
    from rich.console import Console

    from ._display import grid_table

    Console().print(grid_table([summary for summary, _result in done]).rich())


@app.command()
def rescore(
    run_id: Annotated[str, typer.Argument(help="Run id or a unique prefix of it.")],
    scorer: Annotated[list[str], typer.Option("--scorer", help="Registered scorer name (repeatable).")],
    scorer_arg: Annotated[
        list[str] | None,
        typer.Option("--scorer-arg", help="Scorer option KEY=VALUE, or SCORER:KEY=VALUE with several --scorer."),
    ] = None,
    role: Annotated[list[str] | None, typer.Option("--role", help="Model for a role, ROLE=SPEC (judge=local).")] = None,
    role_arg: RoleArgOption = None,
    concurrency: Annotated[int, typer.Option(help="Samples scored at once.")] = 4,
    no_cache: NoCacheOption = False,
    store: StoreOption = DEFAULT_STORE,
    as_json: JsonOption = False,
    quiet: QuietOption = False,
) -> None:
    """Score a stored run with more scorers (e.g. judges) without generating again.

    A scorer with another judge, prompt or option than before adds a new score set beside the
    old ones; the same scorer again only scores what it has not scored yet.
    """
    from ..models import ResponseCache, get_model
    from ..runner import rescore as rescore_run
    from ..runner import summarize
    from ..store import RunStore
    from ..tasks import create_scorer
    from ._display import ProgressBar, summary_table

    options = _scorer_options(scorer, scorer_arg)
    built = [create_scorer(name, **options[name]) for name in scorer]
    cache = None if no_cache else ResponseCache()
    record = RunStore(store, read_only=True).get_run(run_id)
    roles = role_models(role, role_arg)
    # the judge defaults to the model under evaluation, with its provider options
    own = {"model": record.config.get("model", "local"), "args": record.config.get("model_args", {})}
    roles.setdefault("judge", own)
    models = {name: get_model(r["model"], cache=cache, **r["args"]) for name, r in roles.items()}
    with ProgressBar(f"rescore {record.run_id}", quiet=quiet) as bar:
        progress = rescore_run(store, record.run_id, built, models, concurrency=concurrency, on_progress=bar.update)
    summary = summarize(RunStore(store, read_only=True), record.run_id)
    if as_json:
        typer.echo(json.dumps(summary.as_dict(), indent=2))
    else:
        from rich.console import Console

        Console().print(summary_table(summary))
    if progress.resumed == progress.total and progress.total:
        console.print("nothing to score: these scorers, with these judges and options, scored every sample already")
    if progress.errors:
        console.print(
            f"[red]{progress.errors} samples failed to score[/] (see `ebmeval show {record.run_id} --errors`)"
        )
        raise typer.Exit(1)


def _scorer_options(scorers: list[str], items: list[str] | None) -> dict[str, dict[str, Any]]:
    """Each scorer's options: ``KEY=VALUE`` with one ``--scorer``, ``SCORER:KEY=VALUE`` with several."""
    from .._util.errors import ConfigError

    options: dict[str, dict[str, Any]] = {name: {} for name in scorers}
    for item in items or []:
        name, sep, rest = item.partition(":")
        if sep and name in options:
            options[name].update(key_values([rest], "--scorer-arg"))
        elif len(scorers) == 1:
            options[scorers[0]].update(key_values([item], "--scorer-arg"))
        else:
            raise ConfigError("--scorer-arg", f"with several --scorer, name the scorer: SCORER:KEY=VALUE, got {item!r}")
    return options


@app.command()
def score(
    task: TaskArgument,
    predictions: Annotated[Path, typer.Option(help="JSONL lines with the question `id` and `output` or `answer`.")],
    task_arg: TaskArgOption = None,
    scorer_arg: ScorerArgOption = None,
    role: Annotated[
        list[str] | None, typer.Option("--role", help="Model for a scorer's role, ROLE=SPEC (judge=SPEC).")
    ] = None,
    role_arg: RoleArgOption = None,
    as_json: JsonOption = False,
) -> None:
    """Score predictions made elsewhere with a task's parser and scorers (judges: --role judge=SPEC)."""
    from ..models import ResponseCache, get_model
    from ..scorers import score_predictions
    from ..tasks import create_task, with_scorer_args

    cache = ResponseCache()
    models = {name: get_model(r["model"], cache=cache, **r["args"]) for name, r in role_models(role, role_arg).items()}
    built = with_scorer_args(create_task(task, **key_values(task_arg, "--task-arg")), scorer_options(scorer_arg))
    result = score_predictions(built, predictions, models=models)
    if as_json:
        typer.echo(json.dumps(result, indent=2))
        return
    from rich.console import Console

    from ..tables import Column, Table

    table = Table(
        f"{task} · {predictions}",
        ["scorer", "metric", Column("value", "number"), Column("n", "number"), Column("missing", "number")],
    )
    for metric in result["metrics"]:
        table.add(metric["scorer"], metric["metric"], metric["value"], metric["n"], metric["missing"])
    table.notes.append(
        f"{result['scored']} scored · {result['unparsed']} unparsed · {result['without_prediction']} without prediction"
        f" · {len(result['unknown_ids'])} unknown ids · {len(result['errors'])} scorer errors"
    )
    table.notes += [f"note: {note}" for note in result["notes"]]
    Console().print(table.rich())


@app.command("show-prompt")
def show_prompt(
    task: Annotated[str, typer.Argument(help="Task name.")],
    sample: Annotated[str, typer.Option(help="Sample index or id.")] = "0",
    task_arg: TaskArgOption = None,
) -> None:
    """Print the prompts a task sends for one sample, step by step, then the settings of each kind of call."""
    from ..tasks import call_rows, create_task
    from ..workflows import render_prompts

    built = create_task(task, **key_values(task_arg, "--task-arg"))
    chosen: int | str = int(sample) if sample.lstrip("-").isdigit() else sample
    shown = render_prompts(built, chosen)
    if not shown:
        typer.echo(f"{task} sends the model under evaluation no prompt: its outputs are read from the given files.")
    for step, text in shown.items():
        typer.echo(f"=== {step} ===\n{text}\n")
    typer.echo("=== model calls ===")
    for row in call_rows(built):
        settings = ", ".join(f"{k}={row[k]}" for k in ("temperature", "max_tokens", "thinking_max_tokens"))
        typer.echo(f"{row['call']} (role {row['role']}, {row['purpose']}): {settings}; templates: {_templates(row)}")


@app.command()
def describe(
    task: TaskArgument,
    task_arg: Annotated[
        list[str] | None, typer.Option("--task-arg", help="Task option KEY=VALUE, for the calls it makes.")
    ] = None,
    calls: Annotated[bool, typer.Option("--calls", help="Show only the model calls the task makes.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Print a task's options (type, default, allowed values) and the model calls it makes with their settings.

    The options every task takes (retrieval, ``k``, ``query``) follow the task's own. Each kind of
    call declares its temperature and reply budget (``thinking_max_tokens`` for a model given
    ``--model-arg reasoning=true``); a run config's ``steps:`` overrides them.
    """
    if calls:
        _describe_calls(task, task_arg, as_json)
        return
    from .._util.options import docstring_summary, option_docs, signature_options, type_name
    from ..tasks import layer_options, task_layers, task_registry

    factory = task_registry.get(task)
    own = signature_options(factory)
    shared = [(layer, {k: p for k, p in layer_options(layer).items() if k not in own}) for layer in task_layers]
    sources = [(factory, own), *shared]
    rows = [
        {
            "option": name,
            "type": type_name(param.annotation),
            "default": None if param.default is param.empty else param.default,
            "about": option_docs(source).get(name, ""),
        }
        for source, options in sources
        for name, param in options.items()
    ]
    if as_json:
        typer.echo(json.dumps(rows, indent=2, default=str))
        return
    from rich.console import Console

    from ..tables import Table

    table = Table(f"{task}: {docstring_summary(factory)}", ["option", "type", "default", "about"])
    for row in rows:
        table.add(row["option"], row["type"], repr(row["default"]), row["about"])
    Console().print(table.rich())
    _describe_calls(task, task_arg, as_json=False)


def _describe_calls(task: str, task_arg: list[str] | None, as_json: bool) -> None:
    """The model calls of ``task`` built with ``task_arg``, as JSON or a table."""
    from ..tasks import call_rows, create_task

    rows = call_rows(create_task(task, **key_values(task_arg, "--task-arg")))
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    from rich.console import Console

    from ..tables import Table

    settings = ["temperature", "max_tokens", "thinking_max_tokens"]
    title = "model calls (- : set where the call is made; override in a run config: steps: {CALL: {max_tokens: N}})"
    table = Table(title, ["call", "role", "purpose", "templates", *settings, "about"])
    for row in rows:
        shown = ["-" if row[c] is None else str(row[c]) for c in settings]
        table.add(str(row["call"]), str(row["role"]), str(row["purpose"]), _templates(row), *shown, str(row["about"]))
    Console().print(table.rich())


def _templates(row: dict[str, object]) -> str:
    """The template ids of a :func:`~ebmeval.tasks.call_rows` row, comma-separated, or ``-`` for none."""
    ids = row["templates"]
    return ", ".join(map(str, ids)) if isinstance(ids, list) and ids else "-"
