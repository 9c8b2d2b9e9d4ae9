"""The factuality analysis: ``ebmeval factuality {run,validate,analyze}`` (or ``python -m ebmeval.factuality``).

* ``run TASK``: run a ``factuality/*`` task (``--limit``, ``--model``, ``--judge``, ``--arg k=v``)
  and print the run id;
* ``validate --run ID``: accuracy and agreement of a labelling run against the gold labels;
* ``analyze --run ID`` or ``analyze --generated FILE --targets FILE --human FILE --annotator NAME``:
  the full factuality report (correctness, confusion matrices, copying, ROUGE t-tests, agreement).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from .._util.defaults import DEFAULT_STORE
from .._util.errors import UsageError
from ._analysis import Assessment, analyze, assessments_from_run
from ._importers import HumanLabels, read_human_labels, read_pairs
from ._schema import FactualityLabels, normalize_direction, normalize_modality
from ._tables import accuracy_table


def _run(args: argparse.Namespace) -> str:
    from ..benchmarks import factuality as _tasks  # noqa: F401  (registers the factuality tasks)
    from ..runner import RunConfig, run

    task_args = {}
    for item in args.arg:
        key, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"--arg must be key=value, got {item!r}")
        # Numbers, null and booleans are JSON; anything else is a plain string.
        literal = value[:1] in "0123456789[{-" or value in ("null", "true", "false")
        task_args[key] = json.loads(value) if literal else value
    roles = {"judge": args.judge} if args.judge else {}
    config = RunConfig(
        task=args.task, task_args=task_args, model=args.model, roles=roles, limit=args.limit, store=args.store
    )
    result = run(config)
    p = result.progress
    return f"run {result.run.run_id}: {p.done}/{p.total} done, {p.errors} errors, {result.elapsed:.0f} s"


def _validate(args: argparse.Namespace) -> str:
    from ..benchmarks.factuality import validation_results

    rows = [(args.label or args.run, r) for r in validation_results(args.store, args.run)]
    return accuracy_table(rows).markdown()


def _human_assessments(pairs_path: tuple[str, str], human: HumanLabels, annotator: str) -> list[Assessment]:
    if annotator not in human.binary:
        raise UsageError(f"annotator {annotator!r} is not in {human.path} (annotators: {', '.join(human.annotators)})")
    out = []
    for pair in read_pairs(*pairs_path):
        labels = human.binary[annotator].get(pair.review_id)
        if labels is None:
            continue
        extra = human.labels.get(annotator, {}).get(pair.review_id, {})
        out.append(
            Assessment(
                pair=pair,
                labels=labels,
                target_direction=normalize_direction(extra.get("target_direction")),
                target_modality=normalize_modality(extra.get("target_modality")),
                generated_direction=normalize_direction(extra.get("generated_direction")),
                generated_modality=normalize_modality(extra.get("generated_modality")),
            )
        )
    return out


def _analyze(args: argparse.Namespace) -> str:
    human = read_human_labels(args.human) if args.human else None
    raters: dict[str, dict[str, dict[str, FactualityLabels]]] = {}
    if args.run:
        assessments = assessments_from_run(args.store, args.run, args.scorer)
        if human is not None:
            judge = {a.pair.review_id: a.labels for a in assessments}
            for annotator in human.annotators:
                raters[f"judge vs {annotator}"] = {"judge": judge, annotator: human.binary.get(annotator, {})}
    else:
        if not (args.generated and args.targets and human and args.annotator):
            raise UsageError("without --run, analyze needs --generated, --targets, --human and --annotator")
        assessments = _human_assessments((args.generated, args.targets), human, args.annotator)
    if human is not None and len(human.annotators) >= 2:
        raters["annotators"] = {a: human.binary.get(a, {}) for a in human.annotators}
    if not assessments:
        raise UsageError("no assessed summaries to analyse")
    report = analyze(assessments, agreement_raters=raters, seed=args.seed)
    return report.to_markdown()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status (2 for a usage error)."""
    parser = argparse.ArgumentParser(prog="ebmeval factuality", description=__doc__.splitlines()[0])
    parser.add_argument("--store", default=DEFAULT_STORE, help="run store path")
    sub = parser.add_subparsers(dest="command", required=True)
    p_run = sub.add_parser("run", help="run a factuality task")
    p_run.add_argument("task")
    p_run.add_argument("--arg", action="append", default=[], help="task option key=value")
    p_run.add_argument("--model", default="local")
    p_run.add_argument("--judge", default=None, help="judge model spec (default: the model)")
    p_run.add_argument("--limit", type=int, default=None)
    p_val = sub.add_parser("validate", help="judge labels against gold labels")
    p_val.add_argument("--run", required=True)
    p_val.add_argument("--label", default=None, help="row label (default: the run id)")
    p_an = sub.add_parser("analyze", help="the full factuality report")
    p_an.add_argument("--run", default=None, help="a judged run")
    p_an.add_argument("--scorer", default="judge/factuality")
    p_an.add_argument("--generated", default=None, help="generated summaries (MSLR CSV or JSONL)")
    p_an.add_argument("--targets", default=None, help="targets (CSV ReviewID,Target[,Background] or JSONL)")
    p_an.add_argument("--human", default=None, help="human labels CSV (ReviewID, <category>__<annotator>)")
    p_an.add_argument("--annotator", default=None, help="whose labels to analyse (file mode)")
    p_an.add_argument("--seed", type=int, default=0)
    p_an.add_argument("--out", type=Path, default=None, help="write the Markdown here too")
    args = parser.parse_args(argv)
    try:
        text = {"run": _run, "validate": _validate, "analyze": _analyze}[args.command](args)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(text)
    if getattr(args, "out", None):
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
