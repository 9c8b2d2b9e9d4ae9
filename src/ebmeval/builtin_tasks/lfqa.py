"""Long-form consumer-health question answering: free-text answers to compare in an arena.

* ``lfqa/liveqa``: the 104 TREC 2017 LiveQA Medical test questions (167 reference answers).
* ``lfqa/medicationqa``: 651 consumer medication questions (MedInfo 2019), each with its answers.
* ``lfqa/healthsearchqa``: 3,156 consumer search questions (Med-PaLM), no reference answers.

The workflow sends the question (optionally after a system prompt) and keeps the reply as the
answer. These tasks have no built-in scorer: answers are compared pairwise by
:func:`ebmeval.arena.run_arena`. Where references exist, ``sample.target`` is the first reference
answer and ``metadata["references"]`` holds all of them, so ``ebmeval rescore RUN --scorer
text/rouge-l`` also works. Data card: ``docs/tasks/lfqa.md``; data built by
``scripts/build_lfqa_data.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from .._util.errors import ConfigError
from ..prompts import add_template
from ..tasks import Sample, Task, task
from ..workflows import FreeFormWorkflow, Strategy
from ._data import read_records
from ._options import document_options

LIVEQA = "lfqa_liveqa.jsonl.gz"
MEDICATIONQA = "lfqa_medicationqa.jsonl.gz"
HEALTHSEARCHQA = "lfqa_healthsearchqa.jsonl.gz"

PROMPT = add_template(
    "lfqa/answer",
    1,
    "Answer this question from a member of the public about their health.\n\nQuestion: {question}",
    "lfqa/*: the long-form question to a member of the public.",
)

LiveQAQuestion = Literal["original", "paraphrase", "summary"]


class LongFormAnswer(FreeFormWorkflow):
    """The question answered in free text by any strategy (:class:`~ebmeval.workflows.FreeFormWorkflow`).

    Args:
        system_prompt: Sent as the system message when given.
        strategy: ``direct``, ``cot`` or ``cot-refine``.
        max_tokens: Answer length budget (the reasoning strategies add room for the reasoning).
    """

    task_templates = (PROMPT,)

    def __init__(self, system_prompt: str | None = None, strategy: Strategy = "direct", max_tokens: int = 512) -> None:
        super().__init__("answer", strategy, system_prompt=system_prompt, max_tokens=max_tokens)

    def prompt_shaping(self) -> list[Any]:
        """The prompt's version and wording."""
        return [PROMPT.version, PROMPT.text]

    def task_prompt(self, sample: Sample) -> str:
        """The question in the long-form prompt."""
        return PROMPT.render(question=sample.input)


def load_liveqa(question: LiveQAQuestion = "original") -> list[Sample]:
    """LiveQA Medical test questions.

    Args:
        question: ``original`` (the consumer's subject and message, as sent), ``paraphrase``
            (NIST's rewording) or ``summary`` (NLM's summary).
    """
    if question not in ("original", "paraphrase", "summary"):
        raise ConfigError("question", f"must be original, paraphrase or summary, not {question!r}")
    samples = []
    for record in read_records(LIVEQA, ("id", "subject", "message", "paraphrase", "summary", "answers")):
        if question == "original":
            text = f"{record['subject']}\n{record['message']}" if record["subject"] else record["message"]
        else:
            text = record[question]
        references = [a["text"] for a in record["answers"]]
        samples.append(
            Sample(
                id=record["id"],
                input=text,
                target=references[0] if references else "",
                metadata={
                    "references": references,
                    "focus": record.get("focus", []),
                    "type": record.get("types", []),
                    "paraphrase": record["paraphrase"],
                },
            )
        )
    return samples


def load_medicationqa() -> list[Sample]:
    """MedicationQA questions; a question asked in several upstream rows has all their answers."""
    samples = []
    for record in read_records(MEDICATIONQA, ("id", "question", "answers")):
        references = [a["text"] for a in record["answers"]]
        samples.append(
            Sample(
                id=record["id"],
                input=record["question"],
                target=references[0] if references else "",
                metadata={"references": references, "focus": record.get("focus"), "type": record.get("type")},
            )
        )
    return samples


def load_healthsearchqa() -> list[Sample]:
    """HealthSearchQA questions (no reference answers)."""
    samples = []
    for record in read_records(HEALTHSEARCHQA, ("id", "question")):
        samples.append(Sample(id=record["id"], input=record["question"]))
    return samples


def _task(name: str, samples: list[Sample], workflow: LongFormAnswer, source: str) -> Task:
    return Task(
        name=name,
        dataset=samples,
        workflow=workflow,
        scorers=[],
        version=f"1-{workflow.version}",
        generate_config=workflow.generate_config,
        reasoning_generate_config=workflow.reasoning_config,
        metadata={"card": "docs/tasks/lfqa.md", "source": source},
        next_step=f"{RESCORE}, or {ARENA}" if any(s.target for s in samples) else ARENA,
    )


ARENA = "ebmeval arena {run} RUN_B --role judge=local, RUN_B another model's run of {task}"
"""The next step of a long-form run: the pairwise arena (MRAG's evaluation)."""
RESCORE = "ebmeval rescore {run} --scorer judge/reference-0-5 --role judge=local"
"""The next step of a long-form run with reference answers: a judge scoring each answer against them."""


@task("lfqa/liveqa")
@document_options
def liveqa(  # noqa: D417 (document_options writes the shared options' entries)
    question: LiveQAQuestion = "original",
    system_prompt: str | None = None,
    strategy: Strategy = "direct",
    max_tokens: int = 512,
) -> Task:
    """Free-text answers to the TREC 2017 LiveQA Medical test questions.

    Args:
        question: ``original``, ``paraphrase`` or ``summary`` form of the question.
    """
    return _task(
        "lfqa/liveqa",
        load_liveqa(question),
        LongFormAnswer(system_prompt, strategy, max_tokens),
        "abachaa/LiveQA_MedicalTask_TREC2017@3f5a42ccbaa0b8ff1c665a6dc23785740ab0f09f",
    )


QUESTION_SETS: dict[str, tuple[Callable[[], list[Sample]], str, str]] = {
    "medicationqa": (
        load_medicationqa,
        "abachaa/Medication_QA_MedInfo2019@8756adc5f4bb99f6bcff690a13921337d9f9bb7e",
        "Free-text answers to MedicationQA consumer medication questions.",
    ),
    "healthsearchqa": (
        load_healthsearchqa,
        "shr7q/MedQA@d51134c9ea8d2426146b46779657d8ba1841f0cf data/corpus.json (copy of Med-PaLM's HealthSearchQA)",
        "Free-text answers to HealthSearchQA consumer search questions (no references).",
    ),
}
"""Task suffix → (loader, source, description) of the long-form tasks whose only options are the answer's."""


def _factory(name: str) -> Callable[..., Task]:
    load, source, description = QUESTION_SETS[name]

    def answers(system_prompt: str | None = None, strategy: Strategy = "direct", max_tokens: int = 512) -> Task:
        return _task(f"lfqa/{name}", load(), LongFormAnswer(system_prompt, strategy, max_tokens), source)

    answers.__doc__ = description
    answers.__name__ = answers.__qualname__ = name
    return document_options(answers)


medicationqa = task("lfqa/medicationqa")(_factory("medicationqa"))
healthsearchqa = task("lfqa/healthsearchqa")(_factory("healthsearchqa"))
