"""``ebmeval list``, ``show``, ``export``, ``report`` and ``compare``: reading the run store."""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from .._util.defaults import DEFAULT_STORE, VIEW_URL
from ._common import JsonOption, StoreOption, app, console


class ListKind(str, Enum):
    """What ``ebmeval list`` lists."""

    tasks = "tasks"
    models = "models"
    runs = "runs"
    scorers = "scorers"
    workflows = "workflows"
    templates = "templates"


@app.command("list")
def list_(
    kind: Annotated[ListKind, typer.Argument(help="tasks, models, runs, scorers, workflows or templates.")],
    store: StoreOption = DEFAULT_STORE,
    as_json: JsonOption = False,
) -> None:
    """List the tasks, model providers, scorers, workflows or prompt templates, or the runs in a store."""
    from .._util.options import docstring_summary

    rows: list[dict[str, Any]]
    if kind is ListKind.tasks:
        from ..tasks import task_registry

        rows = [{"task": name, "about": docstring_summary(task_registry.get(name))} for name in task_registry]
    elif kind is ListKind.models:
        from ..models import model_providers

        rows = [{"provider": name, "about": docstring_summary(model_providers.get(name))} for name in model_providers]
    elif kind is ListKind.scorers:
        from ..tasks import scorer_registry

        rows = [{"scorer": name, "about": docstring_summary(scorer_registry.get(name))} for name in scorer_registry]
    elif kind is ListKind.workflows:
        rows = _workflows()
    elif kind is ListKind.templates:
        rows = _templates()
    else:
        from ..store import RunStore

        records = RunStore(store, read_only=True).list_runs()
        options = _distinguishing_options(records)
        rows = [
            {
                "run_id": r.run_id,
                "task": r.task,
                "model": r.model,
                "options": options[r.run_id],
                "status": r.status_text,
                "created": r.created_at,
            }
            for r in records
        ]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    from rich.console import Console

    from ..tables import Table

    table = Table("", list(rows[0]) if rows else ["(none)"])
    for row in rows:
        table.add(*row.values())
    Console().print(table.rich())


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

    runs = RunStore(store, read_only=True)
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


def _workflows() -> list[dict[str, Any]]:
    """The question-answering strategies and the synthesis workflows, with the task option that picks them."""
    from typing import get_args

    from ..synthesis import EVIDENCE_WORKFLOWS, WORKFLOWS
    from ..workflows import Strategy

    rows = [
        {"workflow": name, "family": "question answering", "option": "strategy", "needs evidence": False}
        for name in get_args(Strategy)
    ]
    rows += [
        {"workflow": name, "family": "synthesis", "option": "workflow", "needs evidence": name in EVIDENCE_WORKFLOWS}
        for name in WORKFLOWS
    ]
    return rows


def _templates() -> list[dict[str, Any]]:
    """Every prompt template of the workflows and the judges: id and what it is for."""
    from .. import builtin_tasks, judges  # noqa: F401  (register the tasks' (synthesis included) and the judges' templates)
    from ..prompts import JUDGE_TEMPLATES, list_templates

    return [
        {"template": t.id, "family": "judge" if t.name in JUDGE_TEMPLATES else "workflow", "about": t.description}
        for t in list_templates()
    ]


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
            {
                "rank": r.rank,
                "id": r.document.id,
                "score": r.score,
                "gold": r.gold,
                "title": r.document.title,
                "text": r.document.text,
            }
            for r in generation.retrieved or []
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
    prompts: Annotated[
        bool,
        typer.Option(
            "--prompts",
            help="Add a 'calls' column: every model call of the sample (model and judges), its messages and reply.",
        ),
    ] = False,
    store: StoreOption = DEFAULT_STORE,
) -> None:
    """Export a run: one row per generation with its scores, and one per failed sample with its error.

    Judge rationales are the ``<score set>.explanation`` columns; ``--prompts`` adds the messages sent.
    """
    from ..store import RunStore, export_run

    runs = RunStore(store, read_only=True)
    record = runs.get_run(run_id)
    target = out or Path(f"{record.run_id}.{fmt.value}")
    count = export_run(runs, record.run_id, fmt.value, target, prompts=prompts)
    failed = count - runs.count_generations(record.run_id)[0]
    console.print(
        f"wrote {count} rows to {target}" + (f", {failed} of them failed samples with their error" if failed else ""),
        highlight=False,
    )
    if not count:
        console.print(f"[red]run {record.run_id} has no generations[/]: nothing to export")
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
    view_url: Annotated[
        str, typer.Option(help="Where `ebmeval view` serves the store: metric values link there ('' for no links).")
    ] = VIEW_URL,
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
    data = collect(
        RunStore(store, read_only=True),
        run_ids,
        by=by,
        prices=price_table,
        human=comparisons,
        view_url=view_url or None,
    )
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
    run_ids: Annotated[list[str], typer.Argument(help="Two or more run ids (or unique prefixes).")],
    store: StoreOption = DEFAULT_STORE,
    as_json: JsonOption = False,
) -> None:
    """Paired tests of every pair of runs on the samples both answered (McNemar or paired t, Cohen's d; Holm)."""
    from dataclasses import asdict

    from .._util.errors import UsageError
    from ..report import collect
    from ..store import RunStore

    if len(run_ids) < 2:
        raise UsageError("compare needs two or more runs")
    runs = RunStore(store, read_only=True)
    data = collect(runs, run_ids)
    apart = _pairs_sharing_nothing(runs, [r.run_id for r in data.runs])
    if len(apart) == len(data.runs) * (len(data.runs) - 1) // 2:
        raise UsageError(f"the runs share no sample, so nothing can be compared: {'; '.join(apart)}")
    for pair in apart:
        console.print(f"[yellow]note:[/] {pair} share no sample: not compared", soft_wrap=True)
    if as_json:
        typer.echo(json.dumps([asdict(c) | {"difference": c.difference} for c in data.contrasts], indent=2))
        return
    from rich.console import Console

    Console().print(data.contrast_table().rich())


def _pairs_sharing_nothing(store: Any, run_ids: list[str]) -> list[str]:
    """``A and B`` for each pair of the runs without a sample both answered."""
    samples = {r: {s for s, _epoch in store.done_generations(r)} for r in run_ids}
    return [
        f"{a} ({store.get_run(a).task}) and {b} ({store.get_run(b).task})"
        for i, a in enumerate(run_ids)
        for b in run_ids[i + 1 :]
        if not samples[a] & samples[b]
    ]


def _distinguishing_options(records: list[Any]) -> dict[str, str]:
    """Per run, the options whose values differ between the runs of its task (``k=5 seed=1``)."""
    from collections import defaultdict

    def flat(record: Any) -> dict[str, str]:
        config = record.config
        fields = {f"{k}": v for k, v in (config.get("task_args") or {}).items()}
        fields.update({f"generate.{k}": v for k, v in (config.get("generate") or {}).items() if v is not None})
        fields.update({f"role.{k}": v.get("model") for k, v in (config.get("roles") or {}).items()})
        fields.update({k: config.get(k) for k in ("seed", "epochs", "shuffle")})
        return {k: json.dumps(v, default=str) if not isinstance(v, str) else v for k, v in fields.items()}

    by_task: dict[str, list[Any]] = defaultdict(list)
    for record in records:
        by_task[record.task].append(record)
    shown: dict[str, str] = {}
    for group in by_task.values():
        values = {r.run_id: flat(r) for r in group}
        keys = sorted({k for v in values.values() for k in v})
        differing = [k for k in keys if len({v.get(k) for v in values.values()}) > 1]
        for run_id, fields in values.items():
            shown[run_id] = " ".join(f"{k}={fields.get(k, '—')}" for k in differing)
    return shown
