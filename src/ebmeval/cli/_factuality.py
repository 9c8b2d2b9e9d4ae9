"""``ebmeval factuality run|validate|analyze``: judge summaries for factuality and analyse the labels."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .._util.defaults import DEFAULT_STORE
from ._common import (
    ConcurrencyOption,
    ModelArgOption,
    OptionalStoreOption,
    QuietOption,
    RoleArgOption,
    TaskArgOption,
    key_values,
    role_models,
)

if TYPE_CHECKING:
    from ..factuality import Assessment, FactualityLabels, HumanLabels, LabelMapping, SummaryPair

factuality_app = typer.Typer(
    help="Factuality analysis: run a factuality task, validate a judge against gold labels, analyse judged summaries.",
    no_args_is_help=True,
)


@factuality_app.callback()
def factuality(ctx: typer.Context, store: OptionalStoreOption = None) -> None:
    """Factuality analysis: run a factuality task, validate a judge against gold labels, analyse judged summaries."""
    ctx.obj = store


def _store(ctx: typer.Context, store: str | None) -> str:
    """The ``--store`` given after the subcommand, else before it, else the default."""
    parent = ctx.parent.obj if ctx.parent is not None else None
    return store or parent or DEFAULT_STORE


def _run_id(store: str, run: str) -> str:
    """The full id of ``run`` (an id or a unique prefix); a missing store or run is a usage error."""
    from .._util.errors import UsageError
    from ..store import RunStore

    if not Path(store).exists():
        raise UsageError(f"no run store at {store}")
    opened = RunStore(store, read_only=True)
    try:
        return opened.get_run(run).run_id
    finally:
        opened.close()


def _given_task(task: str, predictions: Path, task_args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """``factuality/summaries`` over ``predictions``, the targets from ``task`` (or its ``targets`` option)."""
    args = {**task_args, "generated": str(predictions)}
    if task != "factuality/summaries":
        args["source"] = task
    return "factuality/summaries", args


@factuality_app.command("run")
def run_task(
    ctx: typer.Context,
    task: Annotated[str, typer.Argument(help="A factuality/* task (see `ebmeval list tasks`).")],
    task_arg: TaskArgOption = None,
    predictions: Annotated[
        Path | None,
        typer.Option(
            help="Summaries generated elsewhere (MSLR CSV, or JSONL review_id/generated or id/output), judged "
            "against TASK's targets (with factuality/summaries: --task-arg targets=FILE); needs --role judge=SPEC."
        ),
    ] = None,
    model: Annotated[
        str | None, typer.Option(help="Model spec (default: local; with --predictions external:FILE-NAME).")
    ] = None,
    model_arg: ModelArgOption = None,
    role: Annotated[
        list[str] | None, typer.Option("--role", help="Model for a role, ROLE=SPEC (judge=SPEC; default: the model).")
    ] = None,
    role_arg: RoleArgOption = None,
    limit: Annotated[int | None, typer.Option(help="Judge only N samples.")] = None,
    concurrency: ConcurrencyOption = None,
    store: OptionalStoreOption = None,
    quiet: QuietOption = False,
) -> None:
    """Run a factuality task (or judge summaries generated elsewhere) and print the run id; re-running resumes."""
    from .._util.errors import UsageError
    from ..runner import config_from_flags, run
    from ._display import ProgressBar

    roles = role_models(role, role_arg)
    args = key_values(task_arg, "--task-arg")
    if predictions is not None:
        if "judge" not in roles:
            raise UsageError("--predictions needs --role judge=SPEC: the summaries' writer is not a model here")
        task, args = _given_task(task, predictions, args)
        model = model or f"external:{predictions.stem}"
    flags: dict[str, Any] = {"task": task, "task_args": args, "model": model or "local", "roles": roles}
    flags |= {"model_args": key_values(model_arg, "--model-arg"), "store": _store(ctx, store)}
    flags |= {k: v for k, v in {"limit": limit, "concurrency": concurrency}.items() if v is not None}
    with ProgressBar(task, quiet=quiet) as bar:
        result = run(config_from_flags(**flags), on_progress=bar.update)
    p = result.progress
    typer.echo(f"run {result.run.run_id}: {p.done}/{p.total} done, {p.errors} errors, {result.elapsed:.0f} s")
    if p.errors:
        raise typer.Exit(1)


@factuality_app.command()
def validate(
    ctx: typer.Context,
    run: Annotated[
        str, typer.Option("--run", help="A labelling run (factuality/m3-claims or evidence-inference), id or prefix.")
    ],
    label: Annotated[str | None, typer.Option(help="Row label (default: the run id).")] = None,
    store: OptionalStoreOption = None,
) -> None:
    """Accuracy and agreement of a labelling run's judge against the gold labels."""
    from .._util.errors import UsageError
    from ..builtin_tasks.factuality import validation_results
    from ..factuality import accuracy_table

    path = _store(ctx, store)
    run_id = _run_id(path, run)
    results = validation_results(path, run_id)
    if not results:
        raise UsageError(f"run {run_id} has no gold direction or modality labels: not a labelling run")
    typer.echo(accuracy_table([(label or run_id, r) for r in results]).markdown(), nl=False)


def _mapping(columns: list[str] | None, values: list[str] | None, system: str | None) -> LabelMapping:
    """``--label-column CATEGORY=COLUMN``, ``--label-value TEXT=VALUE`` and ``--system`` as a mapping."""
    from ..factuality import LabelMapping

    return LabelMapping(
        columns={k: str(v) for k, v in key_values(columns, "--label-column").items()},
        values={k: str(v) for k, v in key_values(values, "--label-value").items()},
        system=system,
    )


def _file_assessments(
    generated: Path | None, targets: Path | None, labels: HumanLabels | None, annotator: str | None
) -> tuple[list[Assessment], list[SummaryPair]]:
    """(assessments of ``annotator``, every pair) of summaries in files."""
    from .._util.errors import UsageError
    from ..factuality import human_assessments, read_pairs

    if not (generated and targets and labels and annotator):
        raise UsageError(
            "without --run, analyze needs --generated, --targets, --human and --annotator (or --main-annotator)"
        )
    return human_assessments(generated, targets, labels, annotator), read_pairs(generated, targets)


@factuality_app.command()
def analyze(
    ctx: typer.Context,
    run: Annotated[str | None, typer.Option("--run", help="A judged run (id or unique prefix).")] = None,
    scorer: Annotated[str, typer.Option(help="The judge scorer of the run.")] = "judge/factuality",
    generated: Annotated[Path | None, typer.Option(help="Generated summaries (MSLR CSV or JSONL).")] = None,
    targets: Annotated[Path | None, typer.Option(help="Targets (CSV ReviewID,Target[,Background] or JSONL).")] = None,
    human: Annotated[
        Path | None,
        typer.Option(help="Human labels: CSV/TSV (ReviewID, <category>__<annotator>), or an annotate export."),
    ] = None,
    label_column: Annotated[
        list[str] | None,
        typer.Option("--label-column", help="Labels file column: NAME=COLUMN (review, annotator or a category)."),
    ] = None,
    label_value: Annotated[
        list[str] | None, typer.Option("--label-value", help="Labels file cell meaning: TEXT=VALUE ('2: Yes=yes').")
    ] = None,
    system: Annotated[str | None, typer.Option(help="The system to read from a study export with several.")] = None,
    annotator: Annotated[str | None, typer.Option(help="Whose labels to analyse (file mode).")] = None,
    main_annotator: Annotated[
        str | None, typer.Option(help="Also agreement as Table 1: each annotator against this one.")
    ] = None,
    welch: Annotated[bool, typer.Option("--welch", help="Welch's instead of Student's t-test for ROUGE.")] = False,
    bertscore: Annotated[
        bool, typer.Option("--bertscore", help="Also the t-tests on BERTScore F1 (bundled encoder).")
    ] = False,
    phrase: Annotated[
        list[str] | None, typer.Option("--phrase", help="Stock phrase to count (repeatable; default: the paper's).")
    ] = None,
    plot: Annotated[Path | None, typer.Option(help="Write the ROUGE-1 box plots (PNG) here.")] = None,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
    out: Annotated[Path | None, typer.Option(help="Also write the Markdown here.")] = None,
    store: OptionalStoreOption = None,
) -> None:
    """The full factuality report of a judged run, or of human labels of summaries in files."""
    from .._util.errors import UsageError
    from ..factuality import analyze as analyze_assessments

    labels = _human_labels(human, label_column, label_value, system)
    if run:
        assessments, pairs = _run_assessments(_store(ctx, store), run, scorer)
    else:
        assessments, pairs = _file_assessments(generated, targets, labels, annotator or main_annotator)
    raters = _agreement_raters(assessments if run else None, labels)
    if not assessments:
        raise UsageError("no assessed summaries to analyse")
    report = analyze_assessments(
        assessments,
        pairs=pairs,
        welch=welch,
        openings=phrase,
        agreement_raters=raters,
        main_annotator=main_annotator,
        bertscore=bertscore,
        seed=seed,
    )
    _write_report(report.to_markdown(), assessments, out=out, plot=plot)


def _human_labels(
    human: Path | None, columns: list[str] | None, values: list[str] | None, system: str | None
) -> HumanLabels | None:
    """The labels of ``--human`` read as the label options say, or None without ``--human``."""
    from ..factuality import read_human_labels

    return read_human_labels(human, _mapping(columns, values, system)) if human else None


def _run_assessments(store: str, run: str, scorer: str) -> tuple[list[Assessment], list[SummaryPair]]:
    """(the assessments of ``scorer`` in ``run``, the run's summary pairs)."""
    from ..factuality import assessments_from_run, pairs_from_run

    run_id = _run_id(store, run)
    return assessments_from_run(store, run_id, scorer), pairs_from_run(store, run_id)


def _agreement_raters(
    judged: list[Assessment] | None, labels: HumanLabels | None
) -> dict[str, dict[str, dict[str, FactualityLabels]]]:
    """The agreement tables by title: a run's judge against each annotator, the annotators among themselves."""
    raters: dict[str, dict[str, dict[str, FactualityLabels]]] = {}
    if labels is None:
        return raters
    if judged is not None:
        judge = {a.pair.review_id: a.labels for a in judged}
        for name in labels.annotators:
            raters[f"judge vs {name}"] = {"judge": judge, name: labels.binary.get(name, {})}
    if len(labels.annotators) >= 2:
        raters["annotators"] = {a: labels.binary.get(a, {}) for a in labels.annotators}
    return raters


def _write_report(text: str, assessments: list[Assessment], *, out: Path | None, plot: Path | None) -> None:
    """Print the report; also write it to ``out`` and the ROUGE-1 box plots to ``plot`` when given."""
    from ..factuality import rouge, rouge_plot

    typer.echo(text)
    if out is not None:
        out.write_text(text, encoding="utf-8")
    if plot is not None:
        scores = rouge([a.pair.generated for a in assessments], [a.pair.target for a in assessments])
        plot.write_bytes(rouge_plot(assessments, scores))
