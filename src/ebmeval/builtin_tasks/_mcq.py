"""The assembly shared by the built-in multiple-choice tasks."""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .._util.errors import ConfigError
from .._util.options import read_option
from ..prompts import DEFAULT as DEFAULT_PROMPTS
from ..prompts import PromptSet
from ..scorers import AnswerFormat, Unparsed, accuracy, choice_parser, multi_answer
from ..tasks import Sample, Task
from ..workflows import Overflow, Strategy, qa_workflow
from ._options import document_options

MCQ_OPTIONS = ("strategy", "thinking", "system_prompt", "answer_from", "overflow", "unparsed", "answer_format")
"""The options of :func:`mcq_task` a built-in task may offer, as :func:`mcq_task` declares them.

A task names those it offers in its :func:`mcq_factory` decorator.
"""


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


LETTERED_FIELDS = ("question", "options", "answer")
"""The fields of a shipped lettered question (:func:`lettered_sample`)."""


def lettered_sample(record: Mapping[str, Any], id_field: str, metadata: dict[str, Any]) -> Sample:
    """The single-answer sample of a shipped record's ``question``, ``options`` (letter → text) and ``answer`` letter.

    Its id is the record's ``id_field``, as text.
    """
    return Sample(
        id=str(record[id_field]),
        input=record["question"],
        target=record["answer"],
        choices=dict(record["options"]),
        metadata=metadata,
    )


def _shared_options() -> dict[str, inspect.Parameter]:
    """Each of ``MCQ_OPTIONS`` as :func:`mcq_task` declares it (type resolved), to take a factory's place."""
    types = typing.get_type_hints(mcq_task)
    declared = inspect.signature(mcq_task).parameters
    keyword = inspect.Parameter.POSITIONAL_OR_KEYWORD
    return {name: declared[name].replace(kind=keyword, annotation=types[name]) for name in MCQ_OPTIONS}


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


def mcq_factory(*options: str, **defaults: Any) -> Callable[[Callable[..., MCQData]], Callable[..., Task]]:
    """The decorator making ``build`` a task factory: its :class:`MCQData` made a task by :func:`mcq_task`.

    ``options`` names the options the task offers, in the order its signature shows them after
    ``build``'s other parameters: a shared one (``MCQ_OPTIONS``) as :func:`mcq_task`
    declares it, with the task's default from ``defaults`` where given (``strategy="cot"``); any
    other name is one of ``build``'s own parameters. That signature is what ``create_task`` checks
    and records. ``build`` is called with its own parameters, the shared options go on to
    :func:`mcq_task`, and those ``build``'s docstring does not describe get their shared ``Args:``
    entries (:func:`document_options`).
    """

    def decorate(build: Callable[..., MCQData]) -> Callable[..., Task]:
        parameters = inspect.signature(build).parameters
        signature = _factory_signature(build, parameters, options, defaults)
        own = list(parameters)
        shared = [name for name in options if name not in own]

        @functools.wraps(build)
        def factory(*args: Any, **kwargs: Any) -> Task:
            try:
                given = signature.bind(*args, **kwargs)
            except TypeError as exc:  # named as Python names the function in a call's errors
                raise TypeError(f"{build.__qualname__}() {exc}") from None
            given.apply_defaults()
            data = build(**{name: given.arguments[name] for name in own})
            return mcq_task(
                data.name,
                data.dataset,
                data_version=data.data_version,
                metadata=data.metadata,
                multi=data.multi,
                prompt_set=data.prompt_set,
                **{name: given.arguments[name] for name in shared},
            )

        # what create_task, describe and help() read: the options the factory takes, and the Task it returns
        factory.__signature__ = signature  # type: ignore[attr-defined]
        factory.__annotations__ = {name: p.annotation for name, p in signature.parameters.items()} | {"return": Task}
        return document_options(factory)

    return decorate


def _factory_signature(
    build: Callable[..., MCQData],
    own: Mapping[str, inspect.Parameter],
    options: Sequence[str],
    defaults: dict[str, Any],
) -> inspect.Signature:
    """``build``'s parameters (``own``), those in ``options`` moved after the others, the shared ones put in."""
    for name in own:
        if name in MCQ_OPTIONS:
            raise ValueError(f"{build.__qualname__}: '{name}' is a shared option; name it in @mcq_factory instead")
    for name in options:
        if name not in own and name not in MCQ_OPTIONS:
            raise ValueError(f"{build.__qualname__}: '{name}' is neither a shared option nor a parameter of its own")
    declared = _shared_options()
    for name, value in defaults.items():
        if name not in options or name in own:
            raise ValueError(f"{build.__qualname__}: '{name}' is not a shared option it offers, so it takes no default")
        try:
            read_option(declared[name].annotation, value, name)
        except ConfigError as exc:
            raise ValueError(f"{build.__qualname__}: a bad default ({exc})") from None

    def shared(name: str) -> inspect.Parameter:
        return declared[name].replace(default=defaults[name]) if name in defaults else declared[name]

    first = [parameter for name, parameter in own.items() if name not in options]
    rest = [own[name] if name in own else shared(name) for name in options]
    return inspect.Signature([*first, *rest], return_annotation="Task")
