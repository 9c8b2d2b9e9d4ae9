"""Reading judge replies: one verdict vocabulary, one JSON-in-text reader, and readers built on them.

The readers of verdict lines, step counts and ``<label>: N`` scores use both.

Thinking traces are removed and Markdown emphasis (``**``, ``__``, backticks) is ignored
before anything is read. A reader returns ``None`` when the reply does not state clearly what
was asked; the judges then retry once with a stricter instruction and, failing again, record
the value as ``None`` with the raw reply.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from typing import Any

from ..models import strip_reasoning

YES_WORDS = frozenset({"yes", "y", "true", "1", "supported", "support", "supports", "correct", "same", "relevant"})
"""Words a judge uses to say yes (case-insensitive, ``_`` read as a space)."""
NO_WORDS = frozenset(
    {"no", "n", "false", "0", "not supported", "unsupported", "incorrect", "different", "not relevant", "irrelevant"}
)
"""Words a judge uses to say no."""

_DECODER = json.JSONDecoder(strict=False)
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

    Read by :func:`json_values`: nested objects whole, a Python literal (``{'a': True}``) too.
    """
    for fenced in _FENCE.findall(text):
        found = _first_json(fenced)
        if found is not None:
            return found
    return _first_json(text)


def _first_json(text: str) -> Any:
    return next((value for _, _, value in json_values(text) if isinstance(value, dict | list)), None)


def json_values(text: str, openers: str = "{[") -> Iterator[tuple[int, int, Any]]:
    """``(start, end, value)`` of each top-level JSON value of ``text`` that opens with one of ``openers``.

    Each ``{`` or ``[`` in turn is decoded with ``raw_decode`` (control characters allowed in
    strings); where that fails, the text up to its matching bracket is read as JSON or as a Python
    literal (:func:`json_literal`). A value read whole is skipped over, so nested ones are not listed.
    """
    pos = 0
    opener = re.compile(f"[{re.escape(openers)}]")
    while (match := opener.search(text, pos)) is not None:
        start = match.start()
        try:
            value, end = _DECODER.raw_decode(text, start)
        except json.JSONDecodeError:
            end = _matching_bracket(text, start)
            value = json_literal(text[start:end]) if end else None
            if value is None:
                pos = start + 1
                continue
        yield start, end, value
        pos = end


def json_literal(text: str) -> Any:
    """``text`` read whole as JSON, else as a Python literal; ``None`` when it is neither."""
    try:
        return _DECODER.decode(text)
    except json.JSONDecodeError:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return None


def _matching_bracket(text: str, start: int) -> int:
    """The end of the bracket opened at ``start`` (brackets of the same kind counted), or 0."""
    opening = text[start]
    closing = "}" if opening == "{" else "]"
    depth = 0
    for index in range(start, len(text)):
        if text[index] == opening:
            depth += 1
        elif text[index] == closing:
            depth -= 1
            if depth == 0:
                return index + 1
    return 0


# the verdict words a reply may state in a sentence (read with ``read_verdict``); single letters
# and digits are left out: "1. The rationale …" is no verdict
_WORD = (
    r"(yes|no|true|false|not[ _]supported|unsupported|supported|supports|support"
    r"|incorrect|correct|not[ _]relevant|irrelevant|relevant|same|different)"
)
_LABELLED = re.compile(rf"\b(?:verdict|answer|judgement|judgment|decision|supported)\s*[:=-]\s*{_WORD}\b", re.I)
_LEADING = re.compile(rf"^\W*{_WORD}\b", re.I)
_NUMBERED = re.compile(rf"^\W*(?:step\s*)?(\d+)\s*[.):\-]*\s*(?:[^:\n]*?:\s*)?{_WORD}\b", re.I)
_REQUIRED = re.compile(r"\b(?:required|needed|necessary|total)(?:\s+steps?)?\s*[:=]\s*(\d+)", re.I)
_COVERED = re.compile(r"\b(?:covered|addressed|present|correct)(?:\s+steps?)?\s*[:=]\s*(\d+)", re.I)


def parse_verdict(text: str) -> bool | None:
    """A yes/no verdict: ``True`` for supported, ``False`` for not supported, ``None`` when unclear.

    Accepted, in order: a JSON object with ``supported``/``verdict``/``answer``; the last
    labelled line such as ``Verdict: YES`` (``answer``, ``judgement``, ``decision`` also
    work; ``true``/``false`` and ``supported``/``not supported`` are synonyms); a reply
    that starts with yes or no.
    """
    cleaned = clean(text)
    found = json_in_text(cleaned)
    if isinstance(found, dict):
        for key in ("supported", "verdict", "answer"):
            verdict = read_verdict(found.get(key))
            if verdict is not None:
                return verdict
    labelled = _LABELLED.findall(cleaned)
    if labelled:
        return read_verdict(labelled[-1])
    leading = _LEADING.match(cleaned)
    return read_verdict(leading.group(1)) if leading else None


def parse_verdicts(text: str, n: int) -> list[bool] | None:
    """One verdict per numbered step 1..n, or ``None`` unless all n are stated.

    Accepted: a JSON array of n verdicts (booleans or yes/no words) or an object mapping
    ``"1"``..``"n"`` to them; or one line per step such as ``1: YES``, ``Step 2 - NO`` or
    ``3. supported`` (the last line for a step number wins).
    """
    cleaned = clean(text)
    found = json_in_text(cleaned)
    if isinstance(found, dict) and isinstance(found.get("verdicts"), list):
        found = found["verdicts"]
    if isinstance(found, list) and len(found) == n:
        verdicts = [read_verdict(v) for v in found]
        if all(v is not None for v in verdicts):
            return [bool(v) for v in verdicts]
    if isinstance(found, dict):
        keyed = [read_verdict(found.get(str(i))) for i in range(1, n + 1)]
        if all(v is not None for v in keyed):
            return [bool(v) for v in keyed]
    by_number: dict[int, bool] = {}
    for line in cleaned.splitlines():
        match = _NUMBERED.match(line)
        if match is None:
            continue
        verdict = read_verdict(match.group(2))
        number = int(match.group(1))
        if verdict is not None and 1 <= number <= n:
            by_number[number] = verdict
    if len(by_number) != n:
        return None
    return [by_number[i] for i in range(1, n + 1)]


def parse_counts(text: str) -> tuple[int, int] | None:
    """``(required, covered)`` step counts, or ``None`` when absent or inconsistent.

    Accepted: a JSON object with integer ``required`` and ``covered``; or labelled lines
    ``Required steps: N`` and ``Covered steps: M`` (the last of each wins). Valid only
    when ``required >= 1`` and ``0 <= covered <= required``.
    """
    cleaned = clean(text)
    found = json_in_text(cleaned)
    required: int | None = None
    covered: int | None = None
    if isinstance(found, dict) and isinstance(found.get("required"), int) and isinstance(found.get("covered"), int):
        required, covered = found["required"], found["covered"]
    else:
        needed = _REQUIRED.findall(cleaned)
        done = _COVERED.findall(cleaned)
        if needed and done:
            required, covered = int(needed[-1]), int(done[-1])
    if required is None or covered is None or required < 1 or not 0 <= covered <= required:
        return None
    return required, covered


_SCORE = r"(?im)^\W*(?:\d+[.)]\W*)?{label}\W*[:=]\W*([0-5](?:\.\d+)?)(?:\s*/\s*5)?"


def parse_score(text: str, label: str) -> float | None:
    """The 0–5 value of the last ``<label>: N`` line of ``text`` (``**Score:** 4``, ``2. Score: 4/5`` …)."""
    found = re.findall(_SCORE.format(label=re.escape(label)), text)
    return float(found[-1]) if found else None


def parse_field(text: str, label: str) -> str:
    """The text after ``<label>:`` up to the end of the reply (empty when absent)."""
    match = re.search(rf"(?is){re.escape(label)}\W*:\s*(.+)", text)
    return match.group(1).strip() if match else ""
