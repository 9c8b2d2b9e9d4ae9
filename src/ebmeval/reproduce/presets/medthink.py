"""MedThink-Bench (npj Digital Medicine, 2025): reasoning scores and answer accuracy from one run per model.

The condition runs ``medthink/reasoning`` under the paper's settings (``prompts=medthink-paper``:
judges at temperature 0.1 with 4,096 tokens and seed 42; models at temperature 0 with 4,096 tokens
and seed 42). The paper shows its results as figures; the published values are those its text
prints (Results and Discussion), the other cells are left empty.
"""

from __future__ import annotations

from ...reproduce import Condition, Measure, Preset, Reproduction, TracedTable, comparison, register_preset

PAPER = (
    "Zhou et al. (2025), Automating expert-level medical reasoning evaluation of large language models "
    "(MedThink-Bench), npj Digital Medicine"
)

FIGURE_3 = {
    "MedGemma-27B": {"LLM-w-Ref": 0.769, "accuracy": 0.384},
    "HuatuoGPT-o1-70B": {"LLM-w-Ref": 0.737, "accuracy": 0.49},
    "DeepSeek-R1": {"LLM-w-Ref": 0.727},
    "Med42-70B": {"LLM-w-Ref": 0.482, "LLM-w/o-Ref": 0.823},
    "Qwen3-32B": {"LLM-w/o-Ref": 0.907},
    "OpenAI-o3": {"accuracy": 0.692},
}
"""The values the text prints: LLM-w-Ref and LLM-w/o-Ref (Fig. 3, Results), accuracy (Discussion)."""

CONDITIONS = (
    Condition(
        "paper",
        "medthink/reasoning",
        {"prompts": "medthink-paper", "text_metrics": False},
        about="zero-shot CoT; the three step judges and accuracy from the same replies, the paper's settings",
    ),
)


def figure_3(reproduction: Reproduction) -> TracedTable:
    """Fig. 3 and the accuracy of Supplementary Data 3 as a table: one row per model."""
    measures = [
        Measure("LLM-w-Ref", "paper", "judge/steps-with-reference", "steps_supported"),
        Measure("LLM-w/o-Ref", "paper", "judge/steps-without-reference", "steps_covered"),
        Measure("accuracy", "paper", "medthink/accuracy", "accuracy"),
    ]
    return comparison(reproduction, "Reasoning and accuracy", measures, FIGURE_3, source="Fig. 3, text", decimals=3)


register_preset(
    Preset(
        name="medthink",
        version="1",
        paper=PAPER,
        covers=("Fig. 3 (LLM-w-Ref, LLM-w/o-Ref) and prediction accuracy, the values the text prints",),
        limits=(
            "the paper's figures print few values: the other published cells are empty",
            "expert scores are not public, so the expert column and its correlations are not reproduced",
            "BLEURT is not computed, and BERTScore runs on all-MiniLM-L6-v2 (text metrics are off here)",
            "Fig. 5 (judge models and prompt variants) is run with ebmeval.analysis.sweep, not by this preset",
            "the judge is the model given with --role judge=SPEC (the paper: GPT-4o-mini)",
        ),
        conditions=CONDITIONS,
        tables=(figure_3,),
    )
)
