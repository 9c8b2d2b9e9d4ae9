"""The assembly shared by the built-in multiple-choice tasks."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, ParamSpec

from .._util.errors import ConfigError
from ..prompts import DEFAULT as DEFAULT_PROMPTS
from ..prompts import PromptSet
from ..scorers import AnswerFormat, Unparsed, accuracy, choice_parser, multi_answer
from ..tasks import Sample, Task
from ..workflows import Overflow, Strategy, qa_workflow
from ._options import document_options

MCQ_OPTIONS = ("strategy", "thinking", "system_prompt", "answer_from", "overflow", "unparsed", "answer_format")
"""The options of :func:`mcq_task` that a built-in task passes on as it takes them (see :func:`mcq_factory`)."""

Options = ParamSpec("Options")


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


@dataclass(frozen=True)
class MCQData:
    """What a built-in multiple-choice task is built from, besides the options in ``MCQ_OPTIONS``."""

    name: str
    dataset: Sequence[Sample]
    metadata: dict[str, Any]
    """The data card: ``source``, ``licence``, ``card`` and what else describes the task."""
    data_version: str = "1"
    multi: bool = False
    prompt_set: PromptSet = DEFAULT_PROMPTS


def mcq_factory(build: Callable[Options, MCQData]) -> Callable[Options, Task]:
    """The task factory of ``build``: its :class:`MCQData` and the ``MCQ_OPTIONS`` it takes, through :func:`mcq_task`.

    ``build`` declares each shared option it offers as a keyword parameter, with the task's
    default (the factory's signature is what ``create_task`` checks and records), and returns
    the task's data; the factory passes the options' values on to :func:`mcq_task`, and the
    options ``build`` does not describe get their shared ``Args:`` entries (:func:`document_options`).
    """
    signature = inspect.signature(build)
    options = [name for name in signature.parameters if name in MCQ_OPTIONS]

    @functools.wraps(build)
    def factory(*args: Options.args, **kwargs: Options.kwargs) -> Task:
        data = build(*args, **kwargs)
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return mcq_task(
            data.name,
            data.dataset,
            data_version=data.data_version,
            metadata=data.metadata,
            multi=data.multi,
            prompt_set=data.prompt_set,
            **{name: bound.arguments[name] for name in options},
        )

    # what help() shows: build's parameters, and the Task the factory returns
    factory.__signature__ = signature.replace(return_annotation="Task")  # type: ignore[attr-defined]
    return document_options(factory)
