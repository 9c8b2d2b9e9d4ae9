"""Reading verdicts and counts out of judge replies.

Each parser returns ``None`` when the reply does not state what was asked clearly;
the judges then retry once with a stricter instruction and, failing again, record the
score as ``None`` with the raw reply. Thinking traces (``<think>…</think>``) are removed
first. Markdown emphasis (``**``, ``__``, backticks) is ignored.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ...models._reasoning import strip_reasoning

_YES = {"yes", "true", "supported", "support", "supports", "y"}
_NO = {"no", "false", "unsupported", "not supported", "not_supported", "n"}
_WORD = r"(yes|no|true|false|not[ _]supported|unsupported|supported|supports|support)"
_LABELLED = re.compile(rf"\b(?:verdict|answer|judgement|judgment|decision|supported)\s*[:=-]\s*{_WORD}\b", re.I)
_LEADING = re.compile(rf"^\W*{_WORD}\b", re.I)
_NUMBERED = re.compile(rf"^\W*(?:step\s*)?(\d+)\s*[.):\-]*\s*(?:[^:\n]*?:\s*)?{_WORD}\b", re.I)
_REQUIRED = re.compile(r"\b(?:required|needed|necessary|total)(?:\s+steps?)?\s*[:=]\s*(\d+)", re.I)
_COVERED = re.compile(r"\b(?:covered|addressed|present|correct)(?:\s+steps?)?\s*[:=]\s*(\d+)", re.I)


def _clean(text: str) -> str:
    return re.sub(r"\*\*|__|`", "", strip_reasoning(text)).strip()


def _word(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        word = value.strip().lower().replace("_", " ")
        if word in _YES:
            return True
        if word in _NO:
            return False
    return None


def _json_object(text: str) -> Any:
    """The first JSON object or array in ``text``, or ``None``."""
    for match in re.finditer(r"[\[{]", text):
        try:
            value, _end = json.JSONDecoder().raw_decode(text[match.start() :])
        except json.JSONDecodeError:
            continue
        return value
    return None


def parse_verdict(text: str) -> bool | None:
    """A yes/no verdict: ``True`` for supported, ``False`` for not supported, ``None`` when unclear.

    Accepted, in order: a JSON object with ``supported``/``verdict``/``answer``; the last
    labelled line such as ``Verdict: YES`` (``answer``, ``judgement``, ``decision`` also
    work; ``true``/``false`` and ``supported``/``not supported`` are synonyms); a reply
    that starts with yes or no.
    """
    cleaned = _clean(text)
    found = _json_object(cleaned)
    if isinstance(found, dict):
        for key in ("supported", "verdict", "answer"):
            verdict = _word(found.get(key))
            if verdict is not None:
                return verdict
    labelled = _LABELLED.findall(cleaned)
    if labelled:
        return _word(labelled[-1])
    leading = _LEADING.match(cleaned)
    return _word(leading.group(1)) if leading else None


def parse_verdicts(text: str, n: int) -> list[bool] | None:
    """One verdict per numbered step 1..n, or ``None`` unless all n are stated.

    Accepted: a JSON array of n verdicts (booleans or yes/no words) or an object mapping
    ``"1"``..``"n"`` to them; or one line per step such as ``1: YES``, ``Step 2 - NO`` or
    ``3. supported`` (the last line for a step number wins).
    """
    cleaned = _clean(text)
    found = _json_object(cleaned)
    if isinstance(found, dict) and isinstance(found.get("verdicts"), list):
        found = found["verdicts"]
    if isinstance(found, list) and len(found) == n:
        verdicts = [_word(v) for v in found]
        if all(v is not None for v in verdicts):
            return [bool(v) for v in verdicts]
    if isinstance(found, dict):
        keyed = [_word(found.get(str(i))) for i in range(1, n + 1)]
        if all(v is not None for v in keyed):
            return [bool(v) for v in keyed]
    by_number: dict[int, bool] = {}
    for line in cleaned.splitlines():
        match = _NUMBERED.match(line)
        if match is None:
            continue
        verdict = _word(match.group(2))
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
    cleaned = _clean(text)
    found = _json_object(cleaned)
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
