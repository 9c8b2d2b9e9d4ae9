"""CareMedEval (Bonzi et al., 2025, arXiv:2511.03441): Tables 4 and 5 and Figures 3 and 4 from one command.

Every condition asks the paper's physician-role prompt in French (``prompt_set=paper``,
``language=fr``; Section 4.2), zero-shot. Published values are Table 4's and Table 5's as
printed; Figures 3 and 4 are plots, of which the text gives two values (Section 5.1.2).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ... import reproduce
from ...reproduce._tables import setting_row, unreproduced

PAPER = (
    "Bonzi, Guiggi, Béchet, Ramisch and Favre (2025), CareMedEval dataset: Evaluating Critical Appraisal "
    "and Reasoning in the Biomedical Field, arXiv:2511.03441"
)

METRICS = {"EMR": "exact_match", "F1": "f1", "Hamming": "hamming", "LCA": "lca"}
"""The papers' column headers → the ``multi_answer`` metrics."""

BASELINES = {
    "baseline/random": ("Random (1-3 options)", (0.03, 0.39, 0.29, 0.16)),
    "baseline/first-option": ("Only first-option", (0.00, 0.20, 0.11, 0.00)),
    "baseline/most-frequent-2": ("Most 2 frequent answers", (0.03, 0.45, 0.33, 0.18)),
    "baseline/most-frequent-3": ("Most 3 frequent answers", (0.03, 0.55, 0.42, 0.20)),
}
"""Table 4's baseline rows, by the baseline model that reproduces each: the row and its values, as printed."""

TABLE_4 = {
    **dict(BASELINES.values()),
    "GPT4.1": (0.49, 0.84, 0.78, 0.68),
    "GPT4o-mini": (0.25, 0.75, 0.65, 0.50),
    "Qwen2.5-3B-Instruct": (0.10, 0.59, 0.46, 0.31),
    "Qwen2.5-3B-GRPO-medical-reasoning": (0.11, 0.57, 0.45, 0.30),
    "Qwen3-8B": (0.19, 0.68, 0.57, 0.42),
    "II-Medical-8B": (0.13, 0.51, 0.43, 0.30),
    "Qwen3-32B": (0.37, 0.78, 0.70, 0.58),
    "Gemma3-27B-text-IT": (0.27, 0.75, 0.65, 0.51),
    "Medgemma-27B-text-IT": (0.28, 0.73, 0.63, 0.50),
}
"""Table 4 (zero-shot, full article): EMR, F1, Hamming, LCA, as printed (the PDF text reads "ll-Medical-8B")."""

TABLE_5 = {
    "Qwen3-8B": {"w/o": (0.19, 0.68, 0.57, 0.42), "with": (0.35, 0.75, 0.66, 0.55)},
    "Qwen3-32B": {"w/o": (0.37, 0.78, 0.70, 0.58), "with": (0.45, 0.81, 0.73, 0.64)},
    "GPT-OSS-20b": {"low": (0.36, 0.77, 0.60, 0.57), "high": (0.49, 0.81, 0.75, 0.66)},
    "GPT-OSS-120b": {"low": (0.46, 0.81, 0.74, 0.65), "high": (0.54, 0.85, 0.79, 0.71)},
    "GPT4.1": {"w/o": (0.49, 0.84, 0.78, 0.68), "with": (0.53, 0.85, 0.79, 0.71)},
}
"""Table 5: EMR, F1, Hamming, LCA without → with reasoning (low → high effort for GPT-OSS), as printed."""

FIGURE_3 = {"GPT4.1": {"full": 0.49}, "Qwen3-32B": {"full": 0.36}}
"""Figure 3's values that the text gives (Section 5.1.2: full article, GPT-4.1 0.49 and Qwen3-32B 0.36;
Table 4 prints 0.37 for Qwen3-32B)."""

LABELS = ("design", "statistics", "methodology", "limitations", "applicability")
"""Figure 4's columns: the question labels of the paper's Table 1."""

BASELINE_ROWS = {spec: row for spec, (row, _values) in BASELINES.items()}

PAPER_PROMPT = {"language": "fr", "prompt_set": "paper"}
"""The paper's setting: French questions, the physician-role prompt in French (Section 4.2)."""


def _context(context: str, about: str) -> reproduce.Condition:
    """The paper's zero-shot setting with ``context`` as the article (``full``, ``abstract`` or ``none``)."""
    return reproduce.Condition(context, "caremedeval", {**PAPER_PROMPT, "context": context}, about=about)


def _reasoning(name: str, about: str, *, effort: str | None = None, **task_args: Any) -> reproduce.Condition:
    """A Table 5 setting, run only when named: the full article with ``task_args`` added, at reasoning ``effort``."""
    generate = {"reasoning_effort": effort} if effort else {}
    full = {**PAPER_PROMPT, "context": "full", **task_args}
    return reproduce.Condition(name, "caremedeval", full, generate=generate, about=about, default=False)


CONDITIONS = (
    _context("full", "full article (Table 4, Figures 3-4)"),
    _context("abstract", "abstract only (Figure 3)"),
    _context("none", "no article (Figure 3)"),
    _reasoning("no-thinking", "hybrid thinking models with thinking off (/no_think): Table 5, w/o", thinking=False),
    _reasoning("thinking", "hybrid thinking models with thinking on (/think): Table 5, with", thinking=True),
    _reasoning("cot", "reasoning asked for in the prompt (GPT-4.1): Table 5, with", strategy="cot"),
    _reasoning("effort-low", "reasoning models at low effort (GPT-OSS): Table 5, low", effort="low"),
    _reasoning("effort-high", "reasoning models at high effort (GPT-OSS): Table 5, high", effort="high"),
)

SETTINGS = {
    "Qwen3-8B": (("w/o", "no-thinking"), ("with", "thinking")),
    "Qwen3-32B": (("w/o", "no-thinking"), ("with", "thinking")),
    "GPT-OSS-20b": (("low", "effort-low"), ("high", "effort-high")),
    "GPT-OSS-120b": (("low", "effort-low"), ("high", "effort-high")),
    "GPT4.1": (("w/o", "full"), ("with", "cot")),
}
"""Each Table 5 row's two settings and the conditions that run them."""

PAIRS = ((("w/o", "full"), ("with", "cot")), *{v for v in SETTINGS.values() if v[0][1] != "full"})
"""The setting pairs a model outside Table 5 is shown under, when it ran either condition."""


def _measures(condition: str) -> list[reproduce.Measure]:
    return [reproduce.Measure(header, condition, "multi_answer", metric) for header, metric in METRICS.items()]


def _by_header(values: tuple[float, ...]) -> dict[str, float]:
    return dict(zip(METRICS, values, strict=True))


def table_4(reproduction: reproduce.Reproduction) -> reproduce.TracedTable:
    """Table 4, wide: one row per model, EMR, F1, Hamming and LCA each beside the published value."""
    published = {row: _by_header(values) for row, values in TABLE_4.items()}
    return reproduce.comparison(reproduction, "Zero-shot, full article", _measures("full"), published, source="Table 4")


def table_5(reproduction: reproduce.Reproduction) -> reproduce.TracedTable:
    """Table 5, one row per model and setting: without and with reasoning (low and high effort)."""
    entries = [entry for model in reproduction.models for entry in _settings(reproduction, model)]
    published = {row: {setting: _by_header(v) for setting, v in settings.items()} for row, settings in TABLE_5.items()}
    entries += unreproduced(published, {entry.row for entry in entries})
    table = reproduce.comparison_table(reproduction, "Reasoning", list(METRICS), entries, source="Table 5")
    table.table.notes.append(
        "conditions: no-thinking → thinking (Qwen3), effort-low → effort-high (GPT-OSS), full → cot (GPT-4.1); "
        "they run when named: --condition no-thinking --condition thinking …"
    )
    return table


def _settings(reproduction: reproduce.Reproduction, model: str) -> list[reproduce.Entry]:
    """``model``'s rows: the two settings of its Table 5 row, else each pair of which it ran a named condition."""
    row = reproduction.row(model, TABLE_5)
    if row is not None:
        return [
            reproduce.Entry(
                model, setting_row(row, setting), _measures(condition), _by_header(TABLE_5[row][setting]), condition
            )
            for setting, condition in SETTINGS[row]
        ]
    pairs = [pair for pair in sorted(PAIRS) if _ran(reproduction, model, pair)]
    return [reproduce.Entry(model, "", _measures(c), {}, c) for pair in pairs for _setting, c in pair]


def _ran(reproduction: reproduce.Reproduction, model: str, pair: tuple[tuple[str, str], ...]) -> bool:
    """Whether ``model`` ran a condition of ``pair`` that runs only when named (``full`` alone does not count)."""
    named = [c for _s, c in pair if not reproduction.preset.condition(c).default]
    return any((condition, model) in reproduction.runs for condition in named)


def figure_3(reproduction: reproduce.Reproduction) -> reproduce.TracedTable:
    """Figure 3 as a table: EMR with the full article, the abstract only and no article."""
    measures = [
        reproduce.Measure(context, context, "multi_answer", "exact_match") for context in ("full", "abstract", "none")
    ]
    return reproduce.comparison(reproduction, "EMR by context", measures, FIGURE_3, source="Figure 3, Section 5.1.2")


def figure_4(reproduction: reproduce.Reproduction) -> reproduce.TracedTable:
    """Figure 4 as a table: EMR by question label, full article (the paper prints no values)."""
    measures = [
        reproduce.Measure(label, "full", "multi_answer", "exact_match", by="labels", group=label) for label in LABELS
    ]
    empty: Mapping[str, Mapping[str, float]] = {}
    return reproduce.comparison(reproduction, "EMR by label, full article", measures, empty, source="Figure 4")


reproduce.register_preset(
    reproduce.Preset(
        name="caremedeval",
        version="1",
        paper=PAPER,
        covers=(
            "Table 4 (models × EMR/F1/Hamming/LCA, full article)",
            "Table 5 (without/with reasoning, low/high effort)",
            "Figure 3 (EMR by context: full, abstract, none)",
            "Figure 4 (EMR by label)",
        ),
        limits=(
            "the paper's models are not bundled: name them with --model (e.g. an OpenAI-compatible server)",
            "the paper prints its prompt in English only (Figure 1): the French prompt is a translation of it",
            "Figures 3 and 4 are plots: only two of their values are printed (Section 5.1.2)",
            "Table 5's conditions run only when named with --condition; hybrid models think or not as their "
            "server decides under the default conditions",
            "first-option row not reproducible: answering A everywhere gives F1 0.281, not 0.20",
        ),
        conditions=CONDITIONS,
        tables=(table_4, table_5, figure_3, figure_4),
        rows=BASELINE_ROWS,
    )
)
