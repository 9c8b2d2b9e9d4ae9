"""CareMedEval (Bonzi et al., 2025, arXiv:2511.03441): Table 4, Table 5 and Figures 3–4 from one command.

Published values are those of the paper's Table 4 and Table 5 as printed; Figures 3 and 4 are
plots whose values the text gives only in part (Section 5.1.2).
"""

from __future__ import annotations

from ...reproduce import Condition, Measure, Preset, Reproduction, TracedTable, comparison, register_preset

PAPER = (
    "Bonzi et al. (2025), CareMedEval: a benchmark for the critical appraisal of biomedical "
    "articles by LLMs, arXiv:2511.03441"
)

METRICS = {"EMR": "exact_match", "F1": "f1", "Hamming": "hamming", "LCA": "lca"}
"""Table 4's headers → the ``multi_answer`` metrics."""

TABLE_4 = {
    "Random (1-3 options)": (0.03, 0.39, 0.29, 0.16),
    "Only first-option": (0.00, 0.20, 0.11, 0.00),
    "Most 2 frequent answers": (0.03, 0.45, 0.33, 0.18),
    "Most 3 frequent answers": (0.03, 0.55, 0.42, 0.20),
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
"""Table 4 (zero-shot, full article): EMR, F1, Hamming, LCA per model, as printed."""

BASELINE_ROWS = {
    "baseline/random": "Random (1-3 options)",
    "baseline/first-option": "Only first-option",
    "baseline/most-frequent-2": "Most 2 frequent answers",
    "baseline/most-frequent-3": "Most 3 frequent answers",
}

FULL = Condition(
    "full",
    "caremedeval",
    {"language": "fr", "context": "full"},
    about="zero-shot, French questions, full article (Table 4, Figures 3 and 4)",
)


def table_4(reproduction: Reproduction) -> TracedTable:
    """Table 4, wide: one row per model, EMR, F1, Hamming and LCA each beside the published value."""
    measures = [Measure(header, "full", "multi_answer", metric) for header, metric in METRICS.items()]
    published = {row: dict(zip(METRICS, values, strict=True)) for row, values in TABLE_4.items()}
    return comparison(reproduction, "Zero-shot, full article", measures, published, source="Table 4")


register_preset(
    Preset(
        name="caremedeval",
        version="1",
        paper=PAPER,
        covers=("Table 4 (models × EMR/F1/Hamming/LCA, full article)",),
        limits=(
            "the paper's models are not bundled: name them with --model (served by an OpenAI-compatible endpoint)",
        ),
        conditions=(FULL,),
        tables=(table_4,),
        rows=BASELINE_ROWS,
    )
)
