"""Analyses over stored runs: judge robustness (judge model, prompt wording) and agreement with humans."""

from .robustness import (
    STRATEGIES,
    HumanAgreement,
    StepAgreement,
    SweepRow,
    format_table,
    human_agreement,
    metric_values,
    read_human_scores,
    step_agreement,
    sweep,
)

__all__ = [
    "STRATEGIES",
    "HumanAgreement",
    "StepAgreement",
    "SweepRow",
    "format_table",
    "human_agreement",
    "metric_values",
    "read_human_scores",
    "step_agreement",
    "sweep",
]
