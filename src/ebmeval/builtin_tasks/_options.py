"""The options several built-in tasks take, each described once for the ``Args:`` of every factory that takes it.

Most are declared once too (:data:`OPTION_PARAMETERS`), for the factories that build their
signature from them (:func:`~ebmeval.builtin_tasks._mcq.mcq_factory`).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any, Literal, TypeVar

from ..scorers import AnswerFormat, Unparsed
from ..workflows import Overflow, Strategy

OPTION_DOCS = {
    "strategy": "prompting strategy: ``direct``, ``cot`` or ``cot-refine``.",
    "thinking": "thinking switch of hybrid reasoning models (``None`` leaves the prompt as is).",
    "system_prompt": "role prompt sent as the system message.",
    "answer_from": "``text`` (parse the reply) or ``logprobs`` (most probable letter; ``direct`` only).",
    "overflow": "``truncate`` (keep the head of the documents, recorded) or ``error``.",
    "unparsed": "``zero`` counts an unparsed reply as wrong; ``skip`` leaves it out of the mean.",
    "answer_format": "``lenient`` (any answer the grammar reads) or ``strict`` (only a final\n"
    "``ANSWER: X`` line, as the prompt then asks; the lenient reading is scored beside it).",
    "max_tokens": "answer length budget.",
}
"""Option name → its description (a newline where the line breaks) in the ``Args:`` of each factory taking it."""


def _option(name: str, annotation: Any, default: Any) -> inspect.Parameter:
    return inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=annotation, default=default)


OPTION_PARAMETERS = {
    parameter.name: parameter
    for parameter in (
        _option("strategy", Strategy, "direct"),
        _option("thinking", bool | None, None),
        _option("system_prompt", str | None, None),
        _option("answer_from", Literal["text", "logprobs"], "text"),
        _option("overflow", Overflow, "truncate"),
        _option("unparsed", Unparsed, "zero"),
        _option("answer_format", AnswerFormat, "lenient"),
    )
}
"""Option name → its declaration (type and default), for the options of ``OPTION_DOCS`` declared once.

``max_tokens`` is left out: its default is each task's own budget.
"""

Factory = TypeVar("Factory", bound=Callable[..., Any])

_ENTRY = re.compile(r"^    (\w+):", re.MULTILINE)


def document_options(factory: Factory) -> Factory:
    """``factory`` with the ``OPTION_DOCS`` entry of each option it takes and does not describe itself.

    The docstring's ``Args:`` section (added when missing; it must be the last section) then
    describes the options in the order of the factory's parameters, as ``ebmeval describe`` and
    ``help()`` show them.
    """
    head, _, section = inspect.cleandoc(factory.__doc__ or "").partition("\nArgs:\n")
    if re.search(r"^\S", section, re.MULTILINE):
        raise ValueError(f"{factory.__qualname__}: 'Args:' must be the last section of its docstring")
    found = list(_ENTRY.finditer(section))
    ends = [match.start() for match in found[1:]] + [len(section)]
    own = {match[1]: section[match.start() : end].rstrip() for match, end in zip(found, ends, strict=False)}
    names = [name for name in inspect.signature(factory).parameters if name in own or name in OPTION_DOCS]
    entries = [own.pop(name) if name in own else _entry(name) for name in names]
    if entries:
        factory.__doc__ = "\n".join([f"{head.rstrip()}\n\nArgs:", *entries, *own.values()])
    return factory


def _entry(name: str) -> str:
    """The ``Args:`` entry of the shared option ``name``, its continuation lines indented."""
    return f"    {name}: {OPTION_DOCS[name]}".replace("\n", "\n        ")
