"""The assembly shared by the built-in multiple-choice tasks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from .._util.errors import ConfigError
from ..prompts import DEFAULT as DEFAULT_PROMPTS
from ..prompts import PromptSet
from ..scorers import AnswerFormat, Unparsed, accuracy, choice_parser, multi_answer
from ..tasks import Sample, Task
from ..workflows import Overflow, Strategy, qa_workflow


def mcq_task(
    name: str,
    dataset: Sequence[Sample],
    *,
    data_version: str,
    metadata: dict[str, Any],
    strategy: Strategy = "direct",
    multi: bool = False,
    thinking: bool | None = None,
    system_prompt: str | None = None,
    answer_from: Literal["text", "logprobs"] = "text",
    overflow: Overflow = "truncate",
    unparsed: Unparsed = "zero",
    answer_format: AnswerFormat = "lenient",
    prompt_set: PromptSet = DEFAULT_PROMPTS,
) -> Task:
    """A multiple-choice task: a :func:`~ebmeval.workflows.qa_workflow`, the letter parser and its scorer.

    Single-answer tasks are scored by ``accuracy``, multi-answer ones by ``multi_answer``.
    The task version joins ``data_version`` and the workflow's prompt version.

    ``answer_format="strict"`` asks for a final ``ANSWER: X`` line and grades only that
    line (``docs/answer-extraction.md``, "Strict reading"); the scorer records the lenient
    reading of the same replies beside it (``accuracy_lenient``, ``exact_match_lenient`` …).

    Retrieval (``retrieval``, ``k``, ``query``) is an option of every task, applied by
    :func:`ebmeval.workflows.with_retrieval`. ``prompt_set`` words every instruction
    (``ebmeval.prompts.PromptSet``).
    """
    if answer_format not in ("lenient", "strict"):
        raise ConfigError("answer_format", f"must be 'lenient' or 'strict', not {answer_format!r}")
    strict = answer_format == "strict"
    workflow = qa_workflow(
        strategy,
        multi_answer=multi,
        system_prompt=system_prompt,
        thinking=thinking,
        overflow=overflow,
        answer_from=answer_from,
        strict=strict,
        prompt_set=prompt_set,
    )
    scorer = multi_answer(unparsed, also_lenient=strict) if multi else accuracy(unparsed, also_lenient=strict)
    return Task(
        name=name,
        dataset=list(dataset),
        workflow=workflow,
        scorers=[scorer],
        parser=choice_parser(multi=multi, answer_format=answer_format),
        version=f"{data_version}.{workflow.version}",
        generate_config=workflow.generate_config,
        reasoning_generate_config=workflow.reasoning_config,
        metadata={**metadata, "size": len(dataset), "prompts": [t.id for t in workflow.templates]},
    )
