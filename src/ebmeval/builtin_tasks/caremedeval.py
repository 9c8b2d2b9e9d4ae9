"""CareMedEval (Bonzi et al., 2025): multi-answer critical-appraisal questions from French LCA exams.

Data card, metric definitions and the reference-baseline table: ``docs/tasks/caremedeval.md``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from functools import cache
from typing import Any, Literal
from urllib.parse import urlparse

from .._util.errors import ConfigError
from ..prompts import DEFAULT as DEFAULT_PROMPTS
from ..prompts import prompt_sets
from ..tasks import Document, Sample, task
from ._data import read_records
from ._mcq import MCQData, mcq_factory

QUESTIONS = {"en": "caremedeval_en.jsonl.gz", "fr": "caremedeval_fr.jsonl.gz"}
ARTICLES = "caremedeval_articles.jsonl.gz"
FIELDS = ("id", "article", "question", "answers", "correct_answers", "essential_answers", "unacceptable_answers")

Language = Literal["en", "fr"]
Subset = Literal["all", "with_justifications", "requires_context"]
Context = Literal["full", "abstract", "none"]
PromptSetName = Literal["default", "paper"]


@cache
def _articles() -> dict[str, dict[str, Any]]:
    articles = {}
    for record in read_records(ARTICLES, ("id", "full", "abstract")):
        articles[record["id"]] = record
    return articles


def _upper(letters: Sequence[str]) -> list[str]:
    return sorted(letter.upper() for letter in letters)


def load_caremedeval(language: Language = "en", subset: Subset = "all", context: Context = "full") -> list[Sample]:
    """CareMedEval questions as samples, in upstream order.

    Option letters are upper-cased (``a``–``e`` become ``A``–``E``), targets are the
    sorted correct letters, and ``metadata`` keeps ``essential_answers``,
    ``unacceptable_answers``, ``labels``, ``justification``, ``article``,
    ``requires_context`` (``None`` outside the 16 annotated questions), ``date_exam``,
    ``nb_correct_answers``, ``source_exam`` (the exam's URL), ``exam`` (``ECN`` or ``CNET``)
    and, for a question whose LCA keys contradict its correct answers, ``data_issue``.

    Args:
        language: ``en`` (questions machine-translated by the authors) or ``fr`` (original).
        subset: ``all`` (534), ``with_justifications`` (204 with an expert justification)
            or ``requires_context`` (the 16 questions annotated for whether they need the article).
        context: the article as the sample's document: ``full`` text, ``abstract`` or ``none``.
            Articles are in English in both languages.
    """
    if language not in QUESTIONS:
        raise ConfigError("language", f"must be 'en' or 'fr', not {language!r}")
    if subset not in ("all", "with_justifications", "requires_context"):
        raise ConfigError("subset", f"must be all, with_justifications or requires_context, not {subset!r}")
    if context not in ("full", "abstract", "none"):
        raise ConfigError("context", f"must be full, abstract or none, not {context!r}")
    name = QUESTIONS[language]
    articles = _articles()
    samples = []
    for record in read_records(name, FIELDS):
        if subset == "with_justifications" and not record.get("with_justification"):
            continue
        if subset == "requires_context" and record.get("requires_context") is None:
            continue
        documents = []
        if context != "none":
            article = articles[record["article"]]
            documents.append(
                Document(
                    id=record["article"],
                    text=article[context],
                    metadata={"part": context, "link": record.get("article_link")},
                )
            )
        samples.append(
            Sample(
                id=record["id"],
                input=record["question"],
                target=_upper(record["correct_answers"]),
                choices={letter.upper(): text for letter, text in sorted(record["answers"].items())},
                documents=documents,
                metadata={
                    "article": record["article"],
                    "labels": record.get("labels", []),
                    "essential_answers": _upper(record["essential_answers"]),
                    "unacceptable_answers": _upper(record["unacceptable_answers"]),
                    "justification": record.get("justification", ""),
                    "requires_context": record.get("requires_context"),
                    "date_exam": record.get("date_exam"),
                    "nb_correct_answers": len(record["correct_answers"]),
                    "source_exam": record.get("source_exam"),
                    "exam": _exam(record.get("source_exam")),
                    **_issue(record),
                },
            )
        )
    return samples


def _exam(source: str | None) -> str | None:
    """``ECN`` (official national exams, cng.sante.fr) or ``CNET`` (mock exams, therap.fr) from the exam's URL."""
    if not source:
        return None
    host = urlparse(source).netloc
    return "ECN" if host.endswith("cng.sante.fr") else "CNET" if host.endswith("therap.fr") else None


def _issue(record: dict[str, Any]) -> dict[str, str]:
    """``{"data_issue": …}`` for a question whose LCA keys contradict its correct answers, else nothing.

    Upstream has one (``350275dd…``, the paper's Figure 1): essential answer B is not among its
    correct answers (C), so the correct answer scores EMR 1 and LCA 0. Summaries of a run that
    includes such a question say so (``ebmeval.runner.summarize``).
    """
    correct = set(_upper(record["correct_answers"]))
    essential = set(_upper(record["essential_answers"])) - correct
    unacceptable = set(_upper(record["unacceptable_answers"])) & correct
    found = []
    if essential:
        found.append(f"essential answer {', '.join(sorted(essential))} is not among the correct answers")
    if unacceptable:
        found.append(f"unacceptable answer {', '.join(sorted(unacceptable))} is among the correct answers")
    if not found:
        return {}
    shown = ", ".join(sorted(correct))
    return {"data_issue": f"{'; '.join(found)} ({shown}): the correct answer scores LCA 0"}


def answer_ranking(samples: Sequence[Sample]) -> str:
    """Option letters by how often they are correct in ``samples``, most frequent first (ties by letter).

    On CareMedEval (all 534): C 295, A 286, B 280, D 270, E 259, so ``"CABDE"``; the
    ``baseline/most-frequent-K`` models answer its first K letters.
    """
    counts = Counter(letter for sample in samples for letter in sample.targets)
    return "".join(sorted(counts, key=lambda letter: (-counts[letter], letter)))


@task("caremedeval")
@mcq_factory("strategy", "thinking", "system_prompt", "overflow", "unparsed", "answer_format", "prompt_set")
def caremedeval(
    language: Language = "en",
    subset: Subset = "all",
    context: Context = "full",
    prompt_set: PromptSetName = "default",
) -> MCQData:
    """CareMedEval: 534 multi-answer critical-appraisal questions over 37 articles.

    Scored by ``multi_answer`` (``exact_match``, ``f1``, ``hamming``, ``lca``). An
    article longer than the model's context window is cut by the workflow's
    ``overflow`` policy and the cut is recorded in the generation's metadata.

    Args:
        language: ``en`` or ``fr`` (questions and options; articles are in English).
        subset: ``all``, ``with_justifications`` or ``requires_context``.
        context: ``full`` article, ``abstract`` or ``none``.
        overflow: ``truncate`` (keep the head of the article, recorded) or ``error``.
        unparsed: ``zero`` grades an unparsed reply as the empty answer; ``skip`` leaves it out.
        prompt_set: ``default`` (ebmeval's English instructions) or ``paper`` (the paper's
            physician-role prompt in ``language``: prompt set ``caremedeval/fr`` or ``caremedeval/en``;
            strategies ``direct`` and ``cot``).
    """
    if prompt_set not in ("default", "paper"):
        raise ConfigError("prompt_set", f"must be 'default' or 'paper', not {prompt_set!r}")
    samples = load_caremedeval(language, subset, context)
    metadata = {
        "source": "bonzid/CareMedEval@11eccc71e516a1b7af979acc64ab55a4c2a2c8fd",
        "licence": "Apache-2.0",
        "card": "docs/tasks/caremedeval.md",
        "answer_ranking": answer_ranking(samples),
    }
    prompts = prompt_sets.get(f"caremedeval/{language}") if prompt_set == "paper" else DEFAULT_PROMPTS
    return MCQData("caremedeval", samples, metadata, multi=True, prompt_set=prompts)
