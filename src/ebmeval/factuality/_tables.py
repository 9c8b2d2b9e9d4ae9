"""The factuality tables (as :class:`~ebmeval.tables.Table`) and the report that strings them together."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..tables import Column, Table

if TYPE_CHECKING:
    from ._analysis import Agreement, Confusion, FactualityReport, LabelAccuracy, RougeComparison
    from ._main_annotator import MainAgreement


def confusion_table(confusion: Confusion) -> Table:
    """Rows: target label; columns: generated label."""
    table = Table("", ["target \\ generated", *[Column(label, "number") for label in confusion.labels]])
    for label, counts in zip(confusion.labels, confusion.counts, strict=True):
        table.add(label, *counts)
    table.notes.append(f"Pairs with a side unlabelled: {confusion.missing}.")
    if confusion.kind == "direction":
        table.notes.append(f'Left out, a side "no evidence" or "no claim": {confusion.not_applicable}.')
    return table


def agreement_table(rows: Sequence[Agreement]) -> Table:
    """One row per category."""
    table = Table(
        "", ["category", *[Column(n, "number") for n in ("n", "% agreement", "Gwet AC1", "Fleiss κ", "Cohen κ")]]
    )
    for a in rows:
        table.add(a.category, a.n, a.percent, a.ac1, a.fleiss, a.cohen)
    return table


def main_agreement_table(columns: Sequence[MainAgreement]) -> Table:
    """Table 1 as the paper lays it out: rows are the statistics, columns the categories and ``overall``."""
    main = columns[0].main if columns else ""
    table = Table("", [f"vs {main}", *[Column(c.category, "number") for c in columns]])
    table.add("% agreement (mean over annotators)", *(c.percent for c in columns))
    table.add("Gwet AC1 (mean over annotators)", *(c.ac1 for c in columns))
    table.add("Fleiss κ (all annotators)", *(c.fleiss for c in columns))
    for annotator in columns[0].per_annotator if columns else {}:
        for i, name in enumerate(("% agreement", "Gwet AC1")):
            table.add(f"{annotator}: {name}", *(c.per_annotator[annotator][i] for c in columns))
    return table


def accuracy_table(rows: Sequence[tuple[str, LabelAccuracy]]) -> Table:
    """Judge-validation rows: (source, result)."""
    table = Table(
        "", ["source", "field", *[Column(n, "number") for n in ("n", "unparsed", "accuracy", "Cohen κ", "Gwet AC1")]]
    )
    for source, r in rows:
        table.add(source, r.field, r.n, r.unparsed, r.accuracy, r.agreement.cohen, r.agreement.ac1)
    return table


def report_markdown(report: FactualityReport) -> str:
    """Every table of ``report``."""
    rates = Table(
        "",
        [
            "category",
            Column("n", "number"),
            Column("rate", "number"),
            Column("95% CI (bootstrap)", "interval"),
            Column("unknown / n.a.", "number"),
        ],
    )
    for r in report.rates:
        rates.add(
            r.category,
            r.rate.n if r.rate else 0,
            r.rate.value if r.rate else None,
            r.rate.ci if r.rate is not None else None,
            r.unknown,
        )
    parts = [f"Summaries analysed: {report.n}.", "", "### Correctness by category", "", _md(rates)]
    parts += ["", "### Direction (target × generated)", "", _md(confusion_table(report.direction))]
    parts += ["", "### Modality (target × generated)", "", _md(confusion_table(report.modality))]
    parts += ["", "### Copying", ""]
    copying = Table("", ["mean ROUGE F", *[Column(t, "number") for t in _ROUGE]])
    copying.add(f"vs target (n={report.n_copying})", *(report.rouge_target.get(t) for t in _ROUGE))
    if report.n_background:
        copying.add(f"vs background (n={report.n_background})", *(report.rouge_background.get(t) for t in _ROUGE))
    parts.append(_md(copying))
    parts += ["", f"Stock phrases (n={report.n_copying}):", ""]
    openings = Table("", ["opening", Column("count", "number"), Column("share", "number")])
    for o in report.openings:
        openings.add(o.opening, o.count, o.share)
    parts.append(_md(openings) if report.openings else "none found.")
    for metric in (*_ROUGE, "bertscore"):
        tests = [t for t in report.rouge_tests if t.metric == metric]
        if tests:
            method = next((t.test.method for t in tests if t.test), "t-test")
            parts += ["", f"### {metric} of correct vs incorrect summaries ({method})", "", _md(_tests_table(tests))]
    for title, rows in report.agreement.items():
        parts += ["", f"### Agreement: {title}", "", _md(agreement_table(rows))]
    if report.main_agreement:
        main = report.main_agreement[0].main
        parts += ["", f"### Agreement with the main annotator {main} (Table 1 protocol)", ""]
        parts.append(_md(main_agreement_table(report.main_agreement)))
    return "\n".join(parts) + "\n"


def _tests_table(rows: Sequence[RougeComparison]) -> Table:
    tests = Table(
        "",
        [
            "category",
            *[Column(n, "number") for n in ("n correct", "n incorrect", "mean correct", "mean incorrect")],
            Column("t", "number", fmt="{:.2f}"),
            Column("p", "number"),
        ],
    )
    for t in rows:
        tests.add(
            t.category,
            t.n_correct,
            t.n_incorrect,
            t.mean_correct,
            t.mean_incorrect,
            t.test.statistic if t.test else None,
            t.test.pvalue if t.test else None,
        )
    return tests


def _md(table: Table) -> str:
    return table.markdown().rstrip("\n")


_ROUGE = ("rouge1", "rouge2", "rougeL")
