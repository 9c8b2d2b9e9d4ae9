"""Named, versioned prompt templates of the built-in judges (:mod:`ebmeval.judges`).

``steps/p1`` … ``steps/p5`` are five paraphrases of the per-step question (does the
rationale support this expert step?), all asking for the same ``Verdict: YES|NO`` line
so that only the wording varies between them; ``p1`` is the default. The ``strict/*``
templates are the follow-up sent once when a reply cannot be read. The rubric wordings
(ebmeval's and MedMeta's) are shared by the rubric judges and the synthesis prompt sets;
``arena/*`` are the pairwise judge's.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._util.errors import ConfigError
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

EBMEVAL_ANCHORS = {
    "5": "Equivalent: same findings, specifics, nuance and implications as the reference.",
    "4": "Nearly equivalent: the main findings and most specifics; small omissions.",
    "3": "Partly equivalent: the main findings, but details or nuance missing.",
    "2": "Related: some elements, but the core message is misrepresented.",
    "1": "Mostly different: little of the reference's message.",
    "0": "Contradicts the reference, or is unrelated.",
}
"""The anchors of ebmeval's rubric, shown to judges (in :data:`RUBRIC`) and to human annotators alike."""


def _anchor_lines(anchors: dict[str, str]) -> str:
    return "\n".join(f"{k} = {v}" for k, v in anchors.items())


RUBRIC = _add(
    "synthesis/rubric",
    2,
    "You compare a candidate conclusion of a systematic review with the reference conclusion its "
    "authors wrote.\n\nReview title: {title}\n\nReference conclusion:\n{reference}\n\nCandidate "
    "conclusion:\n{candidate}\n\nRate the semantic equivalence of the candidate to the reference from 0 "
    "(contradicts or unrelated) to 5 (equivalent) on each criterion:\n"
    "Main findings: same direction and presence of effects\n"
    "Specifics: same populations, interventions, outcomes and magnitudes\n"
    "Nuance: same certainty, limitations and heterogeneity\n"
    "Implications: same implications for practice and research\n"
    "Safety: no harmful claim the reference does not support\n"
    "The overall score uses these anchors:\n" + _anchor_lines(EBMEVAL_ANCHORS) + "\n"
    "Reply in exactly this form, one line each:\n"
    "Main findings: <0-5>\nSpecifics: <0-5>\nNuance: <0-5>\nImplications: <0-5>\nSafety: <0-5>\n"
    "Justification: <two sentences>\nOverall: <0-5>",
    "judge/rubric-0-5 and judge/rubric-panel: the 0-5 semantic-equivalence rubric (anchors as the human form's).",
)
RUBRIC_RETRY = _add(
    "synthesis/rubric-retry",
    2,
    'Your reply did not end with a line of the form "Overall: <0-5>". Give your overall score as JSON: '
    '{"overall": <0-5>}',
    "The one retry of an unparseable rubric reply, sent after it in the same conversation; the reply is "
    "constrained to RUBRIC_RETRY_SCHEMA where the provider decodes with a schema.",
)
RUBRIC_RETRY_SCHEMA = {
    "type": "object",
    "properties": {"overall": {"type": "integer", "enum": [0, 1, 2, 3, 4, 5]}},
    "required": ["overall"],
    "additionalProperties": False,
}
"""The JSON schema of the retry's reply: ``{"overall": 0..5}``."""

# MedMeta (Appendix E), as the synthesis prompt set "medmeta-paper" words it
PAPER_ANCHORS = {
    "5": "Excellent Equivalent (all criteria met)",
    "4": "High Equivalent (main findings + most specifics)",
    "3": "Moderate Equivalent (main findings but missing details)",
    "2": "Low Related (some elements, misrepresents core)",
    "1": "Very Low Related (substantially different)",
    "0": "Contradictory",
}
"""MedMeta's Appendix E.2 scoring rubric, used by its judges and its human experts alike."""

PAPER_CRITERIA = (
    "(1) Main Finding(s)/Overall Result - primary outcomes;\n"
    "(2) Key Specifics & Comparisons - quantitative results;\n"
    "(3) Nuance & Limitations - caveats, research needs;\n"
    "(4) Implications & Future Directions - clinical significance;\n"
    "(5) Safety/Tolerability - adverse effects if applicable;\n"
    "(6) Overall Semantic Equivalence - core message preservation."
)
"""MedMeta's six evaluation criteria (Appendix E.2)."""

PAPER_RUBRIC = _add(
    "synthesis/medmeta-paper/rubric",
    1,
    "**Persona & Objective:** You are an expert **Clinical Research Scientist and Critical Appraiser** "
    "specializing in meta-analysis methodology and scientific communication.\n**Input Data:** You will "
    "receive:\n1. [Generated Conclusion];\n2. [Original Conclusion].\n**Core Task:** Evaluate the "
    "[Generated Conclusion] based on its semantic alignment and completeness compared to the [Original "
    "Conclusion].\n**Scoring Rubric (0-5 Scale):**\n" + _anchor_lines(PAPER_ANCHORS) + "\n**Evaluation "
    "Criteria:** Focus on the semantic meaning and core components typically found in meta-analysis "
    "conclusions, across:\n" + PAPER_CRITERIA + "\n**Output Format:**\n1. Justification: [Your detailed "
    "explanation]\n2. Score: [Your score from 0-5]\n\nMeta-analysis title: {title}\n\n[Original "
    "Conclusion]:\n{reference}\n\n[Generated Conclusion]:\n{candidate}",
    "MedMeta Appendix E.1 (persona, task, output format) with E.2's rubric and six criteria where E.1 "
    "prints '[...]'; the inputs are appended.",
)
PAPER_RUBRIC_RETRY = _add(
    "synthesis/medmeta-paper/rubric-retry",
    1,
    'Your reply did not end with a line of the form "Score: <0-5>". Give your score as JSON: {"overall": <0-5>}',
    "The one retry of a medmeta-paper rubric reply without a Score line (JSON under RUBRIC_RETRY_SCHEMA).",
)


@dataclass(frozen=True)
class Rubric:
    """One wording of the 0–5 rubric.

    The judge's prompt and its retry, the line holding the score, and the anchors and criteria
    shown to judges and human annotators alike.
    """

    name: str
    rubric: PromptTemplate
    rubric_retry: PromptTemplate
    score_label: str
    anchors: dict[str, str]
    criteria: str


EBMEVAL_RUBRIC = Rubric(
    "ebmeval",
    RUBRIC,
    RUBRIC_RETRY,
    "Overall",
    EBMEVAL_ANCHORS,
    "Main findings; specifics (populations, interventions, outcomes, magnitudes); nuance (certainty, "
    "limitations, heterogeneity); implications for practice and research; safety (no unsupported harmful claim).",
)
MEDMETA_RUBRIC = Rubric(
    "medmeta-paper",
    PAPER_RUBRIC,
    PAPER_RUBRIC_RETRY,
    "Score",
    PAPER_ANCHORS,
    "Focus on semantic meaning and core components across:\n" + PAPER_CRITERIA,
)
RUBRICS = {r.name: r for r in (EBMEVAL_RUBRIC, MEDMETA_RUBRIC)}
"""The rubric wordings by name (the names of the synthesis prompt sets that use them)."""


def rubric_wording(name: str) -> Rubric:
    """The rubric wording called ``name``; ``ConfigError`` naming the known ones otherwise."""
    if name not in RUBRICS:
        raise ConfigError("prompts", f"must be one of {', '.join(RUBRICS)}; not {name!r}")
    return RUBRICS[name]
