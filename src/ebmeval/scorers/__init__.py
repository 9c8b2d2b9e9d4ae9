"""Deterministic scorers: answer extraction, accuracy and the multi-answer exam metrics."""

from . import judges, text  # subpackages; importing them registers their scorers
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
from ._extract import choice_parser, parse_choices
from ._predictions import ascore_predictions, read_predictions, score_predictions
from ._strict import AnswerFormat, parse_strict
from ._triplets import Counts, MicroF1, TripletF1, micro_f1, parse_triplets, triplet_f1, triplet_parser

__all__ = [
    "Counts",
    "MicroF1",
    "TripletF1",
    "micro_f1",
    "parse_triplets",
    "triplet_f1",
    "triplet_parser",
    "LCA_CREDIT",
    "Accuracy",
    "AnswerFormat",
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
    "parse_strict",
    "read_predictions",
    "score_predictions",
    "set_f1",
    "text",
]
