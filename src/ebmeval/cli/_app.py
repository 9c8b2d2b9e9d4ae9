"""The ``ebmeval`` command: a thin layer over the public API."""

from __future__ import annotations

import json
import shlex
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from .._util.defaults import DEFAULT_STORE
from ._display import console
from ._synthesis import synthesis_app

app = typer.Typer(
    name="ebmeval",
    help="Evaluate large language models on the work of evidence-based medicine.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

StoreOption = Annotated[str, typer.Option("--store", help="Path of the SQLite run store.")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON on stdout.")]


def _key_values(items: list[str] | None, flag: str) -> dict[str, Any]:
    """``["k=v", …]`` → ``{k: yaml(v)}``, so numbers and booleans keep their types."""
    import yaml

    from .._util.errors import ConfigError

    parsed: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(flag, f"expected KEY=VALUE, got {item!r}")
        parsed[key] = yaml.safe_load(value) if value else ""
    return parsed


def resume_command(argv: list[str]) -> str:
    """The command line that repeats this one, as console markup (``items=[a,b]`` stays literal)."""
    from rich.markup import escape

    return escape("ebmeval " + " ".join(shlex.quote(a) for a in argv))


@app.command()
def run(
    config: Annotated[Path | None, typer.Argument(help="YAML run config; flags override its fields.")] = None,
    task: Annotated[str | None, typer.Option(help="Task name (see `ebmeval list tasks`).")] = None,
    model: Annotated[
        str | None, typer.Option(help="Model spec: local, local:PATH.gguf, openai-compatible:M@URL …")
    ] = None,
    task_arg: Annotated[
        list[str] | None, typer.Option("--task-arg", help="Task option KEY=VALUE (repeatable).")
    ] = None,
    model_arg: Annotated[list[str] | None, typer.Option("--model-arg", help="Provider option KEY=VALUE.")] = None,
    role: Annotated[
        list[str] | None, typer.Option("--role", help="Model for a role, ROLE=SPEC (e.g. judge=local).")
    ] = None,
    limit: Annotated[int | None, typer.Option(help="Answer only N samples (a fixed pseudo-random subset).")] = None,
    no_shuffle: Annotated[
        bool, typer.Option("--no-shuffle", help="With --limit, take the first N in dataset order.")
    ] = False,
    seed: Annotated[int | None, typer.Option(help="Seed of every random choice.")] = None,
    epochs: Annotated[int | None, typer.Option(help="Times each sample is answered.")] = None,
    concurrency: Annotated[int | None, typer.Option(help="Samples in flight at once.")] = None,
    temperature: Annotated[float | None, typer.Option(help="Sampling temperature.")] = None,
    max_tokens: Annotated[int | None, typer.Option(help="Most tokens to generate per call.")] = None,
    store: Annotated[str | None, typer.Option("--store", help="Path of the SQLite run store.")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not reuse cached model responses.")] = False,
    by: Annotated[str | None, typer.Option(help="Also break metrics down by this sample metadata key.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Run a task on a model; re-running the same command resumes it."""
    from ..runner import config_from_flags, load_config
    from ..runner import run as run_task

    flags: dict[str, Any] = {
        "task": task,
        "model": model,
        "limit": limit,
        "seed": seed,
        "epochs": epochs,
        "concurrency": concurrency,
        "store": store,
    }
    if task_arg:
        flags["task_args"] = _key_values(task_arg, "--task-arg")
    if model_arg:
        flags["model_args"] = _key_values(model_arg, "--model-arg")
    if role:
        flags["roles"] = {k: str(v) for k, v in _key_values(role, "--role").items()}
    generate = {k: v for k, v in {"temperature": temperature, "max_tokens": max_tokens}.items() if v is not None}
    if generate:
        flags["generate"] = generate
    if no_cache:
        flags["cache"] = False
    if no_shuffle:
        flags["shuffle"] = False
    given = {k: v for k, v in flags.items() if v is not None}
    cfg = load_config(config, given) if config is not None else config_from_flags(**given)

    from ._display import ProgressBar, summary_table

    resume = resume_command(sys.argv[1:])
    try:
        with ProgressBar(cfg.task) as bar:
            result = run_task(cfg, on_progress=bar.update)
    except KeyboardInterrupt:
        console.print(f"[yellow]Interrupted.[/] Finished samples are saved; resume with:\n  {resume}")
        raise typer.Exit(130) from None
    from ..runner import summarize
    from ..store import RunStore

    summary = summarize(RunStore(cfg.store), result.run.run_id, by=by)
    if as_json:
        payload = summary.as_dict()
        payload["invocation"] = {
            "resumed_samples": result.progress.resumed,
            "new_samples": result.progress.done - result.progress.resumed,
            "errors": result.progress.errors,
            "model_calls": result.progress.model_calls,
            "cache_hits": result.progress.cache_hits,
            "elapsed": result.elapsed,
        }
        typer.echo(json.dumps(payload, indent=2))
    else:
        from rich.console import Console

        Console().print(summary_table(summary, by=by))
        console.print(
            f"run {result.run.run_id} in {cfg.store}: {result.progress.done - result.progress.resumed} new, "
            f"{result.progress.resumed} resumed, {result.progress.errors} failed, "
            f"{result.progress.cache_hits}/{result.progress.model_calls} model calls cached, "
            f"{result.elapsed:.1f} s"
        )
    if result.progress.errors:
        console.print(
            f"[red]{result.progress.errors} samples failed[/] (see `ebmeval show {result.run.run_id} --errors`); "
            f"re-run to retry them:\n  {resume}"
        )
        raise typer.Exit(1)


class ListKind(str, Enum):
    """What ``ebmeval list`` lists."""

    tasks = "tasks"
    models = "models"
    runs = "runs"


@app.command("list")
def list_(
    kind: Annotated[ListKind, typer.Argument(help="tasks, models or runs.")],
    store: StoreOption = DEFAULT_STORE,
    as_json: JsonOption = False,
) -> None:
    """List the built-in tasks, the model providers, or the runs in a store."""
    rows: list[dict[str, Any]]
    if kind is ListKind.tasks:
        from .. import benchmarks  # noqa: F401
        from ..tasks import task_registry

        rows = [
            {"task": name, "about": (task_registry.get(name).__doc__ or "").strip().splitlines()[0]}
            for name in task_registry
        ]
    elif kind is ListKind.models:
        from ..models import model_providers
        from ..models import providers as _builtin  # noqa: F401  (registers the built-in providers)

        rows = [
            {"provider": name, "about": (model_providers.get(name).__doc__ or "").strip().splitlines()[0]}
            for name in model_providers
        ]
    else:
        from ..store import RunStore

        rows = [
            {"run_id": r.run_id, "task": r.task, "model": r.model, "status": r.status, "created": r.created_at}
            for r in RunStore(store).list_runs()
        ]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table()
    for column in rows[0] if rows else ["(none)"]:
        table.add_column(column)
    for row in rows:
        table.add_row(*[str(v) for v in row.values()])
    Console().print(table)


@app.command()
def show(
    run_id: Annotated[str, typer.Argument(help="Run id or a unique prefix of it.")],
    store: StoreOption = DEFAULT_STORE,
    by: Annotated[str | None, typer.Option(help="Break metrics down by this sample metadata key.")] = None,
    sample: Annotated[str | None, typer.Option(help="Show one sample: steps, output, answer, scores.")] = None,
    errors: Annotated[bool, typer.Option("--errors", help="Show the failure log.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Show a run's metrics, one sample in full, or its failures."""
    from ..runner import summarize
    from ..store import RunStore

    runs = RunStore(store)
    record = runs.get_run(run_id)
    if sample is not None:
        payload = _sample_detail(runs, record.run_id, sample)
        if as_json:
            typer.echo(json.dumps(payload, indent=2, default=str))
        else:
            from rich.console import Console
            from rich.pretty import Pretty

            Console().print(Pretty(payload, expand_all=False, max_string=2000))
        return
    if errors:
        failures = [
            {"sample_id": s, "epoch": e, "stage": st, "error": err, "at": t}
            for s, e, st, err, t in runs.errors(record.run_id)
        ]
        typer.echo(
            json.dumps(failures, indent=2)
            if as_json
            else "\n".join(f"{f['at']} {f['sample_id']} [{f['stage']}] {f['error']}" for f in failures) or "no failures"
        )
        return
    summary = summarize(runs, record.run_id, by=by)
    extraction = None
    if "triplet-f1" in runs.scorers(record.run_id):
        from ..scorers import micro_f1

        extraction = micro_f1(runs, record.run_id)
    if as_json:
        out = summary.as_dict()
        out["config"] = record.config
        out["provenance"] = record.provenance
        typer.echo(json.dumps(out, indent=2))
        return
    from rich.console import Console

    from ._display import summary_table

    Console().print(summary_table(summary, by=by))
    if extraction is not None:
        typer.echo(extraction.to_markdown())


def _sample_detail(runs: Any, run_id: str, sample_id: str) -> dict[str, Any]:
    from .._util.errors import UsageError

    found = runs.get_generation(run_id, sample_id)
    if found is None:
        raise UsageError(f"run {run_id} has no generation for sample '{sample_id}'")
    item, generation = found
    return {
        "sample": item.model_dump(exclude={"documents"}),
        "documents": [d.id for d in item.documents],
        "steps": [{"step": name, **payload} for name, payload in runs.steps(run_id, sample_id)],
        "output": generation.output,
        "answer": generation.answer.model_dump(),
        "retrieved": [
            {"rank": r.rank, "id": r.document.id, "score": r.score, "gold": r.gold} for r in generation.retrieved or []
        ],
        "scores": {scorer: score.model_dump() for s, _e, scorer, score in runs.scores(run_id) if s == sample_id},
    }


class Format(str, Enum):
    """Export formats."""

    jsonl = "jsonl"
    csv = "csv"
    parquet = "parquet"


@app.command()
def export(
    run_id: Annotated[str, typer.Argument(help="Run id or a unique prefix of it.")],
    fmt: Annotated[Format, typer.Option("--format", help="jsonl, csv or parquet.")] = Format.jsonl,
    out: Annotated[Path | None, typer.Option(help="Output file (default: <run id>.<format>).")] = None,
    store: StoreOption = DEFAULT_STORE,
) -> None:
    """Export a run, one row per generation with its scores."""
    from ..store import RunStore, export_run

    runs = RunStore(store)
    record = runs.get_run(run_id)
    target = out or Path(f"{record.run_id}.{fmt.value}")
    count = export_run(runs, record.run_id, fmt.value, target)
    console.print(f"wrote {count} rows to {target}")


@app.command("serve-model")
def serve_model(
    model: Annotated[str, typer.Option(help="local, local:smollm2 or local:/path/model.gguf.")] = "local",
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8080,
    n_ctx: Annotated[int | None, typer.Option(help="Context window in tokens.")] = None,
    n_parallel: Annotated[int, typer.Option(help="Requests served at once.")] = 1,
    n_threads: Annotated[int | None, typer.Option(help="CPU threads (default: all cores).")] = None,
    api_key_env: Annotated[
        str | None, typer.Option(help="Environment variable holding an API key clients must send.")
    ] = None,
) -> None:
    """Serve a GGUF model as an OpenAI-compatible HTTP server (Ctrl-C stops it)."""
    import os

    from .._util.errors import ConfigError
    from ..models._serve import serve_model as serve

    api_key = None
    if api_key_env is not None:
        api_key = os.environ.get(api_key_env)
        if not api_key:
            raise ConfigError("--api-key-env", f"environment variable {api_key_env} is not set")
    console.print(f"loading {model} …")
    serve(
        model,
        host=host,
        port=port,
        n_ctx=n_ctx,
        n_parallel=n_parallel,
        n_threads=n_threads,
        api_key=api_key,
        ready=lambda url: console.print(f"serving {model} at {url} — use --model openai-compatible:<name>@{url}"),
    )


@app.command()
def rescore(
    run_id: Annotated[str, typer.Argument(help="Run id or a unique prefix of it.")],
    scorer: Annotated[list[str], typer.Option("--scorer", help="Registered scorer name (repeatable).")],
    scorer_arg: Annotated[list[str] | None, typer.Option("--scorer-arg", help="Scorer option KEY=VALUE.")] = None,
    role: Annotated[list[str] | None, typer.Option("--role", help="Model for a role, ROLE=SPEC (judge=local).")] = None,
    concurrency: Annotated[int, typer.Option(help="Samples scored at once.")] = 4,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not reuse cached model responses.")] = False,
    store: StoreOption = DEFAULT_STORE,
    as_json: JsonOption = False,
) -> None:
    """Score a stored run with more scorers (e.g. judges) without generating again."""
    from ..models import ResponseCache, get_model
    from ..runner import rescore as rescore_run
    from ..runner import summarize
    from ..store import RunStore
    from ..tasks import create_scorer
    from ._display import ProgressBar, summary_table

    options = _key_values(scorer_arg, "--scorer-arg")
    built = [create_scorer(name, **options) for name in scorer]
    cache = None if no_cache else ResponseCache()
    specs = {k: str(v) for k, v in _key_values(role, "--role").items()}
    record = RunStore(store).get_run(run_id)
    specs.setdefault("judge", record.config.get("model", "local"))
    models = {name: get_model(spec, cache=cache) for name, spec in specs.items()}
    with ProgressBar(f"rescore {record.run_id}") as bar:
        progress = rescore_run(store, record.run_id, built, models, concurrency=concurrency, on_progress=bar.update)
    summary = summarize(RunStore(store), record.run_id)
    if as_json:
        typer.echo(json.dumps(summary.as_dict(), indent=2))
    else:
        from rich.console import Console

        Console().print(summary_table(summary))
    if progress.errors:
        console.print(
            f"[red]{progress.errors} samples failed to score[/] (see `ebmeval show {record.run_id} --errors`)"
        )
        raise typer.Exit(1)


@app.command()
def report(
    run_ids: Annotated[list[str], typer.Argument(help="Run ids (or unique prefixes) to report on.")],
    out: Annotated[Path, typer.Option(help="Directory for report.html, report.md, tables.tex, CSV and PNG files.")],
    by: Annotated[str | None, typer.Option(help="Break metrics down by this sample metadata key.")] = None,
    prices: Annotated[
        Path | None, typer.Option(help="YAML of model name → [USD per 1M prompt tokens, per 1M completion tokens].")
    ] = None,
    title: Annotated[str, typer.Option(help="Report title.")] = "ebmeval report",
    human: Annotated[
        list[str] | None,
        typer.Option(help="Judge vs human: STUDY:SCORER:METRIC[:FIELD] of an imported annotation study."),
    ] = None,
    store: StoreOption = DEFAULT_STORE,
) -> None:
    """Write a self-contained report (HTML with plots, Markdown, LaTeX, CSV) of stored runs."""
    from .._util.errors import ConfigError
    from ..report import HumanComparison, collect, write_report
    from ..store import RunStore

    comparisons = []
    for spec in human or []:
        parts = spec.split(":")
        if len(parts) not in (3, 4) or not all(parts):
            raise ConfigError("--human", f"expected STUDY:SCORER:METRIC[:FIELD], got {spec!r}")
        comparisons.append(HumanComparison(*parts))
    price_table = _read_prices(prices) if prices is not None else {}
    data = collect(RunStore(store), run_ids, by=by, prices=price_table, human=comparisons)
    files = write_report(data, out, title=title)
    console.print(
        f"wrote {files.html}, {files.markdown}, {files.latex}, {len(files.csv)} CSV, {len(files.figures)} figures"
    )


def _read_prices(path: Path) -> dict[str, tuple[float, float]]:
    import yaml

    from .._util.errors import ConfigError

    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        return {str(model): (float(pair[0]), float(pair[1])) for model, pair in raw.items()}
    except (OSError, yaml.YAMLError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise ConfigError(
            "prices", f"expected 'model: [input_usd_per_1M, output_usd_per_1M]' ({exc})", source=str(path)
        ) from exc


@app.command()
def compare(
    run_a: Annotated[str, typer.Argument(help="First run id.")],
    run_b: Annotated[str, typer.Argument(help="Second run id.")],
    store: StoreOption = DEFAULT_STORE,
    as_json: JsonOption = False,
) -> None:
    """Paired tests of two runs on the samples both answered (McNemar or paired t, Cohen's d)."""
    from dataclasses import asdict

    from ..report import collect
    from ..store import RunStore

    data = collect(RunStore(store), [run_a, run_b])
    if as_json:
        typer.echo(json.dumps([asdict(c) | {"difference": c.difference} for c in data.contrasts], indent=2))
        return
    from rich.console import Console
    from rich.table import Table as RichTable

    table = data.contrast_table()
    shown = RichTable(title=table.title, caption=" ".join(table.notes), caption_justify="left")
    for column in table.columns:
        shown.add_column(column)
    for row in table.rows:
        shown.add_row(*row)
    Console().print(shown)


@app.command()
def score(
    task: Annotated[str, typer.Argument(help="Task name (see `ebmeval list tasks`).")],
    predictions: Annotated[Path, typer.Option(help="JSONL lines with the question `id` and `output` or `answer`.")],
    task_arg: Annotated[
        list[str] | None, typer.Option("--task-arg", help="Task option KEY=VALUE (repeatable).")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Score predictions made elsewhere with a task's parser and scorers."""
    from ..scorers import score_predictions
    from ..tasks import create_task

    result = score_predictions(create_task(task, **_key_values(task_arg, "--task-arg")), predictions)
    if as_json:
        typer.echo(json.dumps(result, indent=2))
        return
    from rich.console import Console
    from rich.table import Table as RichTable

    table = RichTable(title=f"{task} · {predictions}", title_justify="left")
    for column in ("metric", "value", "n", "missing"):
        table.add_column(column, justify="left" if column == "metric" else "right")
    for name, metric in result["metrics"].items():
        value = metric["value"]
        table.add_row(name, "—" if value is None else f"{value:.3f}", str(metric["n"]), str(metric["missing"]))
    table.caption = (
        f"{result['scored']} scored · {result['unparsed']} unparsed · {result['without_prediction']} without prediction"
        f" · {len(result['unknown_ids'])} unknown ids"
    )
    Console().print(table)


@app.command("show-prompt")
def show_prompt(
    task: Annotated[str, typer.Argument(help="Task name.")],
    sample: Annotated[str, typer.Option(help="Sample index or id.")] = "0",
    task_arg: Annotated[
        list[str] | None, typer.Option("--task-arg", help="Task option KEY=VALUE (repeatable).")
    ] = None,
) -> None:
    """Print the prompts a task sends for one sample, step by step."""
    from ..tasks import create_task
    from ..workflows import render_prompts

    built = create_task(task, **_key_values(task_arg, "--task-arg"))
    chosen: int | str = int(sample) if sample.lstrip("-").isdigit() else sample
    for step, text in render_prompts(built, chosen).items():
        typer.echo(f"=== {step} ===\n{text}\n")


app.add_typer(synthesis_app, name="synthesis")

annotate_app = typer.Typer(help="Blinded expert annotation studies (web app).", no_args_is_help=True)
app.add_typer(annotate_app, name="annotate")
DbOption = Annotated[str, typer.Option("--db", help="Study database: a SQLite path or a PostgreSQL URL.")]


@annotate_app.command("create")
def annotate_create(
    db: DbOption,
    slug: Annotated[str, typer.Option(help="Short name of the study.")],
    form: Annotated[str, typer.Option(help="rubric, factuality, pairwise or checklist.")],
    annotator: Annotated[list[str], typer.Option("--annotator", help="Annotator name (repeatable).")],
    k: Annotated[int, typer.Option(help="Annotators per item.")] = 2,
    run: Annotated[list[str] | None, typer.Option("--run", help="Run id whose outputs are candidates.")] = None,
    store: Annotated[str | None, typer.Option("--store", help="Run store holding --run.")] = None,
    items: Annotated[list[Path] | None, typer.Option("--items", help="JSONL items file (repeatable).")] = None,
    calibration: Annotated[Path | None, typer.Option(help="JSONL gold examples for calibration.")] = None,
    pass_threshold: Annotated[float, typer.Option(help="Calibration score needed to start.")] = 0.8,
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
) -> None:
    """Serve the annotation app."""
    from ..annotate import serve

    serve(db, host=host, port=port, workers=workers)


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


corpus_app = typer.Typer(help="Document corpora for retrieval.", no_args_is_help=True)
app.add_typer(corpus_app, name="corpus")
index_app = typer.Typer(help="Retrieval indexes over a corpus.", no_args_is_help=True)
app.add_typer(index_app, name="index")


@corpus_app.command("ingest")
def corpus_ingest(
    sources: Annotated[
        list[Path] | None, typer.Argument(help="JSONL, CSV, PubMed XML (.gz too) or text folders.")
    ] = None,
    out: Annotated[Path, typer.Option(help="Corpus folder to write.")] = Path("corpus"),
    builtin: Annotated[
        str | None, typer.Option(help="A built-in corpus instead (pubmedqa-contexts, bioasq-snippets, …).")
    ] = None,
    data_root: Annotated[Path | None, typer.Option(help="Folder holding the built-in corpora's source files.")] = None,
    id_field: Annotated[str, typer.Option(help="JSONL/CSV field with the document id.")] = "id",
    text_field: Annotated[list[str] | None, typer.Option("--text-field", help="Field(s) with the text.")] = None,
    title_field: Annotated[str | None, typer.Option(help="Field with the title.")] = "title",
    chunk_by: Annotated[str | None, typer.Option(help="paragraph, section or tokens.")] = None,
    chunk_size: Annotated[int, typer.Option(help="Tokens per chunk (chunk-by tokens).")] = 200,
    chunk_overlap: Annotated[int, typer.Option(help="Tokens shared by consecutive chunks.")] = 50,
    keep_duplicate_texts: Annotated[bool, typer.Option(help="Keep documents whose text repeats another's.")] = False,
) -> None:
    """Read documents (streamed), drop duplicates, chunk, and write a corpus folder."""
    from .._util.errors import ConfigError
    from ..rag import Chunking, FieldMap, Source, builtin_corpus, ingest
    from ..rag.corpus import write_store

    chunking = None
    if chunk_by is not None:
        if chunk_by not in ("paragraph", "section", "tokens"):
            raise ConfigError("--chunk-by", f"must be paragraph, section or tokens, not {chunk_by!r}")
        chunking = Chunking(by=chunk_by, size=chunk_size, overlap=chunk_overlap)
    if builtin is not None:
        if data_root is None:
            raise ConfigError("--data-root", "a built-in corpus is read from its source files: give --data-root")
        store = write_store(builtin_corpus(builtin, data_root), out, {"builtin": builtin})
        console.print(f"wrote {len(store):,} documents of '{builtin}' to {out}")
        return
    if not sources:
        raise ConfigError("sources", "give files or folders to ingest, or --builtin NAME")
    fields = FieldMap(id=id_field, text=tuple(text_field) if text_field else "text", title=title_field)
    stats = ingest(
        [Source(path=p, fields=fields) for p in sources],
        out,
        chunking=chunking,
        duplicate_texts="keep" if keep_duplicate_texts else "drop",
    )
    console.print(
        f"{stats.documents_read:,} read, {stats.documents_kept:,} kept, {stats.chunks:,} chunks, "
        f"{stats.duplicate_ids:,} duplicate ids, {stats.duplicate_texts:,} duplicate texts, "
        f"{len(stats.errors)} errors → {out} ({stats.seconds:.1f} s)"
    )
    for issue in stats.errors[:20]:
        console.print(f"[yellow]skipped[/] {issue}")


@index_app.command("build")
def index_build(
    corpus: Annotated[Path, typer.Argument(help="Corpus folder (from `ebmeval corpus ingest`).")],
    out: Annotated[Path, typer.Option(help="Index folder to write.")],
    retriever: Annotated[str, typer.Option(help="bm25, dense/minilm or hybrid.")] = "bm25",
    option: Annotated[list[str] | None, typer.Option("--option", help="Retriever option KEY=VALUE.")] = None,
    overwrite: Annotated[bool, typer.Option(help="Replace an existing index.")] = False,
) -> None:
    """Build a persistent index (plain arrays plus a manifest) over a corpus."""
    from ..rag import build_index

    manifest = build_index(corpus, out, retriever, overwrite=overwrite, **_key_values(option, "--option"))
    console.print(f"built {manifest.retriever} index of {manifest.corpus.n_documents:,} documents at {out}")


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="The query.")],
    index: Annotated[Path, typer.Option(help="Index folder.")],
    k: Annotated[int, typer.Option(help="Documents to return.")] = 10,
    as_json: JsonOption = False,
) -> None:
    """Search an index."""
    from ..rag import search as run_search

    hits = run_search(index, query, k=k)
    if as_json:
        typer.echo(json.dumps([h.model_dump() for h in hits], indent=2))
        return
    for hit in hits:
        title = f"{hit.document.title} — " if hit.document.title else ""
        snippet = " ".join(hit.document.text.split())[:160]
        typer.echo(f"{hit.rank:>3}. [{hit.score:.3f}] {hit.document.id}  {title}{snippet}")


@app.command("retrieval-eval")
def retrieval_eval(
    benchmark: Annotated[list[str], typer.Option("--benchmark", help="pubmedqa, bioasq or m3 (repeatable).")],
    data_root: Annotated[Path, typer.Option(help="Folder with the benchmarks' source data.")],
    retriever: Annotated[list[str] | None, typer.Option("--retriever", help="bm25, dense/minilm, hybrid.")] = None,
    n_noise: Annotated[int, typer.Option(help="Distractor documents added to each corpus.")] = 2000,
    n_queries: Annotated[int | None, typer.Option(help="Use only the first N queries.")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the distractor sample.")] = 0,
) -> None:
    """Recall@k, precision@k, MRR and nDCG@k of retrievers on the built-in retrieval benchmarks."""
    from ..rag import evaluate_retrieval, get_retriever, load_benchmark, retrieval_table

    reports = []
    for name in benchmark:
        bench = load_benchmark(name, data_root, n_noise=n_noise, seed=seed, n_queries=n_queries)
        for kind in retriever or ["bm25"]:
            built = get_retriever(kind, list(bench.documents))
            reports.append(evaluate_retrieval(built, bench, name=kind))
    typer.echo(retrieval_table(reports))


@app.command(
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []},
    add_help_option=False,
)
def factuality(ctx: typer.Context) -> None:
    """Factuality analysis: validate a judge against gold labels, or analyse judged summaries (see --help)."""
    from ..factuality.__main__ import main as factuality_main

    code = factuality_main(ctx.args)
    if code:
        raise typer.Exit(code)


@app.command()
def arena(
    run_ids: Annotated[list[str], typer.Argument(help="Two or more runs of the same long-form task.")],
    role: Annotated[list[str], typer.Option("--role", help="The judge, judge=SPEC.")],
    model_arg: Annotated[list[str] | None, typer.Option("--model-arg", help="Judge provider option KEY=VALUE.")] = None,
    axis: Annotated[list[str] | None, typer.Option("--axis", help="Axis to judge (repeatable; default all).")] = None,
    k: Annotated[float, typer.Option(help="Elo K factor.")] = 40,
    limit: Annotated[int | None, typer.Option(help="Judge only the first N shared questions.")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap.")] = 0,
    concurrency: Annotated[int, typer.Option(help="Comparisons judged at once.")] = 4,
    max_tokens: Annotated[int, typer.Option(help="Most tokens of a verdict.")] = 96,
    store: StoreOption = DEFAULT_STORE,
    as_json: JsonOption = False,
) -> None:
    """Pairwise arena: each pair judged in both orders on each axis; Elo and Bradley–Terry with CIs."""
    from .._util.errors import ConfigError
    from ..arena import AXES, run_arena
    from ..models import ResponseCache, get_model

    specs = {k_: str(v) for k_, v in _key_values(role, "--role").items()}
    if "judge" not in specs:
        raise ConfigError("--role", "name the judge: --role judge=SPEC")
    judge = get_model(specs["judge"], cache=ResponseCache(), **_key_values(model_arg, "--model-arg"))
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
    )
    typer.echo(json.dumps(result.as_dict(), indent=2) if as_json else result.to_markdown())
