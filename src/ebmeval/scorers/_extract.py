r"""Reading option letters out of free-text, JSON and reasoning-model output.

:func:`parse_choices` tries, in order, and takes the first that yields an answer:

1. ``json``: a reply that is a JSON array of letters, or the last JSON object with an
   ``answer``-like key (``answer``, ``answers``, ``final_answer``, ``choice(s)``,
   ``correct_answers``, ``letters``, ``réponse(s)``).
2. ``boxed``: the last ``\boxed{…}``.
3. ``answer-line``: the last answer statement that reads as letters or option text:
   "Answer: B", "The correct answers are (b) and (e)", "Réponse : A, C",
   "Option C is correct" (the rest of its line, or the next line when it is empty).
4. ``whole``, ``last-line``, ``first-line``: the whole reply, its last line, then its
   first line, when that text *is* an answer ("B, E", "(b) and (e)", "B. randomized").

Each candidate text is read first as a letter list (letters from the option set,
case-insensitive, in brackets or not, separated by commas, semicolons, slashes,
"and"/"et" or spaces; what follows an unbracketed letter must be punctuation,
"is/are correct" or "because …", so "A patient…" is not read as A), then as option text echoed
(the text equals an option's text; for one answer, or starts with it).
Reasoning traces (``<think>…</think>``) are removed first; a trace that never closes
leaves no answer. A single-answer reply naming several letters is unparsed, and so is
a letter followed by the text of another option ("B. yes" when A is "yes").
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

from ..tasks import AnswerParser, ParsedAnswer, Sample

_THINK = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.S | re.I)
_THINK_CLOSE = re.compile(r"</(?:think|thinking|reasoning)>", re.I)
_THINK_OPEN = re.compile(r"<(?:think|thinking|reasoning)>", re.I)
_MARKUP = re.compile(r"\*\*|__|`+|^#+\s*", re.M)
_BOXED = re.compile(r"\\boxed\{([^{}]*)\}")
_JSON_OBJECT = re.compile(r"\{[^{}]*\}", re.S)
_JSON_KEYS = (
    "answer",
    "answers",
    "final_answer",
    "choice",
    "choices",
    "correct_answers",
    "correct_answer",
    "letters",
    "réponse",
    "réponses",
    "reponse",
    "reponses",
)
_VERB = r"(?:\s+(?:is|are|would\s+be|will\s+be|est|sont|serait|seraient))?\s*(?:[:：=])?[ \t]*"
_STATEMENT = re.compile(
    # "Answer:", "The final answer is", "Correct answers are", "Réponses correctes :"
    r"(?:\b(?:final|correct|right|best|bonnes?)\s+)?\b(?:answers?|réponses?|reponses?)"
    rf"(?:\s+(?:correctes?|justes?))?{_VERB}"
    # "The correct options are", but not a bare "Options:" header echoed from the prompt
    rf"|\b(?:correct|right|best|bonnes?)\s+(?:options?|choices?){_VERB}"
    # "Option C is correct"
    r"|\b(?:options?|choices?)\s+(?=[(\[]?[A-Za-z][)\]]?\s+(?:is|are)\s+(?:the\s+)?(?:correct|right|best|answer))",
    re.I,
)
_SEPARATOR = r"\s*(?:,|;|/|&|\+|\band\b|\bet\b)?\s*"
_TAIL_WORDS = re.compile(
    r"\s*(?:(?:is|are|est|sont)\s+(?:the\s+|la\s+|les\s+)?"
    r"(?:correct|right|best|true|answer|correctes?|justes?|vraies?|exactes?|bonnes?)"
    r"|because|since|as|given|car|parce|puisque)\b",
    re.I,
)
_TAIL_PUNCTUATION = ".,;:)-–—!?\"'»("
_LEADING = re.compile(r"^[\s*\->:\"'«]*(?:(?:options?|choices?|letters?|lettres?)\s*[:：]?\s*)?", re.I)


def strip_reasoning(text: str) -> str:
    """``text`` without thinking traces.

    Removes ``<think>…</think>`` (also ``thinking``/``reasoning`` tags) blocks, any
    text before a lone closing tag (templates that open the trace in the prompt), and
    everything from an opening tag that is never closed (a trace cut off by the
    token limit, which holds no final answer).
    """
    text = _THINK.sub("", text)
    if closing := _THINK_CLOSE.search(text):
        text = text[closing.end() :]
    if opening := _THINK_OPEN.search(text):
        text = text[: opening.start()]
    return text


def parse_choices(text: str, choices: dict[str, str], *, multi: bool = False) -> ParsedAnswer:
    """The option letter(s) in ``text``, by the rules of this module.

    Returns ``ParsedAnswer(value=letter)`` for one answer, ``ParsedAnswer(value=[letters])``
    in option order when ``multi``, or ``ParsedAnswer.unparsed(reason)``.
    """
    if not choices:
        return ParsedAnswer.unparsed("no-options")
    cleaned = _MARKUP.sub("", strip_reasoning(text)).strip()
    if not cleaned:
        return ParsedAnswer.unparsed("thinking-unfinished" if _THINK_OPEN.search(text) else "empty")
    reader = _Reader(choices, multi)
    for method, segment in _candidates(cleaned):
        try:
            letters = reader.read(segment)
        except _Conflict:
            return ParsedAnswer.unparsed("letter-text-conflict")
        if letters is None:
            continue
        if not multi and len(letters) > 1:
            return ParsedAnswer.unparsed("several-letters")
        ordered = [letter for letter in choices if letter in letters]
        return ParsedAnswer(value=ordered if multi else ordered[0], method=method)
    return ParsedAnswer.unparsed("no-answer-found")


def choice_parser(*, multi: bool = False) -> AnswerParser:
    """A task parser reading option letters with :func:`parse_choices` from ``sample.choices``."""

    def parse(output: str, sample: Sample) -> ParsedAnswer:
        return parse_choices(output, sample.choices or {}, multi=multi)

    return parse


def _candidates(text: str) -> Iterator[tuple[str, str | list[str]]]:
    if text.startswith("["):
        array = _json_answer(f'{{"answer": {text}}}')
        if array is not None:
            yield "json", array
    for obj in reversed(_JSON_OBJECT.findall(text)):
        value = _json_answer(obj)
        if value is not None:
            yield "json", value
    for boxed in reversed(_BOXED.findall(text)):
        yield "boxed", boxed
    for statement in reversed(list(_STATEMENT.finditer(text))):
        rest = text[statement.end() :]
        line, _, after = rest.partition("\n")
        if not line.strip(" \t:.-"):
            line = after.strip().partition("\n")[0]
        yield "answer-line", line
    lines = [line for line in text.splitlines() if line.strip()]
    yield "whole", text
    if len(lines) > 1:
        yield "last-line", lines[-1]
        yield "first-line", lines[0]


def _json_answer(raw: str) -> str | list[str] | None:
    try:
        obj = json.loads(raw)
    except json.JSONDecodeError:
        return None
    if not isinstance(obj, dict):
        return None
    keys = {str(key).lower(): value for key, value in obj.items()}
    for key in _JSON_KEYS:
        value = keys.get(key)
        if isinstance(value, str):
            return value
        if isinstance(value, list) and all(isinstance(item, str) for item in value):
            return [str(item) for item in value]
    return None


class _Conflict(Exception):
    """A letter followed by the text of another option ("B. yes" when A is yes)."""


class _Reader:
    """Reads one candidate text as letters of one option set."""

    def __init__(self, choices: dict[str, str], multi: bool) -> None:
        self.by_upper = {letter.upper(): letter for letter in choices}
        self.multi = multi
        self.texts = {_normalize(text): letter for letter, text in choices.items() if _normalize(text)}
        letter = r"[\(\[]?(?<![\w])([A-Za-z])(?![\w])[\)\]]?"
        self.letter = re.compile(letter)
        self.letter_list = re.compile(rf"{letter}(?:{_SEPARATOR}{letter})*")

    def read(self, segment: str | list[str]) -> set[str] | None:
        if isinstance(segment, list):
            found: set[str] = set()
            for item in segment:
                letters = self.read(item)
                if letters is None:
                    return None
                found |= letters
            return found or None
        return self.read_letters(segment) or self.read_text(segment)

    def read_letters(self, segment: str) -> set[str] | None:
        start = _LEADING.match(segment)
        rest = segment[start.end() if start else 0 :]
        match = self.letter_list.match(rest)
        if match is None:
            return None
        # "B) no", "(b) randomized": a bracketed letter may be followed by its option text
        if not match.group(0).endswith((")", "]")) and not _acceptable_tail(rest[match.end() :]):
            return None
        letters = {found.upper() for found in self.letter.findall(match.group(0))}
        if not letters or not letters <= set(self.by_upper):
            return None
        chosen = {self.by_upper[letter] for letter in letters}
        echoed = self.texts.get(_normalize(rest[match.end() :].partition("\n")[0]))
        if len(chosen) == 1 and echoed is not None and echoed not in chosen:
            raise _Conflict
        return chosen

    def read_text(self, segment: str) -> set[str] | None:
        normalized = _normalize(segment)
        if not normalized:
            return None
        if normalized in self.texts:
            return {self.texts[normalized]}
        if self.multi:
            parts = [_normalize(part) for part in re.split(r",|;|\band\b|\bet\b", segment)]
            if len(parts) > 1 and all(part in self.texts for part in parts if part):
                return {self.texts[part] for part in parts if part}
            return None
        starts = [text for text in self.texts if re.match(rf"{re.escape(text)}\b", normalized)]
        if len(starts) == 1:
            return {self.texts[starts[0]]}
        return None


def _acceptable_tail(tail: str) -> bool:
    stripped = tail.lstrip()
    return not stripped or stripped[0] in _TAIL_PUNCTUATION or _TAIL_WORDS.match(tail) is not None


def _normalize(text: str) -> str:
    return " ".join(text.lower().split()).strip(" .,;:!?\"'()[]*«»")
