"""Named, versioned prompt templates of the built-in judges (:mod:`ebmeval.judges`).

``steps/p1`` … ``steps/p5`` are five paraphrases of the per-step question (does the
rationale support this expert step?), all asking for the same ``Verdict: YES|NO`` line
so that only the wording varies between them; ``p1`` is the default. The ``strict/*``
templates are the follow-up sent once when a reply cannot be read.
"""

from __future__ import annotations

from ._template import PromptTemplate, add_template

JUDGE_TEMPLATES: set[str] = set()
"""Names of the registered templates the built-in judges ask with (``ebmeval list templates``
shows them as the judge family)."""


def add_judge_template(name: str, version: int, text: str, description: str) -> PromptTemplate:
    """Create a judge's template and register it under ``name``, marked as a judge's."""
    JUDGE_TEMPLATES.add(name)
    return add_template(name, version, text, description)


_add = add_judge_template

_STEP_VERDICT = 'End your reply with one line: "Verdict: YES" or "Verdict: NO".'

STEP_PROMPTS: dict[str, PromptTemplate] = {
    "p1": _add(
        "steps/p1",
        1,
        "You are a medical expert grading the reasoning of an answer to a medical question.\n\n"
        "Question:\n{question}\n\nReasoning to grade:\n{rationale}\n\nExpert reasoning step:\n{step}\n\n"
        "Does the reasoning to grade contain or clearly support this expert step? " + _STEP_VERDICT,
        "Per-step judge, default wording.",
    ),
    "p2": _add(
        "steps/p2",
        1,
        "Read a clinical question, a candidate explanation and one key point an expert expects.\n\n"
        "Clinical question:\n{question}\n\nCandidate explanation:\n{rationale}\n\nKey point:\n{step}\n\n"
        "Is the key point covered by the candidate explanation, in substance if not in wording? " + _STEP_VERDICT,
        "Per-step judge, paraphrase 2 (key point covered).",
    ),
    "p3": _add(
        "steps/p3",
        1,
        "As a physician reviewer, check one step of expert reasoning against a model's explanation.\n\n"
        "Case:\n{question}\n\nModel's explanation:\n{rationale}\n\nStep to look for:\n{step}\n\n"
        "Answer YES if the explanation makes this step (the same clinical fact or inference), "
        "otherwise NO. " + _STEP_VERDICT,
        "Per-step judge, paraphrase 3 (physician reviewer).",
    ),
    "p4": _add(
        "steps/p4",
        1,
        "Question:\n{question}\n\nRationale:\n{rationale}\n\nReference step:\n{step}\n\n"
        "Task: decide whether the rationale above includes the reasoning of the reference step. "
        "Minor wording differences do not matter; missing or contradicted content does. " + _STEP_VERDICT,
        "Per-step judge, paraphrase 4 (terse, task last).",
    ),
    "p5": _add(
        "steps/p5",
        1,
        "An expert listed the reasoning steps that a good answer to the question below should make. "
        "Here is one of them:\n{step}\n\nThe question was:\n{question}\n\nA model answered with this "
        "reasoning:\n{rationale}\n\nDid the model's reasoning make that step? " + _STEP_VERDICT,
        "Per-step judge, paraphrase 5 (step first).",
    ),
}
"""The per-step judge prompts by variant name."""

PROMPT_VARIANTS: tuple[str, ...] = tuple(STEP_PROMPTS)
"""Variant names of the per-step judge prompt, default first."""

STEPS_SINGLE = _add(
    "steps-single",
    1,
    "You are a medical expert grading the reasoning of an answer to a medical question.\n\n"
    "Question:\n{question}\n\nReasoning to grade:\n{rationale}\n\nExpert reasoning steps:\n{steps}\n\n"
    "For each numbered expert step, decide whether the reasoning to grade contains or clearly supports "
    'it. Reply with one line per step, in order, of the form "<number>: YES" or "<number>: NO".',
    "All expert steps judged in one call.",
)

STEPS_WITHOUT_REFERENCE = _add(
    "steps-without-reference",
    1,
    "You are a medical expert grading the reasoning of an answer to a medical question.\n\n"
    "Question:\n{question}\n\nReasoning to grade:\n{rationale}\n\n"
    "First decide how many distinct reasoning steps a complete, correct expert answer to this question "
    "needs. Then count how many of those steps the reasoning to grade makes correctly. End your reply "
    'with two lines:\n"Required steps: <number>"\n"Covered steps: <number>"',
    "The judge estimates the steps needed and how many the rationale covers; no expert steps are shown.",
)

STRICT_VERDICT = _add(
    "strict/verdict",
    1,
    'Your reply could not be read. Reply with exactly one line and nothing else: "Verdict: YES" if the '
    'reasoning contains or supports the expert step, otherwise "Verdict: NO".',
    "Retry of a per-step verdict that could not be read.",
)

STRICT_VERDICTS = _add(
    "strict/verdicts",
    1,
    "Your reply could not be read. Reply with exactly {n} lines and nothing else, one per expert step in "
    'order: "1: YES" or "1: NO", then "2: YES" or "2: NO", and so on up to {n}.',
    "Retry of the single-call verdicts that could not be read.",
)

STRICT_COUNTS = _add(
    "strict/counts",
    1,
    "Your reply could not be read. Reply with exactly two lines and nothing else:\n"
    '"Required steps: <number>"\n"Covered steps: <number>"\nwhere covered is at most required.',
    "Retry of the step counts that could not be read.",
)
