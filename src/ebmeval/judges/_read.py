"""Reading judge replies: one verdict vocabulary and one JSON-in-text reader for every judge.

Thinking traces are removed and Markdown emphasis (``**``, ``__``, backticks) is ignored
before anything is read.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..models import strip_reasoning

YES_WORDS = frozenset({"yes", "y", "true", "1", "supported", "support", "supports", "correct", "same", "relevant"})
"""Words a judge uses to say yes (case-insensitive, ``_`` read as a space)."""
NO_WORDS = frozenset(
    {"no", "n", "false", "0", "not supported", "unsupported", "incorrect", "different", "not relevant", "irrelevant"}
)
"""Words a judge uses to say no."""

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S | re.I)


def clean(text: str) -> str:
    """``text`` without thinking traces and Markdown emphasis, stripped."""
    return re.sub(r"\*\*|__|`(?!``)", "", strip_reasoning(text)).strip()


def read_verdict(value: Any) -> bool | None:
    """``True`` for a yes word (or ``true``), ``False`` for a no word, ``None`` for anything else.

    A string is read whole once lower-cased, with ``_`` as a space and surrounding
    punctuation dropped (``"Supported."`` is yes, ``"not_supported"`` no).
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = " ".join(value.strip().strip(".,:;!\"'`*()[]").lower().replace("_", " ").split())
        if word in YES_WORDS:
            return True
        if word in NO_WORDS:
            return False
    return None


def leading_verdict(text: str) -> bool | None:
    """The verdict stated by the first words of ``text`` ("not supported, since …" is no), else ``None``.

    The first two words are read as one phrase, then the first word alone, each with
    :func:`read_verdict`.
    """
    words = re.findall(r"[\w']+", clean(text).lower())
    for size in (2, 1):
        if len(words) >= size:
            verdict = read_verdict(" ".join(words[:size]))
            if verdict is not None:
                return verdict
    return None


def json_in_text(text: str) -> Any:
    """The first JSON object or array in ``text`` (also inside a ```json fence), or ``None``.

    Nested objects are read whole (``raw_decode`` from each ``{`` or ``[`` in turn).
    """
    for fenced in _FENCE.findall(text):
        found = _first_json(fenced)
        if found is not None:
            return found
    return _first_json(text)


def _first_json(text: str) -> Any:
    decoder = json.JSONDecoder()
    for match in re.finditer(r"[\[{]", text):
        try:
            value, _end = decoder.raw_decode(text[match.start() :])
        except json.JSONDecodeError:
            continue
        return value
    return None
