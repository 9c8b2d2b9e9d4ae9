"""The assembly shared by the built-in multiple-choice tasks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from ..scorers import Unparsed, accuracy, choice_parser, multi_answer
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
) -> Task:
    """A multiple-choice task: a :func:`~ebmeval.workflows.qa_workflow`, the letter parser and its scorer.

    Single-answer tasks are scored by ``accuracy``, multi-answer ones by ``multi_answer``.
    The task version joins ``data_version`` and the workflow's prompt version.
    """
    workflow = qa_workflow(
        strategy,
        multi_answer=multi,
        system_prompt=system_prompt,
        thinking=thinking,
        overflow=overflow,
        answer_from=answer_from,
    )
    scorer = multi_answer(unparsed) if multi else accuracy(unparsed)
    return Task(
        name=name,
        dataset=list(dataset),
        workflow=workflow,
        scorers=[scorer],
        parser=choice_parser(multi=multi),
        version=f"{data_version}.{workflow.version}",
        generate_config=workflow.generate_config,
        metadata={**metadata, "size": len(dataset), "prompts": [t.id for t in workflow.templates]},
    )
