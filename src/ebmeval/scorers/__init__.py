"""Deterministic scorers: answer extraction, accuracy and the multi-answer exam metrics."""

from ._choice import (
    LCA_CREDIT,
    Accuracy,
    MultiAnswer,
    Unparsed,
    accuracy,
    exact_match,
    hamming_score,
    lca_score,
    multi_answer,
    set_f1,
)
from ._extract import choice_parser, parse_choices, strip_reasoning
from ._predictions import ascore_predictions, read_predictions, score_predictions

__all__ = [
    "LCA_CREDIT",
    "Accuracy",
    "MultiAnswer",
    "Unparsed",
    "accuracy",
    "ascore_predictions",
    "choice_parser",
    "exact_match",
    "hamming_score",
    "judges",
    "lca_score",
    "multi_answer",
    "parse_choices",
    "read_predictions",
    "score_predictions",
    "set_f1",
    "strip_reasoning",
    "text",
]

from . import judges, text  # noqa: E402  (subpackages; importing them registers their scorers)
