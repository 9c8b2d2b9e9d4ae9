"""``ebmeval factuality run|validate|analyze``: judge summaries for factuality and analyse the labels."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .._util.defaults import DEFAULT_STORE
from ._common import key_values

factuality_app = typer.Typer(
    help="Factuality analysis: run a factuality task, validate a judge against gold labels, analyse judged summaries.",
    no_args_is_help=True,
)

GroupStore = Annotated[str | None, typer.Option("--store", help="Path of the SQLite run store.")]


@factuality_app.callback()
def factuality(ctx: typer.Context, store: GroupStore = None) -> None:
    """Factuality analysis: run a factuality task, validate a judge against gold labels, analyse judged summaries."""
    ctx.obj = store


def _store(ctx: typer.Context, store: str | None) -> str:
    """The ``--store`` given after the subcommand, else before it, else the default."""
    parent = ctx.parent.obj if ctx.parent is not None else None
    return store or parent or DEFAULT_STORE


@factuality_app.command("run")
def run_task(
    ctx: typer.Context,
    task: Annotated[str, typer.Argument(help="A factuality/* task (see `ebmeval list tasks`).")],
    arg: Annotated[list[str] | None, typer.Option("--arg", help="Task option KEY=VALUE (repeatable).")] = None,
    model: Annotated[str, typer.Option(help="Model spec.")] = "local",
    judge: Annotated[str | None, typer.Option(help="Judge model spec (default: the model).")] = None,
    limit: Annotated[int | None, typer.Option(help="Judge only N samples.")] = None,
    store: GroupStore = None,
) -> None:
    """Run a factuality task and print the run id."""
    from ..runner import RunConfig, run

    config = RunConfig(
        task=task,
        task_args=key_values(arg, "--arg"),
        model=model,
        roles={"judge": judge} if judge else {},
        limit=limit,
        store=_store(ctx, store),
    )
    result = run(config)
    p = result.progress
    typer.echo(f"run {result.run.run_id}: {p.done}/{p.total} done, {p.errors} errors, {result.elapsed:.0f} s")


@factuality_app.command()
def validate(
    ctx: typer.Context,
    run: Annotated[str, typer.Option("--run", help="A labelling run (factuality/m3-claims or evidence-inference).")],
    label: Annotated[str | None, typer.Option(help="Row label (default: the run id).")] = None,
    store: GroupStore = None,
) -> None:
    """Accuracy and agreement of a labelling run's judge against the gold labels."""
    from ..benchmarks.factuality import validation_results
    from ..factuality import accuracy_table

    rows = [(label or run, r) for r in validation_results(_store(ctx, store), run)]
    typer.echo(accuracy_table(rows).markdown(), nl=False)


@factuality_app.command()
def analyze(
    ctx: typer.Context,
    run: Annotated[str | None, typer.Option("--run", help="A judged run.")] = None,
    scorer: Annotated[str, typer.Option(help="The judge scorer of the run.")] = "judge/factuality",
    generated: Annotated[Path | None, typer.Option(help="Generated summaries (MSLR CSV or JSONL).")] = None,
    targets: Annotated[Path | None, typer.Option(help="Targets (CSV ReviewID,Target[,Background] or JSONL).")] = None,
    human: Annotated[Path | None, typer.Option(help="Human labels CSV (ReviewID, <category>__<annotator>).")] = None,
    annotator: Annotated[str | None, typer.Option(help="Whose labels to analyse (file mode).")] = None,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
    out: Annotated[Path | None, typer.Option(help="Also write the Markdown here.")] = None,
    store: GroupStore = None,
) -> None:
    """The full factuality report of a judged run, or of human labels of summaries in files."""
    from .._util.errors import UsageError
    from ..factuality import FactualityLabels, analyze, assessments_from_run, human_assessments, read_human_labels

    labels = read_human_labels(human) if human else None
    raters: dict[str, dict[str, dict[str, FactualityLabels]]] = {}
    if run:
        assessments = assessments_from_run(_store(ctx, store), run, scorer)
        if labels is not None:
            judge = {a.pair.review_id: a.labels for a in assessments}
            for name in labels.annotators:
                raters[f"judge vs {name}"] = {"judge": judge, name: labels.binary.get(name, {})}
    else:
        if not (generated and targets and labels and annotator):
            raise UsageError("without --run, analyze needs --generated, --targets, --human and --annotator")
        assessments = human_assessments(generated, targets, labels, annotator)
    if labels is not None and len(labels.annotators) >= 2:
        raters["annotators"] = {a: labels.binary.get(a, {}) for a in labels.annotators}
    if not assessments:
        raise UsageError("no assessed summaries to analyse")
    text = analyze(assessments, agreement_raters=raters, seed=seed).to_markdown()
    typer.echo(text)
    if out is not None:
        out.write_text(text, encoding="utf-8")
