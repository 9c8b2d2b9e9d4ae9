"""Copying analysis: how much generated summaries reuse the target, the background, or stock phrases."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from .._util.errors import MissingDependencyError

ROUGE_TYPES: Final[tuple[str, ...]] = ("rouge1", "rouge2", "rougeL")

CANNED_OPENINGS: Final[tuple[str, ...]] = (
    "there is insufficient evidence to support",
    "the results of this systematic review suggest",
    "the is the first systematic review",
)
"""The paper's three stock phrases (section 5.2, with their frequencies in the whole test set), matched
case-insensitively at the start of the text. "The is" is the models' own misspelling of "This is"."""


def rouge(
    predictions: Sequence[str], references: Sequence[str], types: Sequence[str] = ROUGE_TYPES
) -> list[dict[str, float]]:
    """ROUGE F-measures of each prediction against its reference (Lin 2004), Porter-stemmed.

    ROUGE-N F = 2PR / (P + R) with P = |n-grams(pred) ∩ n-grams(ref)| / |n-grams(pred)| and
    R = the same over |n-grams(ref)| (clipped counts); ROUGE-L uses the longest common subsequence
    in place of the n-gram overlap. Computed by ``rouge-score``.

    Raises:
        MissingDependencyError: ``rouge-score`` is not installed.
        ValueError: the two sequences differ in length.
    """
    try:
        from rouge_score import rouge_scorer
    except ImportError:
        raise MissingDependencyError("ROUGE", "rouge-score", "metrics") from None
    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions but {len(references)} references")
    scorer = rouge_scorer.RougeScorer(list(types), use_stemmer=True)
    return [
        {name: float(result.fmeasure) for name, result in scorer.score(ref, pred).items()}
        for pred, ref in zip(predictions, references, strict=True)
    ]


def canned_opening(text: str, openings: Sequence[str] = CANNED_OPENINGS) -> str | None:
    """The first of ``openings`` that ``text`` starts with (case and spacing ignored), or None."""
    start = re.sub(r"\s+", " ", text.strip().lower())
    for opening in openings:
        if start.startswith(re.sub(r"\s+", " ", opening.strip().lower())):
            return opening
    return None


@dataclass(frozen=True, slots=True)
class OpeningCount:
    """How often one canned opening starts the texts.

    Attributes:
        opening: The phrase.
        count: Texts starting with it.
        share: count / n.
        n: Texts examined.
    """

    opening: str
    count: int
    share: float
    n: int


def opening_counts(texts: Sequence[str], openings: Sequence[str] = CANNED_OPENINGS) -> list[OpeningCount]:
    """Frequency of each canned opening, with share = count / len(texts), most frequent first.

    Each text counts for the first matching opening only; openings never seen are left out.
    """
    counts: dict[str, int] = {}
    for text in texts:
        found = canned_opening(text, openings)
        if found is not None:
            counts[found] = counts.get(found, 0) + 1
    n = len(texts)
    return [
        OpeningCount(opening=o, count=c, share=c / n if n else 0.0, n=n)
        for o, c in sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    ]
