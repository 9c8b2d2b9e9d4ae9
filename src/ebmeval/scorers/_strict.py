"""The strict reading of option letters: one exact final line, ``ANSWER: X`` or ``ANSWER: A, C``.

Published numbers should not depend on how generously a reply is read. A task run with
``answer_format="strict"`` instructs this one format in its prompt (as inspect_ai and
lm-eval do) and grades only replies that follow it: after any thinking trace is removed,
the last non-empty line must be ``ANSWER:`` (any case, spaces around the colon allowed)
followed by option letters separated by commas or spaces, and at most a closing full
stop. Anything else is unparsed (``strict: no final ANSWER line``), whatever the rest of
the reply says; the lenient reading (:func:`~ebmeval.scorers.parse_choices`) is recorded
beside it by the scorers (``accuracy_lenient``, ``exact_match_lenient`` …).
"""

from __future__ import annotations

import re
from typing import Literal

from ..models import strip_reasoning
from ..tasks import ParsedAnswer

AnswerFormat = Literal["lenient", "strict"]
"""How replies are asked for and read: any answer the lenient grammar reads, or only a final ``ANSWER:`` line."""

STRICT_LINE = re.compile(
    r"ANSWER[ \t]*:[ \t]*(?P<letters>[A-Za-z](?:[ \t]*,[ \t]*[A-Za-z]|[ \t]+[A-Za-z])*)[ \t]*\.?", re.I
)
"""The one line the strict reading accepts: ``ANSWER:``, letters joined by commas or spaces, an optional full stop."""


def parse_strict(text: str, choices: dict[str, str], *, multi: bool = False) -> ParsedAnswer:
    """The letters of the reply's final ``ANSWER:`` line, or unparsed; nothing else is read."""
    lines = [line for line in strip_reasoning(text).strip().split("\n") if line.strip()]
    found = STRICT_LINE.fullmatch(lines[-1].strip()) if lines else None
    if found is None:
        return ParsedAnswer.unparsed("strict: no final ANSWER line")
    named = {letter.upper() for letter in re.findall(r"[A-Za-z]", found["letters"])}
    unknown = sorted(named - {letter.upper() for letter in choices})
    if unknown:
        return ParsedAnswer.unparsed(f"not-an-option: {','.join(unknown)}")
    letters = [letter for letter in choices if letter.upper() in named]
    if not multi and len(letters) > 1:
        return ParsedAnswer.unparsed("several-letters")
    return ParsedAnswer(value=letters if multi else letters[0], method="strict")
