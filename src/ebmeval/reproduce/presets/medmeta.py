"""MedMeta (meta-analysis conclusion synthesis): Table 2's workflows on the public items, under the paper's prompts.

Every condition runs task ``synthesis`` on the 20 public MedMeta items with ``prompts=medmeta-paper``
(Appendix B–F) and MedMeta's rubric judge (role ``judge``, "Score: N" replies). The evidence workflows
need abstracts or a corpus the user holds, which a preset cannot name; they are listed with the
published values and left empty (see ``limits``).
"""

from __future__ import annotations

from ...reproduce import Condition, Measure, Preset, Reproduction, TracedTable, comparison, register_preset

PAPER = (
    "Anonymous authors (under double-blind review), MedMeta: A Benchmark for LLMs in Synthesizing "
    "Meta-Analysis Conclusion"
)

WORKFLOWS = ("P-ZS", "P-CoT", "G-RAG", "K5-RAG", "K10-RAG", "N-RAG")
"""Table 2's columns."""

TABLE_2 = {
    "Gemini Flash 2.5": (2.10, 2.90, 3.16, 3.03, 3.17, 1.01),
    "O4 Mini": (2.00, 2.70, 2.79, 2.90, 2.94, 1.19),
    "MedGemma 27B": (1.80, 2.17, 2.72, 2.68, 2.46, 1.00),
    "Gemma 27B": (1.60, 1.77, 2.58, 2.37, 2.31, 0.98),
    "Qwen3 8B": (1.70, 2.27, 2.72, 2.53, 2.63, 1.03),
    "Qwen3 8B (reasoning)": (1.50, 2.00, 2.56, 2.46, 2.30, 1.00),
    "Qwen3 8B-DeepSeek": (1.30, 1.94, 2.55, 2.10, 2.13, 1.17),
}
"""Table 2: mean LLM-judge score (0–5) per model and workflow, as printed (the ± 95% CI left out)."""

PAPER_SETTINGS = {"source": "medmeta", "prompts": "medmeta-paper", "text_metrics": False}
"""The public items, the paper's prompts and judge; ROUGE and BERTScore are not in Table 2."""

CONDITIONS = (
    Condition("P-ZS", "synthesis", {**PAPER_SETTINGS, "workflow": "parametric-zero-shot"}, about="title only"),
    Condition(
        "P-CoT",
        "synthesis",
        {**PAPER_SETTINGS, "workflow": "parametric-cot"},
        about="plan 5 sub-questions, answer, synthesise, evaluate, refine (evaluator role)",
    ),
)


def table_2(reproduction: Reproduction) -> TracedTable:
    """Table 2: the mean judge score of each model per workflow, beside the published means."""
    measures = [Measure(name, name, "judge/rubric-0-5", "rubric") for name in ("P-ZS", "P-CoT")]
    published = {row: dict(zip(WORKFLOWS, values, strict=True)) for row, values in TABLE_2.items()}
    table = comparison(reproduction, "Mean LLM-judge score (0-5)", measures, published, source="Table 2")
    evidence = "; ".join(f"{w} {TABLE_2['Gemini Flash 2.5'][i]:.2f}" for i, w in enumerate(WORKFLOWS) if i > 1)
    table.table.notes.append(
        "G-RAG, K5-RAG, K10-RAG and N-RAG need the primary abstracts or the paper's corpus, which are not public: "
        f"run them with ebmeval run (abstracts=, retrieval=); published, e.g. Gemini Flash 2.5: {evidence}"
    )
    return table


register_preset(
    Preset(
        name="medmeta",
        version="1",
        paper=PAPER,
        covers=("Table 2, P-ZS and P-CoT columns (mean LLM-judge score per model)",),
        limits=(
            "20 of the paper's 81 meta-analyses are public: our means are over those 20",
            "G-RAG, S-RAG (K5, K10) and N-RAG need abstracts or a corpus the user holds: run them with "
            "ebmeval run --task synthesis --task-arg abstracts=PATH or retrieval=INDEX",
            "Tables 3 and 4 need human scores: run a study with ebmeval annotate and read ebmeval annotate report",
            "the judge is the model given with --role judge=SPEC (the paper's judges were reasoning models)",
            "the paper's models are not bundled: name them with --model",
        ),
        conditions=CONDITIONS,
        tables=(table_2,),
    )
)
