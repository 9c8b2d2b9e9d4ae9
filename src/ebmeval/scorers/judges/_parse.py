"""Reading verdicts and counts out of judge replies.

Each parser returns ``None`` when the reply does not state what was asked clearly;
the judges then retry once with a stricter instruction and, failing again, record the
score as ``None`` with the raw reply. Thinking traces (``<think>…</think>``) are removed
first. Markdown emphasis (``**``, ``__``, backticks) is ignored.
"""

from __future__ import annotations

import re

from ...judges import clean, json_in_text, read_verdict

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
