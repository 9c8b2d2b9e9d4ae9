"""The pairwise judge: one prompt showing two answers, one verdict (A, B or tie) per axis."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from ..prompts import add_judge_template
from ._read import clean, json_in_text

PairwiseVerdict = Literal["A", "B", "tie"]

AXES: dict[str, str] = {
    "usefulness": "Which answer better addresses the question and helps the person know what to do?",
    "readability": "Which answer is clearer and easier for a member of the public to read and understand?",
    "knowledge": "Which answer is more medically accurate and complete, with fewer wrong or unsafe statements?",
    "reasoning": "Which answer explains the why better, with sounder and more careful reasoning?",
}
"""The four comparison axes and the question the judge answers for each."""

PAIRWISE = add_judge_template(
    "arena/pairwise",
    3,
    "You are a physician comparing two answers to a health question from a member of the public.\n\n"
    "Question:\n{question}\n\n[Answer A]\n{answer_a}\n[End of answer A]\n\n[Answer B]\n{answer_b}\n"
    "[End of answer B]\n\nCompare the two answers on each axis below. Ignore the order in which they are "
    "shown and their length; judge only their content.\n{axes}\n\n"
    "Reply with exactly one line per axis, replacing <A, B or tie> with the better answer (A or B) or tie:\n{form}",
    "Pairwise comparison of two long-form answers on several axes.",
)
STRICT = add_judge_template(
    "arena/strict",
    2,
    "Your reply could not be read. Reply again with only these lines, with A, B or tie in place of "
    "each <A, B or tie>:\n{form}",
    "Follow-up sent once when the pairwise verdicts cannot be read.",
)

_WORDS: dict[str, PairwiseVerdict] = {
    "a": "A",
    "answer a": "A",
    "b": "B",
    "answer b": "B",
    "tie": "tie",
    "equal": "tie",
    "both": "tie",
    "neither": "tie",
    "same": "tie",
}
_PLACEHOLDER = re.compile(r"<?\s*A\s*,\s*B\s*,?\s*or\s+tie\s*>?", re.I)
_VALUE = r"(answer\s+a|answer\s+b|a|b|tie|equal|both|neither|same)\b"


def _word(value: object) -> PairwiseVerdict | None:
    if not isinstance(value, str):
        return None
    return _WORDS.get(re.sub(r"[\s\[\]()<>.*]+", " ", value).strip().lower())


def render_pairwise(question: str, answer_a: str, answer_b: str, axes: Sequence[str]) -> str:
    """The judge prompt for one ordering of two answers."""
    listed = "\n".join(f"- {axis}: {AXES[axis]}" for axis in axes)
    return PAIRWISE.render(
        question=question, answer_a=answer_a, answer_b=answer_b, axes=listed, form=verdict_form(axes)
    )


def verdict_form(axes: Sequence[str]) -> str:
    """The reply lines asked for, one per axis: ``usefulness: <A, B or tie>`` and so on.

    The placeholder is not itself a verdict, so a judge that copies the form verbatim gives no
    verdict (counted as unjudged) rather than a fixed one; a filled-in example line would be
    copied by small judges and read as the same verdict for every comparison.
    """
    return "\n".join(f"{axis}: <A, B or tie>" for axis in axes)


def parse_pairwise(text: str, axes: Sequence[str]) -> dict[str, PairwiseVerdict] | None:
    """One verdict per axis, or ``None`` unless every axis has one.

    Accepted: a JSON object mapping each axis to ``A``/``B``/``tie``; or one line per axis such as
    ``Usefulness: A``, ``readability - tie`` or ``**Knowledge**: Answer B`` (the last line for an axis
    wins). ``equal``, ``both``, ``neither`` and ``same`` read as a tie. The form's placeholder
    ``<A, B or tie>`` copied unchanged is no verdict. Thinking traces and Markdown emphasis are ignored.
    """
    cleaned = _PLACEHOLDER.sub("", clean(text))  # a copied form line states no verdict
    found = json_in_text(cleaned)
    if isinstance(found, dict):
        lowered = {str(k).strip().lower(): v for k, v in found.items()}
        verdicts = {axis: _word(lowered.get(axis)) for axis in axes}
        if all(v is not None for v in verdicts.values()):
            return {axis: v for axis, v in verdicts.items() if v is not None}
    by_axis: dict[str, PairwiseVerdict] = {}
    for axis in axes:
        pattern = re.compile(rf"^\W*{re.escape(axis)}\W*[:=\-–]\s*\W*{_VALUE}", re.I | re.M)
        matches = pattern.findall(cleaned)
        if matches:
            verdict = _word(matches[-1])
            if verdict is not None:
                by_axis[axis] = verdict
    return by_axis if len(by_axis) == len(axes) else None
