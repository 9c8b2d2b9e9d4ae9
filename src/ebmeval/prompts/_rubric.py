"""The wordings of the 0–5 rubric, shared by the rubric judges and the synthesis prompt sets.

``ebmeval`` is ebmeval's own (five criteria, ``Overall: N``); ``medmeta-paper`` is MedMeta's
Appendix E (``Score: N``). Their anchors are shown to judges and human annotators alike.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._util.errors import ConfigError
from ._judges import add_judge_template as _add
from ._template import PromptTemplate

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
