"""Named, versioned prompt templates of conclusion synthesis, its negation, rating and judging.

Every template is registered in :data:`ebmeval.workflows.templates` under ``synthesis/…``
(``ebmeval.workflows.list_templates()`` shows them) and its ``id`` (``name@vN``) is recorded
with each result; the task version folds in every version, so results obtained with
different wording never mix.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._util.errors import ConfigError
from ..prompts import EBMEVAL_RUBRIC, MEDMETA_RUBRIC, PromptTemplate, add_template


def _add(name: str, version: int, text: str, description: str) -> PromptTemplate:
    return add_template(f"synthesis/{name}", version, text, description)


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
NEGATION_CHECK = _add(
    "negation-check",
    1,
    "Original abstract:\n{abstract}\n\nRewritten abstract:\n{negated}\n\nDoes the rewritten abstract invert the "
    "findings of the original (beneficial effects become harmful or absent, significant differences become "
    "non-significant, increases become decreases)? Answer with one word: Yes or No.",
    "negated-rag: whether a negation inverts the findings of its abstract (role negation_checker).",
)
FEASIBILITY = _add(
    "feasibility",
    1,
    "Review title: {title}\n\nAbstracts of the included studies:\n{evidence}\n\nReference conclusion:\n"
    "{conclusion}\n\nFrom 0 (impossible) to 5 (fully supported), how well can this conclusion be reached "
    "from these abstracts alone? Reply in exactly this form:\nScore: <0-5>\nReason: <one sentence>",
    "feasibility: whether the reference conclusion can be reached from the abstracts.",
)
_PAPER_SCORE_LINE = "\n\nEnd your reply with a line of the form: Score: <0-5>"
_PAPER = "medmeta-paper"

PAPER_ZERO_SHOT = _add(
    f"{_PAPER}/zero-shot",
    1,
    "You are an expert Clinical Research Scientist specializing in evidence-based medicine and the "
    "interpretation of meta-analyses. Your primary skill is to synthesize complex medical information into "
    "clear, concise conclusions.\n\nYour task is to generate the most likely primary concluding statement "
    "for a medical meta-analysis, based solely on its title (research question).\n\nYou will be provided "
    "with only the following information: Meta-Analysis Title: {title}\n\nCore Instructions: 1. You must "
    "provide the best possible conclusion based on the title and your existing knowledge. 2. The conclusion "
    "should be a single, concise, and coherent conclusion paragraph.\n\nProvide your response as a single "
    "block of text containing only the generated conclusion. Do not include any preceding or succeeding "
    "conversational text, introductions, or apologies.",
    "MedMeta Appendix B, verbatim: P-ZS.",
)
PAPER_PLAN = _add(
    f"{_PAPER}/plan",
    1,
    "You are a research assistant skilled in formulating structured research plans for systematic reviews "
    "or meta-analyses. Given a research topic, create a concise plan including background context, {n} key "
    "research questions, and a brief summary of the search strategy/concepts.\n\nResearch Topic: {title}"
    "\n\nNumber the research questions 1., 2., ….",
    "MedMeta Appendix C.1 (5 questions by default); the topic line and the numbering request are ebmeval's, "
    "so the questions can be read from the plan.",
)
PAPER_ANSWER = _add(
    f"{_PAPER}/answer",
    1,
    "You are an **expert researcher with broad medical knowledge**. For the given research question, provide "
    "a comprehensive answer based on your internal knowledge. If applicable, identify 2-3 critical "
    "sub-questions that arise from this research question and provide detailed answers to those as well "
    "within your response. Structure your entire response as a single coherent text.\n\nResearch question: "
    "{question}",
    "MedMeta Appendix C.2, verbatim, with the question appended.",
)
PAPER_DRAFT = _add(
    f"{_PAPER}/draft",
    1,
    "You are a research analyst tasked with drafting the **primary concluding statement** for a meta-analysis "
    "or systematic review. Your goal is to distill the provided context into the **single most important and** "
    "**specific takeaway message**, as if you were presenting the main result of the study.\nBased "
    "**strictly** on the provided context:\n1. Identify the **central, affirmative findings** or **key "
    "definitive statements** made. What is the most crucial outcome, comparison, or result reported?\n2. "
    "Capture any **critical quantifications, effect sizes, or specific comparisons** that are central to this "
    "main finding.\n3. Include any **essential caveats, limitations, or conditions** that are directly tied "
    "to and qualify this primary finding.\n4. The conclusion should be **highly focused and concise**, "
    "reflecting the punchline of the research. Avoid general summaries of the entire field or background "
    "information from the context.\n5. Do not introduce external knowledge or comment on the completeness of "
    "the provided context.\nResearch Topic: {title}\nPrimary Abstracts: {notes}\nSynthesize the primary "
    "concluding statement based **only** on the provided context, focusing on the most direct and impactful "
    "findings:",
    'MedMeta Appendix C.4, verbatim, over P-CoT\'s answers ("used in both workflows"); the paper revises by '
    "new sub-questions, not by showing the previous draft.",
)
PAPER_EVALUATE = _add(
    f"{_PAPER}/evaluate",
    1,
    "You are an expert research evaluator tasked with assessing whether a generated conclusion adequately "
    "addresses and matches the given research topic. Your evaluation should consider:\n1. **Topic "
    "Relevance**:\n2. **Comprehensiveness**:\n3. **Specificity**:\n4. **Coherence**:\n5. "
    "**Completeness**:\n\nProvide your assessment as:\n\n1. A detailed evaluation explaining what works well "
    "and what might be missing or inadequate\n2. A score from 0-5 where:\n- 0 = Completely inadequate\n- 1 "
    "= Very inadequate\n- 2 = Inadequate\n- 3 = Moderately adequate\n- 4 = Good\n- 5 = Excellent\n\nFocus "
    "on whether the conclusion is sufficient for someone researching this specific topic.\n\nResearch Topic: "
    "{title}\n\nCurrent Research Plan: {plan}\n\nGenerated Conclusion: {draft}\n\nPlease evaluate whether "
    "this conclusion adequately matches and addresses the research topic.\n\nProvide both a detailed "
    "evaluation and numerical score 0-5." + _PAPER_SCORE_LINE,
    "MedMeta Appendix C.3, verbatim; the closing score line is ebmeval's (the paper shows no reply format).",
)
PAPER_REPLAN = _add(
    f"{_PAPER}/replan",
    1,
    "You are a research assistant expert at formulating targeted research questions. Given a research topic, "
    "original questions that were already asked, and feedback about what was missing from the initial "
    "conclusion, generate {n} NEW and DIFFERENT sub-questions that will help address the gaps and improve "
    "understanding of the research topic.\n\nYour new questions should:\n\n1. Be completely different from "
    "the original questions\n2. Address specific gaps mentioned in the evaluation feedback\n3. Explore "
    "different angles, perspectives, or aspects of the topic\n4. Be specific and actionable for research "
    "purposes\n5. Help fill in missing information to better address the research topic\n\nResearch Topic: "
    "{title}\n\nOriginal Questions Already Asked: {questions}\n\nEvaluation Feedback (what was "
    "missing/inadequate): {feedback}\n\nGenerate {n} NEW sub-questions that are different from the original "
    "ones and will help address the gaps identified in the evaluation feedback:",
    "MedMeta Appendix C.3 (feedback-driven question refinement), verbatim.",
)
PAPER_SYNTHESISE = _add(
    f"{_PAPER}/synthesise",
    1,
    PAPER_DRAFT.text.replace("{notes}", "{evidence}"),
    "MedMeta Appendix C.4, verbatim, over the abstracts (S-RAG, G-RAG, N-RAG).",
)
PAPER_NEGATE = _add(
    f"{_PAPER}/negate",
    1,
    "You are a medical research assistant. Your task is to create a negated/opposite version of the given "
    "meta-analysis text while maintaining scientific credibility and plausibility.\nGiven the following "
    "meta-analysis title and abstract, create a similar text but with conclusions that are opposite or "
    "contradictory to the original. Make sure to: 1. Keep the same title format and structure 2. Maintain "
    "the same study design and methodology description 3. Change only the findings/conclusions to be "
    "opposite or contradictory 4. Ensure the negated conclusion is medically plausible and realistic 5. Use "
    "appropriate medical terminology and maintain scientific rigor\nOriginal text: {abstract}\nCreate a "
    "negated version with opposite conclusions:",
    "MedMeta Appendix D, verbatim, applied to each primary abstract (N-RAG).",
)
PAPER_FEASIBILITY = _add(
    f"{_PAPER}/feasibility",
    1,
    "Your task is to assess if someone could reasonably arrive at the same conclusion as the original "
    "authors by reading only the provided abstracts.\n\nProvide your assessment as:\n\n1. A detailed "
    "evaluation including:\n- What key information from the original conclusion is present in the "
    "abstracts\n- What important information from the original conclusion might be missing\n- Whether the "
    "abstracts provide sufficient evidence to support the original conclusion\n- Any gaps or limitations "
    "that would prevent recreating the original conclusion\n\n2. A score from 0-5 where\n- 0 = Completely "
    "insufficient\n- 1 = Very insufficient\n- 2 = Insufficient\n- 3 = Moderately sufficient\n- 4 = Good "
    "sufficiency\n- 5 = Excellent sufficiency\n\nFocus specifically on whether the abstracts support the "
    "original conclusion's claims, findings, and recommendations.\n\nResearch Topic: {title}\n\nOriginal "
    "Conclusion (to be recreated): {conclusion}\n\nPrimary Abstracts: {evidence}\n\nProvide both a detailed "
    "evaluation and numerical score (0-5)." + _PAPER_SCORE_LINE,
    "MedMeta Appendix F, verbatim; the closing score line is ebmeval's.",
)


@dataclass(frozen=True)
class PromptSet:
    """A named, versioned set of the synthesis prompts, chosen with the task option ``prompts``.

    Attributes:
        name: ``ebmeval`` (ebmeval's own) or ``medmeta-paper`` (MedMeta's appendix prompts).
        score_label: The line of the rubric reply that holds the overall score (``Overall``/``Score``).
        anchors: The 0-5 anchors of the rubric, shown to judges and human annotators alike.
        criteria: The rubric's criteria, as the annotators' instructions.
    """

    name: str
    zero_shot: PromptTemplate
    plan: PromptTemplate
    answer: PromptTemplate
    draft: PromptTemplate
    previous: PromptTemplate
    evaluate: PromptTemplate
    replan: PromptTemplate
    synthesise: PromptTemplate
    map: PromptTemplate
    negate: PromptTemplate
    feasibility: PromptTemplate
    rubric: PromptTemplate
    rubric_retry: PromptTemplate
    score_label: str
    anchors: dict[str, str]
    criteria: str

    @property
    def templates(self) -> tuple[PromptTemplate, ...]:
        """Every template of the set."""
        return tuple(v for v in vars(self).values() if isinstance(v, PromptTemplate))

    def versions(self) -> dict[str, int]:
        """Template name → version, recorded with every synthesis task."""
        return {t.name: t.version for t in self.templates}


EBMEVAL = PromptSet(
    "ebmeval",
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
    EBMEVAL_RUBRIC.rubric,
    EBMEVAL_RUBRIC.rubric_retry,
    EBMEVAL_RUBRIC.score_label,
    EBMEVAL_RUBRIC.anchors,
    EBMEVAL_RUBRIC.criteria,
)
MEDMETA_PAPER = PromptSet(
    _PAPER,
    PAPER_ZERO_SHOT,
    PAPER_PLAN,
    PAPER_ANSWER,
    PAPER_DRAFT,
    PREVIOUS,
    PAPER_EVALUATE,
    PAPER_REPLAN,
    PAPER_SYNTHESISE,
    MAP,
    PAPER_NEGATE,
    PAPER_FEASIBILITY,
    MEDMETA_RUBRIC.rubric,
    MEDMETA_RUBRIC.rubric_retry,
    MEDMETA_RUBRIC.score_label,
    MEDMETA_RUBRIC.anchors,
    MEDMETA_RUBRIC.criteria,
)
PROMPT_SETS = {p.name: p for p in (EBMEVAL, MEDMETA_PAPER)}
"""The synthesis prompt sets by name."""


def prompt_set(name: str) -> PromptSet:
    """The prompt set called ``name``; ``ConfigError`` naming the known ones otherwise."""
    if name not in PROMPT_SETS:
        raise ConfigError("prompts", f"must be one of {', '.join(PROMPT_SETS)}; not {name!r}")
    return PROMPT_SETS[name]


def prompt_set_of_template(template_id: str) -> PromptSet | None:
    """The set whose rubric is the template ``name@vN`` (as a score set records it), or None."""
    return next((p for p in PROMPT_SETS.values() if p.rubric.id == template_id), None)


def prompt_versions(prompts: PromptSet = EBMEVAL) -> dict[str, int]:
    """Template name → version of a prompt set, recorded with every synthesis task."""
    return prompts.versions()
