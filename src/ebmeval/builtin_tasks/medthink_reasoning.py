"""MedThink-Bench (npj Digital Medicine, 2025): grading the reasoning of answers against expert steps.

All 500 questions, answered with a zero-shot chain-of-thought prompt. The rationale and
the final answer are split by rules (:func:`split_rationale`); the rationale is kept in
``generation.metadata["rationale"]`` and the final answer is the parsed answer. The
scorers are the three step judges (role ``judge``) and, optionally, text-similarity
baselines between the rationale and the expert steps joined into one text.
Data card: ``docs/tasks/medthink_reasoning.md``.
"""

from __future__ import annotations

import re
from typing import Any

from .._util.errors import ConfigError
from ..models import ChatMessage, GenerateConfig, strip_reasoning, user
from ..prompts import add_template
from ..scorers import parse_choices
from ..scorers.judges import StepsWithoutReference, StepsWithReference, StepsWithReferenceSingle
from ..scorers.text import (
    BleurtSimilarity,
    bertscore_scorer,
    bleu_scorer,
    load_bleurt,
    meteor_scorer,
    require_metrics,
    rouge_l,
)
from ..tasks import (
    Generation,
    ParsedAnswer,
    Sample,
    SampleContext,
    Score,
    Scorer,
    Task,
    WorkflowResult,
    scorer,
    task,
)
from ._data import read_records

DATA = "medthink_reasoning.jsonl.gz"

ZERO_SHOT_COT = add_template(
    "medthink/zero-shot-cot",
    1,
    "{question}\n\nLet's think step by step. Explain your reasoning, then end your reply with a final "
    'line of the form "Final answer: <answer>".',
    "Zero-shot chain of thought for MedThink-Bench: reasoning, then a final answer line.",
)

MAX_TOKENS = 1024
"""Reply budget of the reasoning call."""

TEXT_SOURCE: dict[str, Any] = {"prediction": "metadata:rationale", "reference": "metadata:scoring_points"}
"""What the text metrics compare: the rationale, against the expert steps joined into one text."""

_ANSWER_LINE = re.compile(
    r"^[\s>#*_]*(?:(?:final\s+)?answer[\s*_]*[:：]|(?:the\s+)?(?:final\s+|correct\s+)?answer\s+is\b[\s*_]*:?)[\s*_]*(.*)$",
    re.I | re.M,
)


def split_rationale(text: str) -> tuple[str, str | None]:
    """``(rationale, final answer)`` of a reply; the answer is ``None`` without an answer line.

    Thinking traces are removed first. The answer line is the last line starting with
    ``Final answer:``, ``Answer:`` or ``The (final/correct) answer is`` (markdown emphasis
    allowed; small models often ignore the requested form); the answer is the rest
    of that line, or the next non-empty line when the rest is empty. The rationale is
    the text before that line; without an answer line it is the whole reply.
    """
    cleaned = strip_reasoning(text).strip()
    matches = list(_ANSWER_LINE.finditer(cleaned))
    if not matches:
        return cleaned, None
    last = matches[-1]
    answer = last.group(1).strip().strip("*_").strip()
    if not answer:
        following = [line.strip() for line in cleaned[last.end() :].splitlines() if line.strip()]
        answer = following[0] if following else ""
    return cleaned[: last.start()].strip(), answer or None


def parse_final_answer(output: str, sample: Sample) -> ParsedAnswer:
    """The final answer line of ``output`` (see :func:`split_rationale`); unparsed without one."""
    _rationale, answer = split_rationale(output)
    return ParsedAnswer(value=answer, method="answer-line") if answer else ParsedAnswer.unparsed("answer-line")


class ZeroShotReasoning:
    """One call with the ``medthink/zero-shot-cot`` prompt; the rationale goes to metadata."""

    name = "zero-shot-cot"
    templates = (ZERO_SHOT_COT,)

    def __init__(self, max_tokens: int = MAX_TOKENS) -> None:
        self.generate_config = GenerateConfig(max_tokens=max_tokens)

    def render_prompts(self, sample: Sample) -> dict[str, list[ChatMessage]]:
        """The one call's messages, for ``show-prompt``."""
        return {self.name: [user(ZERO_SHOT_COT.render(question=sample.input))]}

    async def __call__(self, sample: Sample, ctx: SampleContext) -> WorkflowResult:
        """Ask for reasoning and a final answer; keep both parts."""
        prompt = ZERO_SHOT_COT.render(question=sample.input)
        # No config here: the task's generate_config (max_tokens) is the default that run settings override.
        output = await ctx.generate(self.name, [user(prompt)])
        rationale, answer = split_rationale(output.text)
        return WorkflowResult(
            output=output.text,
            metadata={"rationale": rationale, "final_answer": answer, "prompt": ZERO_SHOT_COT.id},
        )


_MARK = re.compile(r"(?:^|(?<=\s))(?:\(([A-Z])\)|([A-Z])\.)\s")
_GOLD = re.compile(r"^\s*\(?([A-Z])(?:[.)]|\s*$)")


def options_of(question: str) -> dict[str, str]:
    """The lettered options written into a MedThink question (``A. IGF1 B. ACTH`` or ``(A) … (B) …``).

    Options are the markers A, B, C … in sequence: a marker out of sequence (``for C. trachomatis``
    inside option J) is part of the text.
    """
    marks, expected = [], "A"
    for match in _MARK.finditer(question):
        if (match.group(1) or match.group(2)) == expected:
            marks.append(match)
            expected = chr(ord(expected) + 1)
    ends = [m.start() for m in marks[1:]] + [len(question)]
    return {(m.group(1) or m.group(2)): question[m.end() : end].strip() for m, end in zip(marks, ends, strict=True)}


def gold_letter(target: str, options: dict[str, str]) -> str | None:
    """The gold option: the leading letter of ``A. IGF1`` (or a bare ``L``), else the option it names."""
    found = _GOLD.match(target)
    return found.group(1) if found else answer_letter(target, options)


def answer_letter(answer: str, options: dict[str, str]) -> str | None:
    """The option an answer names: its letter (``A``, ``(A)``, ``A. IGF1``) or an option's text (``IGF1``)."""
    by_text = {text.strip().rstrip(".").casefold(): letter for letter, text in options.items()}
    found = by_text.get(answer.strip().strip("*_ ").rstrip(".").casefold())
    if found is not None:
        return found
    parsed = parse_choices(answer, options)
    return str(parsed.value) if parsed.parsed else None


class AnswerAccuracy:
    """``medthink/accuracy``: exact match of the final answer with the gold option, from the same reply.

    MedThink-Bench's prediction accuracy (Methods, "Prediction accuracy"): 1 when the answer line
    names the gold option, else 0 (no answer line counts 0). The gold ``A. IGF1`` and a reply's
    ``A``, ``(A)``, ``A. IGF1`` or ``IGF1`` are the same option: both sides are read as the option
    letter among the options written into the question.
    """

    name = "medthink/accuracy"

    async def __call__(self, sample: Sample, generation: Generation, ctx: SampleContext) -> Score:
        """Compare the option letters of the final answer and the gold answer."""
        options = options_of(sample.input)
        gold = gold_letter(str(sample.target), options)
        answer = generation.answer.value if generation.answer.parsed else None
        chosen = answer_letter(str(answer), options) if answer else None
        return Score(
            values={"accuracy": float(chosen is not None and chosen == gold)},
            explanation=f"answer {answer!r} → {chosen}, gold {sample.target!r} → {gold}",
        )


@scorer("medthink/accuracy", binary=("accuracy",))
def answer_accuracy() -> AnswerAccuracy:
    """MedThink-Bench's prediction accuracy of the final answer line.

    Metrics:
        accuracy: 1 when the option the final answer line names (by letter, "(A)", "A. text" or the
            option's text, among the options written into the question) is the gold option, else 0;
            no answer line scores 0.
    """
    return AnswerAccuracy()


PAPER_JUDGE = GenerateConfig(temperature=0.1, max_tokens=4096, seed=42)
"""MedThink-Bench's judge decoding (Methods, "Evaluation setting"): temperature 0.1, 4,096 tokens, seed 42."""
PAPER_MODEL = GenerateConfig(temperature=0.0, max_tokens=4096, seed=42)
"""MedThink-Bench's inference settings of the models under test (Methods): temperature 0, 4,096 tokens, seed 42."""
SETTINGS = ("ebmeval", "medthink-paper")
"""The named settings of ``medthink/reasoning``: ebmeval's defaults or the paper's."""


def load_medthink_reasoning() -> list[Sample]:
    """All 500 MedThink-Bench questions, in upstream ``Index`` order, expert steps in metadata."""
    samples = []
    for record in read_records(DATA, required=("index", "qa_type", "question", "answer", "scoring_points")):
        samples.append(
            Sample(
                id=str(record["index"]),
                input=record["question"],
                target=record["answer"],
                metadata={"qa_type": record["qa_type"], "scoring_points": list(record["scoring_points"])},
            )
        )
    return samples


@task("medthink/reasoning")
def medthink_reasoning(
    judges: bool = True,
    text_metrics: bool = True,
    max_tokens: int = MAX_TOKENS,
    prompts: str = "ebmeval",
    bleurt: str | None = None,
) -> Task:
    """MedThink-Bench rationales graded against the expert reasoning steps, and the answers' accuracy.

    Args:
        judges: Include the three judges (``judge/steps-with-reference``,
            ``judge/steps-with-reference-single``, ``judge/steps-without-reference``); they
            call the model in role ``judge``.
        text_metrics: Include ROUGE-L, BLEU, METEOR and BERTScore (all-MiniLM-L6-v2) of the
            rationale against the joined expert steps (needs the ``metrics`` extra).
        max_tokens: Reply budget of the reasoning call (``ebmeval`` settings).
        prompts: ``ebmeval`` (greedy judges with short replies, ``max_tokens`` for the answer) or
            ``medthink-paper`` (the paper's settings: judges at temperature 0.1 with 4,096 tokens
            and seed 42; the model under test at temperature 0 with 4,096 tokens and seed 42).
        bleurt: Directory of a BLEURT checkpoint (PyTorch layout, e.g. BLEURT-20-D12), the
            paper's fifth text metric: adds ``text/bleurt`` (value ``bleurt``) of the rationale
            against the joined expert steps, identified by the checkpoint's content. A path that
            is not such a checkpoint, or a missing ``bleurt`` extra, is refused; no other metric
            stands in for it. Independent of ``text_metrics``.
    """
    if prompts not in SETTINGS:
        raise ConfigError("prompts", f"must be one of {', '.join(SETTINGS)}; not {prompts!r}")
    bleurt_metric = None if bleurt is None else BleurtSimilarity(load_bleurt(bleurt, "bleurt"), **TEXT_SOURCE)
    paper = prompts == "medthink-paper"
    scorers: list[Scorer] = [AnswerAccuracy()]
    if text_metrics:
        require_metrics()
    if judges:
        scorers += _judges(paper)
    if text_metrics:
        scorers += [
            rouge_l(**TEXT_SOURCE),
            bleu_scorer(**TEXT_SOURCE),
            meteor_scorer(**TEXT_SOURCE),
            bertscore_scorer(**TEXT_SOURCE),
        ]
    if bleurt_metric is not None:
        scorers.append(bleurt_metric)
    workflow = ZeroShotReasoning(max_tokens)
    return Task(
        name="medthink/reasoning",
        dataset=load_medthink_reasoning(),
        workflow=workflow,
        scorers=scorers,
        parser=parse_final_answer,
        version=f"1-{ZERO_SHOT_COT.id}" + ("" if bleurt_metric is None else f"-bleurt-{bleurt_metric.identity}"),
        content_args=frozenset({"bleurt"} if bleurt is not None else ()),
        generate_config=PAPER_MODEL if paper else workflow.generate_config,
        roles=("judge",) if judges else (),
        metadata={
            "source": "plusnli/MedThink-Bench@d5cd589850d381bead2cbc92e32bb6f597e45399",
            "licence": "none stated upstream",
            "card": "docs/tasks/medthink_reasoning.md",
            "settings": prompts,
        },
    )


def _judges(paper: bool) -> list[Scorer]:
    """The three step judges, at the paper's decoding settings when ``paper``."""
    settings: dict[str, Any] = {}
    if paper:
        settings = {
            "temperature": PAPER_JUDGE.temperature,
            "max_tokens": PAPER_JUDGE.max_tokens,
            "seed": PAPER_JUDGE.seed,
        }
    return [StepsWithReference(**settings), StepsWithReferenceSingle(**settings), StepsWithoutReference(**settings)]
