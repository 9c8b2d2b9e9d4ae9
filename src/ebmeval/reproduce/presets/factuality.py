"""Summary factuality (Otmakhova et al., 2022, ACL): Tables 1, 2, 3 and 5 from the user's labels and/or a judge.

The paper's summaries (BART and LED on the MSLR test set) and its annotations are not bundled.
Each named model is the system that wrote a file of summaries (``--model external:BART``), given
with the targets as the preset's options (``--preset-arg generated=FILE --preset-arg targets=FILE``);
an annotator's labels (``labels=FILE``, ``annotator=NAME``, the main annotator) and/or a judge
(``--role judge=SPEC``) grade them. Published values are those of the tables as printed
(percentages and ROUGE × 100 written as fractions).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ... import reproduce
from ...factuality import main_annotator_agreement, read_human_labels
from ...reproduce._tables import paper_columns, with_paper
from ...tables import Column, Table

PAPER = (
    "Otmakhova et al. (2022), The patient is more dead than alive: exploring the current state of the "
    "multi-document summarisation of the biomedical literature, ACL 2022"
)

SUMMARIES = reproduce.Condition(
    "summaries",
    "factuality/summaries",
    about="the system's summaries (a file) against the review conclusions, graded by labels and/or a judge",
    inputs=("generated", "targets", "labels", "annotator", "judge"),
)

OPTIONS = {
    "generated": reproduce.PresetOption(
        "the system's summaries: MSLR CSV (ReviewID,Generated) or JSONL", required=True
    ),
    "targets": reproduce.PresetOption("the test set's targets: CSV ReviewID,Target,Background or JSONL", required=True),
    "labels": reproduce.PresetOption("an annotator's labels of the summaries (Tables 1-3 from them)"),
    "annotator": reproduce.PresetOption("the main annotator of labels (default: the file's first)"),
    "judge": reproduce.PresetOption("false: grade by the labels alone, without the judge (--role judge=SPEC)"),
}
"""The task options of ``factuality/summaries`` that only the user has."""

TABLE_1 = {
    "pico": (0.87, 0.80, 0.66),
    "direction": (0.83, 0.70, 0.62),
    "modality": (0.84, 0.77, 0.67),
    "grammar": (0.86, 0.75, 0.60),
    "lexical": (0.98, 0.97, 0.93),
    "non_redundancy": (0.95, 0.95, 0.88),
    "factually_correct": (0.94, 0.93, 0.86),
    "overall": (0.89, 0.82, 0.73),
}
"""Table 1: % agreement and Gwet's AC1 with the main annotator (means over 5 annotators), Fleiss' κ (all 6)."""

TABLE_2_COLUMNS = {
    "PICO": "pico",
    "Direction": "direction",
    "Modality": "modality",
    "Grammar": "grammar",
    "Lexical": "lexical",
    "Non-redundancy": "non_redundancy",
    "Factually correct": "factually_correct",
    "Fully correct": "fully_correct",
}
TABLE_2 = {
    "BART": (0.45, 0.77, 0.45, 0.75, 0.69, 0.85, 0.09, 0.03),
    "LED": (0.40, 0.75, 0.44, 0.63, 0.73, 0.89, 0.08, 0.04),
}
"""Table 2: correctness by category."""

TABLE_3_COLUMNS = {"Patient": "population", "Intervention": "intervention", "Outcome": "outcome", "PICO": "pico"}
TABLE_3 = {"BART": (0.83, 0.66, 0.79, 0.45), "LED": (0.86, 0.63, 0.68, 0.40)}
"""Table 3: correctness by PICO element. Its last column, printed "Fully correct", equals Table 2's PICO."""

TABLE_5_COLUMNS = {
    "Background R-1": "rouge1_background",
    "Background R-2": "rouge2_background",
    "Background R-L": "rougeL_background",
    "Target R-1": "rouge1_target",
    "Target R-2": "rouge2_target",
    "Target R-L": "rougeL_target",
}
TABLE_5 = {
    "BART": (0.3736, 0.2318, 0.3062, 0.2734, 0.0923, 0.2064),
    "LED": (0.3661, 0.2193, 0.3005, 0.2698, 0.0884, 0.2039),
}
"""Table 5: ROUGE F of the generated summaries against the Background and the Target (whole test set)."""


def _grader(reproduction: reproduce.Reproduction) -> str:
    """``human/factuality`` where a run has the user's labels, else ``judge/factuality``."""
    for model in reproduction.models:
        summary = reproduction.summary(SUMMARIES.name, model)
        if summary is not None and any(s.name == "human/factuality" for s in summary.score_sets):
            return "human/factuality"
    return "judge/factuality"


def _by_category(
    reproduction: reproduce.Reproduction,
    title: str,
    columns: Mapping[str, str],
    published: Mapping[str, tuple[float, ...]],
    source: str,
) -> reproduce.TracedTable:
    grader = _grader(reproduction)
    measures = [reproduce.Measure(header, SUMMARIES.name, grader, metric) for header, metric in columns.items()]
    rows = {row: dict(zip(columns, values, strict=True)) for row, values in published.items()}
    graded = "the annotator's labels" if grader == "human/factuality" else "the judge"
    return reproduce.comparison(reproduction, f"{title}, graded by {graded}", measures, rows, source=source)


def table_2(reproduction: reproduce.Reproduction) -> reproduce.TracedTable:
    """Table 2: share of summaries correct in each category, by system."""
    return _by_category(reproduction, "Correctness by category", TABLE_2_COLUMNS, TABLE_2, "Table 2")


def table_3(reproduction: reproduce.Reproduction) -> reproduce.TracedTable:
    """Table 3: share of summaries with the right patient population, intervention and outcome."""
    return _by_category(reproduction, "Correctness by PICO element", TABLE_3_COLUMNS, TABLE_3, "Table 3")


def table_5(reproduction: reproduce.Reproduction) -> reproduce.TracedTable:
    """Table 5: ROUGE against the Background and the Target, over every summary of the file."""
    measures = [
        reproduce.Measure(header, SUMMARIES.name, "factuality/copying", m) for header, m in TABLE_5_COLUMNS.items()
    ]
    rows = {row: dict(zip(TABLE_5_COLUMNS, values, strict=True)) for row, values in TABLE_5.items()}
    return reproduce.comparison(reproduction, "ROUGE F of the summaries", measures, rows, source="Table 5", decimals=4)


def _labelled_run(reproduction: reproduce.Reproduction) -> tuple[str, str, Path, str | None] | None:
    """(model, run id, labels file, main annotator) of the first model whose run was given labels."""
    with reproduction.read_store() as store:
        for model in reproduction.models:
            found = reproduction.runs.get((SUMMARIES.name, model))
            if found is None:
                continue
            args = store.get_run(found.run_id).config.get("task_args", {})
            if args.get("labels"):
                return model, found.run_id, Path(args["labels"]), args.get("annotator")
    return None


def table_1(reproduction: reproduce.Reproduction) -> reproduce.TracedTable:
    """Table 1, one row per category: agreement with the main annotator (``annotator=``) and Fleiss' κ.

    Read from the labels file of the first model run with ``labels=FILE`` (two or more annotators).
    """
    stats = ("% agreement", "Gwet AC1", "Fleiss κ")
    columns: list[Column | str] = ["category", *(column for stat in stats for column in paper_columns(stat))]
    table = Table("Agreement with the main annotator (Table 1, transposed)", columns)
    cells: list[reproduce.CellTrace] = []
    found = _labelled_run(reproduction)
    labels = read_human_labels(found[2]) if found else None
    if found is None or labels is None or len(labels.annotators) < 2:
        for category, paper in TABLE_1.items():
            table.add(category, *[v for p in paper for v in with_paper(None, p)])
        table.notes.append("ours: needs --preset-arg labels=FILE with two or more annotators (annotator=MAIN)")
        return reproduce.TracedTable(table, cells)
    model, run_id, path, main = found
    main = main or labels.annotators[0]
    ours = {c.category: c for c in main_annotator_agreement(labels.binary, main)}
    for category, paper in TABLE_1.items():
        row: list[float | None] = []
        got = ours[category]
        for stat, value, published in zip(stats, (got.percent, got.ac1, got.fleiss), paper, strict=True):
            beside = with_paper(value, published)
            row += beside
            cells.append(
                reproduce.CellTrace(
                    row=category, column=stat, value=value, published=published, difference=beside[2],
                    model=model, condition=SUMMARIES.name, run_id=run_id, score_set="", scorer=f"labels:{path}",
                    metric=stat, group=category, n=got.n, missing=0,
                )
            )  # fmt: skip
        table.add(category, *row)
    table.notes += [
        f"ours: {path} (run {run_id}), main annotator {main}, others {', '.join(ours['pico'].per_annotator)}",
        "overall = mean of the six base columns (as the published Overall is); Δ = ours − paper",
    ]
    return reproduce.TracedTable(table, cells)


reproduce.register_preset(
    reproduce.Preset(
        name="factuality",
        version="1",
        paper=PAPER,
        covers=(
            "Table 1 (agreement with the main annotator, Fleiss κ) from the user's labels",
            "Tables 2 and 3 (correctness by category and PICO element) from the labels or a judge",
            "Table 5 (ROUGE against Background and Target)",
        ),
        limits=(
            "the paper's BART/LED summaries and its annotations are not public: give each system's summaries "
            "(--model external:NAME --preset-arg generated=FILE --preset-arg targets=FILE), one system per command",
            "labels (--preset-arg labels=FILE annotator=MAIN) must be in a layout factuality analyze reads without "
            "a mapping (<category>__<annotator> columns or an annotate export)",
            "Figure 3 (ROUGE-1 box plots) and the t-tests: ebmeval factuality analyze --run RUN --plot FILE",
        ),
        conditions=(SUMMARIES,),
        tables=(table_1, table_2, table_3, table_5),
        options=OPTIONS,
    )
)
