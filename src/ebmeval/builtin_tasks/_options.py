"""The options several built-in tasks take, each described once for the ``Args:`` of every factory that takes it.

The multiple-choice ones are declared once too, by :func:`~ebmeval.builtin_tasks._mcq.mcq_task`'s
signature, from which :func:`~ebmeval.builtin_tasks._mcq.mcq_factory` builds each factory's.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any, TypeVar

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
