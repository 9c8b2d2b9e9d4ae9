"""Named, versioned prompt templates of conclusion synthesis, its negation, rating and judging.

Every template is registered in :data:`ebmeval.workflows.templates` under ``synthesis/…``
(``ebmeval.workflows.list_templates()`` shows them) and its ``id`` (``name@vN``) is recorded
with each result; the task version folds in every version, so results obtained with
different wording never mix.
"""

from __future__ import annotations

from ..prompts import PromptTemplate, templates


def _add(name: str, version: int, text: str, description: str) -> PromptTemplate:
    template = PromptTemplate(f"synthesis/{name}", version, text, description)
    templates.register(template.name)(template)
    return template


ZERO_SHOT = _add(
    "zero-shot",
    1,
    "You are an expert in evidence-based medicine. Write the conclusion of a systematic review and "
    "meta-analysis titled:\n\n{title}\n{background}\nState the main findings, how certain they are, and "
    "their implications for practice and research, in 2 to 4 sentences. Reply with the conclusion only.",
    "parametric-zero-shot: the conclusion from the title alone.",
)
PLAN = _add(
    "plan",
    1,
    "A systematic review is titled:\n\n{title}\n{background}\nList at most {n} focused sub-questions whose "
    "answers together would support the review's conclusion (effect direction and size, populations, "
    "certainty, harms). Write one question per line, numbered 1., 2., …, and nothing else.",
    "parametric-cot and standard-rag: the sub-questions that plan the conclusion (and the retrieval queries).",
)
ANSWER = _add(
    "answer",
    1,
    "Review title: {title}\n\nAnswer this sub-question from your own medical knowledge, in 2 to 3 "
    "sentences; say so when the evidence is uncertain.\n\nSub-question: {question}",
    "parametric-cot: one sub-question answered from the model's knowledge.",
)
DRAFT = _add(
    "draft",
    1,
    "Review title: {title}\n{background}\nWhat is known, as answers to sub-questions:\n{notes}\n{previous}"
    "Write the conclusion of this systematic review in 2 to 4 sentences: main findings, certainty, "
    "implications. Reply with the conclusion only.",
    "parametric-cot: a conclusion drafted (or revised) from the sub-question answers.",
)
PREVIOUS = _add(
    "previous",
    1,
    "\nYour previous draft was:\n{draft}\n\nA reviewer's feedback on it:\n{feedback}\n\nRevise the draft "
    "to address the feedback.\n",
    "parametric-cot: the previous draft and the evaluator's feedback, inserted into a revision.",
)
EVALUATE = _add(
    "evaluate",
    1,
    "Review title: {title}\n\nDraft conclusion:\n{draft}\n\nAs an expert in evidence-based medicine, rate "
    "how complete, specific and well-hedged this draft is as the conclusion of the review, from 0 "
    "(useless) to 5 (excellent). Then name what is missing or wrong. Reply in exactly this form:\n"
    "Score: <0-5>\nFeedback: <what to improve>",
    "parametric-cot: the evaluator call scoring a draft 0-5 with feedback.",
)
REPLAN = _add(
    "replan",
    1,
    "Review title: {title}\n\nDraft conclusion:\n{draft}\n\nReviewer feedback:\n{feedback}\n\nList at most "
    "{n} new sub-questions whose answers would fill the gaps the feedback names. Write one question per "
    "line, numbered 1., 2., …, and nothing else.",
    "parametric-cot: new sub-questions that target the gaps the evaluator found.",
)
SYNTHESISE = _add(
    "synthesise",
    1,
    "You are an expert in evidence-based medicine. Below are the abstracts of the studies included in "
    "a systematic review titled:\n\n{title}\n{background}\n{evidence}\n\nSynthesise these studies into the "
    "review's conclusion in 2 to 4 sentences: the main findings across studies, their certainty and "
    "consistency, and implications for practice and research. Reply with the conclusion only.",
    "standard-rag, golden-rag, negated-rag: the conclusion from the evidence given.",
)
MAP = _add(
    "map",
    1,
    "Review title: {title}\n\n{evidence}\n\nSummarise in at most 3 sentences what these studies found "
    "that bears on the review's question (direction, size and certainty of effects).",
    "Map step of the map-reduce overflow policy: one partial summary per group of abstracts.",
)
NEGATE = _add(
    "negate",
    1,
    "Rewrite the following study abstract so that every finding is inverted: effects that were "
    "beneficial become harmful or absent, significant differences become non-significant and vice "
    "versa, increases become decreases. Keep the design, population, sample size and style unchanged. "
    "Reply with the rewritten abstract only.\n\nAbstract:\n{abstract}",
    "negated-rag: the prompt that inverts the findings of one abstract.",
)
FEASIBILITY = _add(
    "feasibility",
    1,
    "Review title: {title}\n\nAbstracts of the included studies:\n{evidence}\n\nReference conclusion:\n"
    "{conclusion}\n\nFrom 0 (impossible) to 5 (fully supported), how well can this conclusion be reached "
    "from these abstracts alone? Reply in exactly this form:\nScore: <0-5>\nReason: <one sentence>",
    "feasibility: whether the reference conclusion can be reached from the abstracts.",
)
RUBRIC = _add(
    "rubric",
    1,
    "You compare a candidate conclusion of a systematic review with the reference conclusion its "
    "authors wrote.\n\nReview title: {title}\n\nReference conclusion:\n{reference}\n\nCandidate "
    "conclusion:\n{candidate}\n\nRate the semantic equivalence of the candidate to the reference from 0 "
    "(contradicts or unrelated) to 5 (equivalent) on each criterion:\n"
    "Main findings: same direction and presence of effects\n"
    "Specifics: same populations, interventions, outcomes and magnitudes\n"
    "Nuance: same certainty, limitations and heterogeneity\n"
    "Implications: same implications for practice and research\n"
    "Safety: no harmful claim the reference does not support\n"
    "Reply in exactly this form, one line each:\n"
    "Main findings: <0-5>\nSpecifics: <0-5>\nNuance: <0-5>\nImplications: <0-5>\nSafety: <0-5>\n"
    "Justification: <two sentences>\nOverall: <0-5>",
    "judge/rubric-0-5 and judge/rubric-panel: the 0-5 semantic-equivalence rubric.",
)
RUBRIC_RETRY = _add(
    "rubric-retry",
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

ALL = (
    ZERO_SHOT,
    PLAN,
    ANSWER,
    DRAFT,
    PREVIOUS,
    EVALUATE,
    REPLAN,
    SYNTHESISE,
    MAP,
    NEGATE,
    FEASIBILITY,
    RUBRIC,
    RUBRIC_RETRY,
)
"""Every synthesis template."""


def prompt_versions() -> dict[str, int]:
    """Template name → version, recorded with every synthesis task."""
    return {t.name: t.version for t in ALL}
