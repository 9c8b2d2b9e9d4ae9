"""Markdown rendering of the factuality tables."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._analysis import Agreement, Confusion, FactualityReport, LabelAccuracy


def _num(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def confusion_markdown(confusion: Confusion) -> str:
    """Rows: target label; columns: generated label."""
    header = ["target \\ generated", *confusion.labels]
    pairs = zip(confusion.labels, confusion.counts, strict=True)
    rows = [[label, *(str(c) for c in counts)] for label, counts in pairs]
    return _table(header, rows) + f"\n\nPairs with a side unlabelled: {confusion.missing}."


def agreement_markdown(rows: Sequence[Agreement]) -> str:
    """One row per category."""
    return _table(
        ["category", "n", "% agreement", "Gwet AC1", "Fleiss κ", "Cohen κ"],
        [[a.category, str(a.n), _num(a.percent), _num(a.ac1), _num(a.fleiss), _num(a.cohen)] for a in rows],
    )


def accuracy_markdown(rows: Sequence[tuple[str, LabelAccuracy]]) -> str:
    """Judge-validation rows: (source, result)."""
    return _table(
        ["source", "field", "n", "unparsed", "accuracy", "Cohen κ", "Gwet AC1"],
        [
            [
                source,
                r.field,
                str(r.n),
                str(r.unparsed),
                _num(r.accuracy),
                _num(r.agreement.cohen),
                _num(r.agreement.ac1),
            ]
            for source, r in rows
        ],
    )


def report_markdown(report: FactualityReport) -> str:
    """Every table of ``report``."""
    parts = [f"Summaries analysed: {report.n}.", "", "### Correctness by category", ""]
    rate_rows = []
    for r in report.rates:
        ci = r.rate.ci if r.rate is not None else None
        rate_rows.append(
            [
                r.category,
                str(r.rate.n if r.rate else 0),
                _num(r.rate.value if r.rate else None),
                f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "–",
                str(r.unknown),
            ]
        )
    parts.append(_table(["category", "n", "rate", "95% CI (bootstrap)", "unknown / n.a."], rate_rows))
    parts += ["", "### Direction (target × generated)", "", confusion_markdown(report.direction)]
    parts += ["", "### Modality (target × generated)", "", confusion_markdown(report.modality)]
    parts += ["", "### Copying", ""]
    rouge_rows = [[f"vs target (n={report.n})", *(_num(report.rouge_target.get(t)) for t in _ROUGE)]]
    if report.n_background:
        rouge_rows.append(
            [f"vs background (n={report.n_background})", *(_num(report.rouge_background.get(t)) for t in _ROUGE)]
        )
    parts.append(_table(["mean ROUGE F", *_ROUGE], rouge_rows))
    parts += ["", "Canned openings:", ""]
    parts.append(
        _table(["opening", "count", "share"], [[o.opening, str(o.count), _num(o.share)] for o in report.openings])
        if report.openings
        else "none found."
    )
    if report.rouge_tests:
        metric = report.rouge_tests[0].metric
        parts += ["", f"### {metric} of correct vs incorrect summaries (Welch t-test)", ""]
        parts.append(
            _table(
                ["category", "n correct", "n incorrect", "mean correct", "mean incorrect", "t", "p"],
                [
                    [
                        t.category,
                        str(t.n_correct),
                        str(t.n_incorrect),
                        _num(t.mean_correct),
                        _num(t.mean_incorrect),
                        _num(t.test.statistic if t.test else None, 2),
                        _num(t.test.pvalue if t.test else None),
                    ]
                    for t in report.rouge_tests
                ],
            )
        )
    for title, rows in report.agreement.items():
        parts += ["", f"### Agreement: {title}", "", agreement_markdown(rows)]
    return "\n".join(parts) + "\n"


_ROUGE = ("rouge1", "rouge2", "rougeL")
