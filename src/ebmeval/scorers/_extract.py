r"""Reading option letters out of free-text, JSON and reasoning-model output.

The rule: **a reply is read completely or marked unparsed, never partially.** Every
place in the reply that states an answer is read, and all of them must name the same
letters; a statement that starts like an answer but cannot be read to its end makes
the reply unparsed rather than yielding the letters read so far; and the reading must
account for every option the reply names after it (*soundness*, below).

Grammar (``docs/answer-extraction.md`` has it with examples and measurements). Before
reading, reasoning traces (``<think>…</think>``, see :func:`strip_reasoning`) and
markdown emphasis (``**``, ``__``, ``*x*``, backticks, heading marks) are removed.

- *Letter list*: ``ITEM (SEP ITEM)*`` then an accepted tail.

  - ``ITEM``: one option letter, bare or in ``()``, ``[]``, quotes, optionally preceded
    by "option"/"proposition"/"choice"/"letter" and optionally followed by its own
    option text ("A. observational"); or uppercase letters run together ("ACE").
  - ``SEP``: ``,`` ``;`` ``/`` ``&`` ``+`` ``-`` ``、`` "and" "et" (also ", and"), spaces, and
    ``.`` when what follows is another item ("A. C. E."); "or"/"ou" makes it *hedged*.
  - Accepted tails: nothing or closing punctuation; a sentence end then anything;
    "because"/"since"/"car"/"parce que"… clauses; "is/are (also) correct/true…",
    "sont exactes…"; a colon or dash followed by words; a parenthesis.

  A text whose first item is followed by none of these is no list ("A patient…"). A
  list that breaks off ("A, C and maybe E") is ``unreadable``, one naming a letter that
  is not an option ("A, C, F") ``not-an-option``, one joined by "or" ``hedged``: all
  make the reply unparsed. A JSON-like array (``['A', 'C']``) is a list too.
- *Option text*: the text equals an option's text; or is several option texts joined
  by ``,``/``;``/"and"/"et" with nothing left; or starts with one option's text followed
  by a clause or explanation, or (single-answer tasks only, where nothing can be read
  partially) by text naming no other option and not hedging.
- Sources of readings:

  1. ``json``: every JSON object in the reply (bare, in prose, in a code fence, nested,
     single-quoted Python literals too) is searched for keys that name an answer:
     key words ``answer``, ``choice``, ``réponse``, ``letter``, ``prediction``,
     ``selected``… (``answer_choice``, ``final_answer``, ``correctAnswers``), or
     ``option(s)`` with ``correct``/``selected``/``chosen``/``best``/``final``; never
     keys of reasoning (``thinking``, ``explanation``, ``rationale``…). A value is read
     as a list or option text; a list of such, objects holding such keys, or an object
     ``{"A": true, "B": false}`` are read too. A reply that is a JSON array is a list.
     The other strings of the object (MedRAG's ``step_by_step_thinking``) are read as
     prose by the other sources.
  2. ``boxed``: every ``\boxed{…}`` (``\text{}`` and the like unwrapped).
  3. ``answer-line``: every answer statement, read from the rest of its line, or from
     the option lines that follow when that rest is empty. Statements: "Answer:",
     "ANSWER: X", "The (final|correct|best) answer(s) is/are", "answer(s)",
     "Correct options are", "Réponse(s) :", "Réponse finale :", "Les bonnes réponses
     sont", "Les propositions exactes sont", "Il faut cocher", "I would choose/select/
     pick", "je choisis/retiens/coche", "答案：", "正确答案是", "(应)选", and
     "Therefore/Thus/Hence/So/Donc, LIST" or "so: LIST" when the sentence holds nothing
     but the list. A statement is *marked final* when a revision introduces its sentence
     ("Actually", "on second thought", "on reflection", "en fait", "finalement"); a
     revision followed by a list is a statement itself ("Actually, just A and C.").
  4. ``verdicts``: options judged one by one, each correct or wrong: a list then a
     verdict ("Option A is correct", "A and C are correct", "B is not", "B and D are
     wrong", "les propositions A, C et E sont exactes", "B n'est pas exacte"; not after
     "if"/"si", not followed by "only if"/"when", not a question), or a verdict right
     after its letter ("A. Yes", "B: False", "C (correct)", "D : faux", "E：正确";
     never an option's own text, as "B. no" where option B is "no"). Read as the set
     judged correct when no JSON, box or statement answers; then an option judged both
     ways is ``ambiguous``, and where the style judges every option (a verdict of one
     letter, or a wrong one) an option left unjudged is ``option-review``.

  *Self-correction*: when statements name different letters and exactly one of them is
  marked final, it replaces everything said before it; otherwise they must agree.

  The *final answer* is the JSON answer if there is one, else the last box, else the
  last answer statement, else the verdicts; when it is unreadable the reply is
  unparsed with its reason. Every reading of the sources, the positive list verdicts
  on multi-answer tasks, and every block of lines holding nothing but letters ("A, C",
  "- A") must name the same letters, else the reply is ``ambiguous`` and unparsed,
  with the readings in ``method`` ("ambiguous: answer-line says A,C,E; json says A").
  Unreadable statements other than the final answer are ignored (reasoning says "if the
  answer is A, then…").

  *Soundness*: the reading must then account for every option the reply names. The
  *answer region* is the reply from the start of the final answer (its statement, its
  box, the end of its JSON object's reasoning strings, its first verdict) to the end;
  the whole reply when the answer comes from verdicts or lines (below). A *mention* is:
  every verdict (in the whole reply on multi-answer tasks, in the region on
  single-answer ones, where reasoning weighs options "all except"); in the region, a
  capital option letter standing as a word, not negated after it in its clause ("(B)
  was not supported") or right before it ("not E", "rather than A"), and not a word or
  abbreviation ("A patient", "E. coli", "B cells"), with option texts blanked first
  ("Hepatitis B"); and a line that is an option's text, unless it reads as letters ("C"
  names option C even where option B's text is "C").
  After an explanation heading ("Explanation:") letters count only through verdicts. A
  verdict must agree with the reading (judged correct exactly when read); any other
  mention must name a letter of the reading. Otherwise the reply is ``ambiguous``
  ("ambiguous: answer-line says C; A named after it").
  5. Only when no source states an answer, ``whole``/``first-line``/``last-line``/
     ``lines``: blocks of consecutive lines that are each a list (one option per line,
     bullets, "Sure! A, C", an array, option texts) are read as one list each; every
     block must agree, a block reviewing options ("B) incorrect") is ``option-review``,
     and a line outside the blocks naming a letter as lists do ("… - A") is
     ``unreadable``. Last, the whole text as option text.

Single-answer replies naming several letters are unparsed (``several-letters``), and
so is a letter followed by the text of another option (``letter-text-conflict``).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..judges import json_literal, json_values
from ..models import split_reasoning, strip_reasoning
from ..tasks import AnswerParser, ParsedAnswer, Sample
from ._strict import AnswerFormat, parse_strict


def parse_choices(text: str, choices: dict[str, str], *, multi: bool = False) -> ParsedAnswer:
    """The option letter(s) in ``text``, by the grammar of this module.

    Returns ``ParsedAnswer(value=letter)`` for one answer, ``ParsedAnswer(value=[letters])``
    in option order when ``multi``, or ``ParsedAnswer.unparsed(reason)``.
    """
    if not choices:
        return ParsedAnswer.unparsed("no-options")
    cleaned = _clean(strip_reasoning(text))
    if not cleaned:
        return ParsedAnswer.unparsed("thinking-unfinished" if split_reasoning(text)[1] else "empty")
    reader = _Reader(choices, multi)
    outcome = _decide(cleaned, reader)
    if isinstance(outcome, _Fail):
        return ParsedAnswer.unparsed(outcome.reason)
    method, letters = outcome
    if not multi and len(letters) > 1:
        return ParsedAnswer.unparsed("several-letters")
    ordered = [letter for letter in choices if letter in letters]
    return ParsedAnswer(value=ordered if multi else ordered[0], method=method)


def choice_parser(*, multi: bool = False, answer_format: AnswerFormat = "lenient") -> AnswerParser:
    """A task parser reading option letters from ``sample.choices``.

    With :func:`parse_choices`, or with :func:`~ebmeval.scorers._strict.parse_strict` when
    ``answer_format`` is ``"strict"``.
    """
    read = parse_strict if answer_format == "strict" else parse_choices

    def parse(output: str, sample: Sample) -> ParsedAnswer:
        return read(output, sample.choices or {}, multi=multi)

    return parse


@dataclass(frozen=True)
class _Fail:
    """A place that states an answer but cannot be read completely."""

    reason: str


Letters = frozenset[str]
Result = Letters | _Fail | None
"""Letters read, an unreadable answer, or no answer here at all."""


# --- cleaning -------------------------------------------------------------------------

_MARKUP = re.compile(r"\*\*|__|`+|^#+[ \t]*", re.M)
_ITALIC = re.compile(r"(?<![\w*])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![\w*])")


def _clean(text: str) -> str:
    text = _MARKUP.sub("", text)
    return _ITALIC.sub(r"\1", text).strip()


# --- letter lists ---------------------------------------------------------------------

_PREFIX_WORD = r"(?:options?|choices?|propositions?|letters?|lettres?|answers?|réponses?|reponses?|items?|statements?)"
_LEADING = re.compile(
    rf"[\s*>:\"'«»•·\-–—]*(?:\d{{1,2}}[.)]\s+)?(?:(?:the|les?|la|l')\s+)?(?:{_PREFIX_WORD}\s*[:：]?\s*)?(?:n°\s*)?",
    re.I,
)
_ITEM = re.compile(
    r"(?:(?:options?|propositions?|choices?|letters?|lettres?)\s+)?"
    r"(?P<open>[(\[\"'])?(?<![\w])(?P<letter>[A-Za-z])(?![\w'’])(?P<close>[)\]\"'])?(?!\w)"
    r"|(?<![\w])(?P<run>[A-Z]{2,6})(?![\w])",
    re.I,
)
_SEP = re.compile(
    r"\s*(?:(?P<hedge>\bor\b|\bou\b)|,\s*(?:(?:and|et)\b|&)?|;\s*(?:(?:and|et)\b)?|[/&+、，和及]|[-–—]|\band\b|\bet\b|(?P<dot>\.)|(?=\s))\s*",
    re.I,
)
_CLOSING = re.compile(r"[\s.,;:!?)\]\"'»*。．，；：！？）]*")
_SENTENCE_END = re.compile(r"\s*(?:[.!?;]\s+|[。！？；]\s*)\S")
_CLAUSE = re.compile(
    r"\s*[,:;\-–—(]?\s*(?:because|since|as|given|due|which|based|according|car|parce|puisque|étant|en\s+effet|selon)\b",
    re.I,
)
_CORRECT = r"(?:correct|right|true|best|exact|answers?|correctes?|justes?|vraies?|exactes?|bonnes?)"
_VERDICT_TAIL = re.compile(
    r"\s*(?:is|are|est|sont|would\s+be|seems?|semblent?)\s+(?:also\s+|both\s+|all\s+|toutes?\s+|aussi\s+|également\s+)?"
    rf"(?:the\s+|la\s+|les\s+)?{_CORRECT}\b",
    re.I,
)
_EXPLANATION = re.compile(r"\s*(?:[:\-–—]\s+\S|\()")
_NEGATIVE = re.compile(r"\b(?:incorrect|wrong|false|not|faux|fausse|inexactes?|incorrectes?|erronée?s?|non)\b", re.I)
_REVIEW = re.compile(
    rf"\s*[:\-–—]?\s*(?:{_CORRECT}|incorrect|wrong|false|faux|fausse|inexactes?|incorrectes?|vraie?s?)\b", re.I
)
_TEXT_SEP = re.compile(r"[.…]*\s*(?:[,;]\s*(?:(?:and|et)\b)?|\band\b|\bet\b|\n)\s*", re.I)
_LAST_SENTENCE = re.compile(r".*[.!?]\s+(?=\S)")
_HEDGE_WORD = re.compile(r"\b(?:or|ou|maybe|perhaps|possibly|peut-être)\b", re.I)


# Option texts differ from question to question, and compiling a case-insensitive pattern takes
# about a quarter of a millisecond. A pattern is compiled only when the reply has, where it would
# start, the text's first word (tested character by character with the same re.I matching, one
# pattern per character), and once per text.
_LEAD_MARKS = ".):-–—"
"""What may stand, besides spaces, between a letter and its option's echoed text ("A) Aspirin")."""
_ECHO_LEAD = re.compile(rf"[\s{re.escape(_LEAD_MARKS)}]*")


@functools.lru_cache(maxsize=4096)
def _text_pattern(text: str) -> re.Pattern[str]:
    return re.compile(r"\s+".join(map(re.escape, text.split())) + r"(?!\w)", re.I)


@functools.lru_cache(maxsize=4096)
def _echo_pattern(text: str) -> re.Pattern[str]:
    return re.compile(_ECHO_LEAD.pattern + _text_pattern(text).pattern, re.I)


@functools.lru_cache(maxsize=4096)
def _text_search(text: str) -> re.Pattern[str]:
    return re.compile(rf"(?<!\w){_text_pattern(text).pattern}", re.I)


@functools.lru_cache(maxsize=1024)
def _same_letter(char: str) -> re.Pattern[str]:
    return re.compile(re.escape(char), re.I)


def _word_at(text: str, pos: int, word: str) -> bool:
    """Whether ``text`` holds ``word`` at ``pos``, letters compared as a re.I pattern compares them."""
    return len(text) - pos >= len(word) and all(
        _same_letter(char).fullmatch(expected) for char, expected in zip(text[pos : pos + len(word)], word, strict=True)
    )


class _Reader:
    """Reads texts as letters of one option set."""

    def __init__(self, choices: dict[str, str], multi: bool) -> None:
        self.multi = multi
        self.by_upper = {letter.upper(): letter for letter in choices}
        self.texts = {_normalize(text): letter for letter, text in choices.items() if _normalize(text)}
        self._choices = {letter: text for letter, text in choices.items() if text.split()}
        self._quoted = {
            letter: " ".join(words) for letter, text in choices.items() if (words := text.strip(" .").split())
        }
        """Each option's text as a reply may quote it instead of naming its letter."""
        self.first_words = {quoted.split(" ", 1)[0].lower() for quoted in self._quoted.values()}

    def echo(self, letter: str | None) -> re.Pattern[str] | None:
        """The pattern of option ``letter``'s text echoed after its letter ("A. Aspirin"), if it has a text."""
        text = self._choices.get(letter or "")
        return _echo_pattern(text) if text is not None else None

    def after_echo(self, letter: str | None, text: str, pos: int) -> int:
        """``pos``, moved past option ``letter``'s text where ``text`` repeats it there ("A. Aspirin")."""
        option = self._choices.get(letter or "")
        if option is None:
            return pos
        start = _ECHO_LEAD.match(text, pos)
        at = start.end() if start else pos
        first = option.split()[0]
        if first[0] not in _LEAD_MARKS and not _word_at(text, at, first):
            return pos  # the option's text cannot start here: no need to compile its pattern
        echoed = _echo_pattern(option).match(text, pos)
        return echoed.end() if echoed else pos

    def span(self, text: str) -> Result:
        """Read ``text`` (a statement's rest of line, a JSON value, a line) completely."""
        stripped = text.strip()
        if stripped.startswith("[") and (array := json_literal(stripped)) is not None:
            return self.value(array)
        listed = self.letter_list(text)
        if listed is not None:
            return listed
        return self.option_text(text)

    def letter_list(self, text: str, *, line_mode: bool = False) -> Result:
        """``text`` read as a letter list from its start; ``line_mode`` for lines of a block."""
        start = _LEADING.match(text)
        pos = start.end() if start else 0
        letters: list[str] = []
        hedged = False
        while True:
            item = _ITEM.match(text, pos)
            if item is None:
                break
            found = self.item_letters(item)
            after = item.end()
            if found is None:  # a word, not a letter
                break
            if len(found) == 1:
                after = self.after_echo(self.by_upper.get(found[0].upper()), text, after)
            separator = _SEP.match(text, after)
            following = _ITEM.match(text, separator.end()) if separator is not None else None
            nxt = self.item_letters(following) if following is not None else None
            if separator is not None and following is not None and nxt is not None:
                if self._follows_well(text, following.end(), nxt, dot=bool(separator["dot"])):
                    letters.extend(found)
                    hedged |= bool(separator["hedge"])
                    pos = separator.end()
                    continue
            tail = text[after:]
            if not letters and len(found) == 1 and (conflict := self.texts.get(_normalize(tail.partition("\n")[0]))):
                if conflict != self.by_upper.get(found[0].upper()):
                    return _Fail("letter-text-conflict")
            if line_mode and _REVIEW.match(tail):
                return _Fail(f"option-review: {_short(text)}")
            if not _tail_ok(tail):
                if not letters and nxt is None:  # not a list at all ("A patient…")
                    return None
                return _Fail(f"unreadable: {_short(text)}")
            letters.extend(found)
            if line_mode and _NEGATIVE.search(tail):
                return _Fail(f"option-review: {_short(text)}")
            break
        if not letters:
            return None
        unknown = sorted({x.upper() for x in letters} - set(self.by_upper))
        if unknown:
            return _Fail(f"not-an-option: {','.join(unknown)}")
        if hedged:
            return _Fail(f"hedged: {_short(text)}")
        return frozenset(self.by_upper[x.upper()] for x in letters)

    def item_letters(self, item: re.Match[str]) -> list[str] | None:
        """The letters of an item match, or None for a word ("a", "Based")."""
        if item["run"]:
            run = item["run"]
            if not run.isupper() or len(set(run)) != len(run) or not set(run) <= set(self.by_upper):
                return None
            return list(run)
        letter = item["letter"]
        if letter.upper() not in self.by_upper and not item["open"] and not item["close"] and letter.islower():
            return None  # "a", "i" as words
        return [letter]

    def _follows_well(self, text: str, pos: int, letters: list[str], *, dot: bool) -> bool:
        """Whether an item ending at ``pos`` is followed by a separator, an end or a tail."""
        if len(letters) == 1:
            pos = self.after_echo(self.by_upper.get(letters[0].upper()), text, pos)
        rest = text[pos:]
        separator = _SEP.match(rest)
        following = _ITEM.match(rest, separator.end()) if separator is not None else None
        if following is not None and self.item_letters(following) is not None:
            return True
        if dot:  # "A. C. E." but not "A. I think"
            return _CLOSING.fullmatch(rest.partition("\n")[0]) is not None or rest.startswith(".")
        return _tail_ok(rest)

    def line(self, line: str) -> Result:
        """One line of a block: a list ("- A", "C. its text", "Sure! A, C"), an array, or option texts."""
        read = self.letter_list(line, line_mode=True)
        if read is None and line.strip().startswith("["):
            array = json_literal(line.strip())
            read = self.value(array) if isinstance(array, list) else None
        if read is None and (boundary := _LAST_SENTENCE.search(line)) is not None:
            read = self.letter_list(line[boundary.end() :], line_mode=True)
        if read is None:
            read = self.option_text(line, strict=True)
        return read

    def stray(self, line: str) -> bool:
        """Whether ``line`` names an option letter the way a list does ("… - A", "(B).")."""
        letters = "|".join(map(re.escape, self.by_upper))
        return re.search(rf"(?<![\w'’])[(\[]?(?:{letters})[)\]]?(?=\s*(?:[.,;:!?]|$))", line) is not None

    def bare(self, line: str) -> Result:
        """The letters of a line that holds nothing else (bullets, brackets, separators, option text)."""
        read = self.span(line)
        if not isinstance(read, frozenset):
            return None
        rest = line
        for letter in read:
            echo = self.echo(letter)
            rest = echo.sub(" ", rest) if echo is not None else rest
        rest = re.sub(r"\b[A-Z]{2,6}\b|\b[A-Za-z]\b|\b(?:and|et|&)\b|[\W\d_]", "", rest)
        return read if not rest else None

    def option_text(self, text: str, *, strict: bool = False) -> Result:
        """Option texts echoed: one, or several joined by separators, the whole text consumed.

        One option text may also start a longer text: followed by a clause or an
        explanation, or, for single-answer tasks (where nothing can be read partially),
        by any text naming no other option and not hedging ("No, the study found…").
        """
        normalized = _normalize(text)
        if not normalized:
            return None
        if normalized in self.texts:
            return frozenset({self.texts[normalized]})
        pos = len(text) - len(text.lstrip(" \t*>-\"'«"))
        found: list[str] = []
        while (match := self._option_at(text, pos)) is not None:
            letter, end = match
            found.append(letter)
            pos = end
            separator = _TEXT_SEP.match(text, end)
            if separator is None or self._option_at(text, separator.end()) is None:
                break
            pos = separator.end()
        if not found:
            return None
        tail = text[pos:]
        if _CLOSING.fullmatch(tail):
            return frozenset(found)
        if strict:
            return None
        if len(found) > 1 or any(
            _text_search(quoted).search(tail) for letter, quoted in self._quoted.items() if letter not in found
        ):
            return None
        if _HEDGE_WORD.search(tail):
            return None
        if _CLAUSE.match(tail) or _EXPLANATION.match(tail) or not self.multi:
            return frozenset(found)
        return None

    def _option_at(self, text: str, pos: int) -> tuple[str, int] | None:
        """The longest option text starting at ``pos``: its letter and end."""
        matches = [
            (found.end(), letter)
            for letter, quoted in self._quoted.items()
            if _word_at(text, pos, quoted.split(" ", 1)[0]) and (found := _text_pattern(quoted).match(text, pos))
        ]
        if not matches:
            return None
        end, letter = max(matches)
        return letter, end

    def mask_texts(self, text: str) -> str:
        """``text`` with every option's text blanked, so that "Hepatitis B" names no option B."""
        lowered = text.lower()
        for quoted in self._quoted.values():
            if quoted.split(" ", 1)[0].lower() in lowered:  # compile the option's pattern only if it can match
                text = _text_search(quoted).sub(lambda found: " " * len(found.group(0)), text)
        return text

    def value(self, value: Any) -> Result:
        """A JSON value under an answer key: text, list, ``{"A": true}`` or nested objects."""
        if isinstance(value, str):
            return self.span(value)
        if isinstance(value, list):
            found: set[str] = set()
            for item in value:
                read = self.value(item) if not isinstance(item, dict) else _union(_json_answers(item, self))
                if isinstance(read, _Fail):
                    return read
                if read is None:
                    return _Fail(f"unreadable: {_short(json.dumps(value))}") if found else None
                found |= read
            return frozenset(found) if found else None
        if isinstance(value, dict):
            if value and all(isinstance(key, str) and key.upper() in self.by_upper for key in value):
                if all(isinstance(flag, bool) for flag in value.values()):
                    return frozenset(self.by_upper[key.upper()] for key, flag in value.items() if flag)
            return _union(_json_answers(value, self))
        return None


def _tail_ok(tail: str) -> bool:
    """Whether what follows a list on its line ends it: punctuation, a new sentence, a clause, a verdict."""
    line = tail.partition("\n")[0]
    checks = (_SENTENCE_END, _CLAUSE, _VERDICT_TAIL, _EXPLANATION)
    return _CLOSING.fullmatch(line) is not None or any(check.match(line) for check in checks)


def _union(results: list[Result]) -> Result:
    found: set[str] = set()
    for result in results:
        if isinstance(result, _Fail):
            return result
        if result is not None:
            found |= result
    return frozenset(found) if found else None


# --- JSON -----------------------------------------------------------------------------

_ANSWER_WORDS = {
    "answer", "answers", "choice", "choices", "chosen", "réponse", "réponses", "reponse", "reponses",
    "letter", "letters", "lettre", "lettres", "prediction", "predicted", "pred", "selected", "selection",
}  # fmt: skip
_OPTION_WORDS = {"option", "options", "proposition", "propositions"}
_OPTION_QUALIFIERS = {"correct", "selected", "chosen", "final", "best", "right", "bonnes", "bonne", "correctes"}
_NOT_ANSWER_WORDS = {
    "thinking", "reasoning", "explanation", "rationale", "justification", "explication", "analysis",
    "confidence", "step", "steps", "text", "raisonnement", "why", "evidence",
}  # fmt: skip


def _key_words(key: str) -> set[str]:
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", key)
    return {word for word in re.split(r"[^\wéè]+|_", spaced.lower()) if word}


def _is_answer_key(key: str) -> bool:
    words = _key_words(key)
    if words & _NOT_ANSWER_WORDS:
        return False
    return bool(words & _ANSWER_WORDS) or bool(words & _OPTION_WORDS and words & _OPTION_QUALIFIERS)


def _json_answers(obj: Any, reader: _Reader) -> list[Result]:
    """The readings of every answer key in ``obj``, depth first."""
    found: list[Result] = []
    if isinstance(obj, dict):
        for key, value in obj.items():
            if _is_answer_key(str(key)):
                found.append(reader.value(value))
            elif isinstance(value, dict | list):
                found.extend(_json_answers(value, reader))
    elif isinstance(obj, list):
        for item in obj:
            if isinstance(item, dict | list):
                found.extend(_json_answers(item, reader))
    return found


def _strings(obj: Any) -> Iterator[str]:
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for key, value in obj.items():
            if not _is_answer_key(str(key)):
                yield from _strings(value)
    elif isinstance(obj, list):
        for item in obj:
            yield from _strings(item)


# --- statements and verdicts ------------------------------------------------------------

_VERB = (
    r"(?:\s+(?:is|are|would\s+be|will\s+be|should\s+be|must\s+be|est|sont|serait|seraient|semble))?"
    r"(?:\s+(?:therefore|thus|then|donc))?\s*(?:[:：=]|\s[-–—]\s)?[ \t]*"
)
_REVISION = (
    r"(?:actually|on\s+second\s+thoughts?|(?:on|upon|after)\s+(?:further\s+)?reflection|after\s+reconsidering"
    r"|reconsidering|correction|I\s+(?:now\s+)?(?:change|revise)\s+my\s+answer|en\s+fait|réflexion\s+faite"
    r"|à\s+la\s+réflexion|après\s+réflexion|tout\s+bien\s+considéré|finalement|更正|修正)"
)
"""Words that revise an earlier answer: the statement they introduce is *marked final*."""
_LIST_AHEAD = r"(?=(?:options?\s+|the\s+options?\s+)?[(\[]?[A-Za-z][)\]]?(?:[\s,.;]|$)|[A-Z]{2,6}\b)"
_STATEMENT = re.compile(
    # a statement starts a word: one look behind rules out every position inside a word
    r"(?<!\w)(?:"
    r"(?:(?:final|correct|right|best|true|most[ \t]+likely|bonnes?|vraies?)[ \t]+)?"
    r"(?:answers?|réponses?|reponses?)\b(?:\s*\(s\))?"
    r"(?:\s+(?:finales?|correctes?|justes?|exactes?|définitives?))?(?:\s+(?:choices?|options?|letters?))?"
    rf"{_VERB}"
    rf"|(?:correct|right|best|true|bonnes?)[ \t]+(?:options?|choices?|propositions?|letters?){_VERB}"
    rf"|propositions?\s+(?:exactes?|correctes?|justes?|vraies?|retenues?|à\s+cocher){_VERB}"
    r"|(?:I\s+would|I'd|I\s+will|I'll|I)\s+(?:choose|select|pick|go\s+with)\b[ \t]*(?:[:：])?[ \t]*"
    r"|(?:je\s+(?:choisis|choisirais|sélectionne|sélectionnerais|retiens|coche|cocherais)|il\s+faut\s+cocher)\b"
    r"[ \t]*(?:[:：])?[ \t]*"
    rf"|(?:^|(?<=[.!?。][ \t])|(?<=[.!?。]))(?:{_REVISION}[ \t,:;—–-]*)+(?:(?:so|then|donc)[ \t,:]*)?"
    rf"(?:(?:it'?s|it\s+is|c'est|just|only|simply|seulement|uniquement)\s+)*{_LIST_AHEAD}"
    rf"|(?:therefore|thus|hence|so|donc|ainsi)\s*[,:]\s*{_LIST_AHEAD}"
    r")"
    # Chinese is written without spaces: 所以答案是B
    r"|(?:最终|最終|正确|正確)?答案(?:应该?是|應該?是|应为|應為|是|为|為)?[ \t]*[:：]?[ \t]*"
    r"|(?:应该?|應該?)?选(?:择|擇)?[ \t]*(?=[(\[（]?[A-Za-z])",
    re.I | re.M,
)
_WHOLE_SENTENCE = re.compile(rf"\s*(?:{_REVISION}|therefore|thus|hence|so|donc|ainsi)\b", re.I)
"""Statements read as a sentence holding nothing but a list ("Therefore, A and E.", "Actually, just A.")."""
_MARKED = re.compile(rf"\b{_REVISION}", re.I)
_WRONG = r"(?:incorrect|wrong|false|faux|fausses?|inexactes?|incorrectes?|erronée?s?)"
_VERDICT = re.compile(
    r"(?<!\w)(?=[iaesn])(?:(?:is|are|est|sont)\s+(?P<not>not\s+|pas\s+)?|n'(?:est|sont)\s+(?P<pas>pas\s+))"
    r"(?:also\s+|both\s+|all\s+|toutes?\s+|aussi\s+|également\s+)?(?:the\s+|la\s+|les\s+)?"
    rf"(?:(?P<good>{_CORRECT})|{_WRONG})\b"
    r"(?![?])(?!\s+(?:only\s+|seulement\s+)?(?:if|when|unless|provided|si|lorsque|quand)\b)"
    r"|(?<!\w)(?=[ia])(?:is|are)\s+not(?=\s*(?:[,.;:!]|$))",
    re.I | re.M,
)
_VERDICT_INTRO = re.compile(
    r".*?\b(?:options?|choices?|propositions?|answers?|réponses?|letters?|lettres?)\s+"
    r"|(?:\b(?:so|therefore|thus|hence|donc|ainsi|only|both|seules?|seuls?)\b[,\s]*)*"
    r"|.*[,;]\s*(?:(?:and|but|while|whereas|et|mais)\s+)?|.*\b(?:and|but|while|whereas|et|mais)\s+",
    re.I | re.S,
)
_CONDITION = re.compile(r"\b(?:if|whether|unless|si)\s*$", re.I)
_GOOD_WORDS = r"yes|true|correct|right|vraie?|exacte?|juste|oui|正确|正確|对|對|✓|✔"
_BAD_WORDS = r"no|false|incorrect|wrong|faux|fausse|inexacte?|non|错误|錯誤|错|錯|✗|✘"
_JUDGED_LETTER = re.compile(
    r"(?<![A-Za-z0-9'’])(?:(?i:options?|propositions?|choices?|statements?)\s+)?[(\[]?(?P<letter>[A-Z])[)\]]?"
    r"(?=[ \t]*[.:：)=\-–—(\[✓✔✗✘正错錯对對])"
)
"""A letter that a verdict may follow, itself or after the letter's option text."""
_JUDGMENT = re.compile(
    r"(?:\s*[.:：)=\-–—]\s*|\s+(?=[(\[])|[ \t]*(?=[✓✔✗✘正错錯对對]))[(\[]?\s*(?P<not>(?i:not|pas)\s+)?"
    rf"(?P<word>(?P<good>(?i:{_GOOD_WORDS}))|(?i:{_BAD_WORDS}))\s*[)\]]?(?=[ \t]*(?:[,.;:!()\]。，；！]|$))",
    re.M,
)
"""A verdict right after a letter or its echoed text: "A. Yes", "B: False", "C (correct)", "D : faux", "E：正确"."""


@dataclass(frozen=True)
class _Statement:
    start: int
    result: Result
    marked: bool
    """Whether a revision ("Actually", "on second thought") introduces it."""


@dataclass(frozen=True)
class _Verdict:
    """One option judged correct or wrong, at ``start``–``end`` of the text."""

    start: int
    end: int
    letter: str
    correct: bool
    listed: bool
    """Whether it judges a list ("Options A and C are correct") rather than one letter ("A. Yes")."""


def _statements(text: str, reader: _Reader) -> tuple[list[_Statement], list[tuple[int, int]]]:
    """Each answer statement in ``text``, in order, and the spans of the line blocks read."""
    found: list[_Statement] = []
    blocks: list[tuple[int, int]] = []
    for statement in _STATEMENT.finditer(text):
        line, newline, _ = text[statement.end() :].partition("\n")
        sentence = re.split(r"[.!?\n。]", text[: statement.start()])[-1] + statement.group(0)
        marked = _MARKED.search(sentence) is not None
        if _WHOLE_SENTENCE.match(statement.group(0)):
            # "Therefore, A, C and E." but not "So, option C is correct" (a verdict, read as one)
            result = reader.bare(re.split(r"(?<=[.!?])\s", line)[0])
        elif line.strip(" \t:.-") or not newline:
            result = reader.span(line)
        else:
            start = statement.end() + len(line) + 1
            result, length = _block(text[start:], reader)
            blocks.append((start, start + length))
        found.append(_Statement(statement.start(), result, marked))
    return found, blocks


def _correction(statements: list[_Statement]) -> int:
    """Where a self-correction starts: the one statement marked final when statements differ, else 0."""
    read = [statement for statement in statements if isinstance(statement.result, frozenset)]
    marked = [statement for statement in read if statement.marked]
    if len({statement.result for statement in read}) > 1 and len(marked) == 1:
        return marked[0].start
    return 0


def _verdicts(text: str, reader: _Reader) -> list[_Verdict]:
    """Every option judged in ``text``: "Option A is correct", "B and D are wrong", "C. Yes", in order."""
    found = [*_list_verdicts(text, reader), *_inline_verdicts(text, reader)]
    found.sort(key=lambda verdict: verdict.start)
    return found


def _list_verdicts(text: str, reader: _Reader) -> Iterator[_Verdict]:
    """Lists followed by a verdict: "A and C are correct", "option B is not", "les propositions A et C sont exactes"."""
    for verdict in _VERDICT.finditer(text):
        correct = bool(verdict["good"]) != bool(verdict["not"] or verdict["pas"]) and verdict.group(0)[-3:] != "not"
        before = text[: verdict.start()]
        sentence_start = max(before.rfind(mark) for mark in (".", "!", "?", "\n", ":", "…", ";", "。")) + 1
        sentence_start = max(sentence_start, len(before) - 200)
        sentence = before[sentence_start:]
        # the list starts at the first item after an intro ("Option", "so", "A is correct, ") and runs to the verdict
        for cut in range(len(sentence) + 1):
            head, candidate = sentence[:cut], sentence[cut:].strip()
            if cut and sentence[cut - 1].isalnum():
                continue
            if not candidate or not _VERDICT_INTRO.fullmatch(head) or _CONDITION.search(head):
                continue
            item = _ITEM.match(candidate)
            if item is None or reader.item_letters(item) is None:
                continue
            read = reader.bare(candidate)
            if isinstance(read, frozenset):
                for letter in read:
                    yield _Verdict(sentence_start + cut, verdict.end(), letter, correct, listed=True)
                break


def _inline_verdicts(text: str, reader: _Reader) -> Iterator[_Verdict]:
    """Verdicts after their letter: "A. Yes", "B (no)", "C. <option C's text> - Yes"."""
    for judged in _JUDGED_LETTER.finditer(text):
        letter = reader.by_upper.get(judged["letter"])
        if letter is None:
            continue
        # past the option's own text: "B. no" where option B is "no" is no verdict
        verdict = _JUDGMENT.match(text, reader.after_echo(letter, text, judged.end()))
        if verdict is None or _normalize(verdict["word"]) in reader.texts:
            continue  # a word that is an option's text ("B. yes" where option A is "yes") names it
        correct = bool(verdict["good"]) != bool(verdict["not"])
        yield _Verdict(judged.start(), verdict.end(), letter, correct, listed=False)


def _verdict_reading(verdicts: list[_Verdict], reader: _Reader) -> tuple[int, Result] | None:
    """The options judged correct, where ``verdicts`` is the answer: read at the first verdict."""
    if not verdicts:
        return None
    good = {verdict.letter for verdict in verdicts if verdict.correct}
    bad = {verdict.letter for verdict in verdicts if not verdict.correct}
    start = verdicts[0].start
    if good & bad:
        return start, _Fail(f"ambiguous: {','.join(sorted(good & bad))} judged both correct and wrong")
    unjudged = [letter for letter in reader.by_upper.values() if letter not in good | bad]
    reviews = bad or not all(verdict.listed for verdict in verdicts)  # "B is wrong", "A. Yes": every option judged
    if reader.multi and reviews and unjudged:  # a review of every option that leaves some out
        return start, _Fail(f"option-review: {','.join(unjudged)} not judged")
    return start, frozenset(good) if good else None


def _block(text: str, reader: _Reader) -> tuple[Result, int]:
    """The lines at the start of ``text`` that are each a list, read as one list, and their length.

    Blank lines before the block are skipped; when no line is a list, the first line is
    read as a span ("The correct answer is:" then "C").
    """
    found: set[str] = set()
    offset = consumed = 0
    for line in text.split("\n"):
        offset += len(line) + 1
        if not line.strip():
            if found:
                break
            continue
        read = reader.line(line)
        if isinstance(read, _Fail):
            return read, offset
        if read is None:
            break
        found |= read
        consumed = offset
    if not found:
        first = next((line for line in text.split("\n") if line.strip()), "")
        return reader.span(first), 0
    return frozenset(found), consumed


# --- the decision ----------------------------------------------------------------------


@dataclass
class _Readings:
    final: tuple[str, Result, int] | None = None
    """The final answer's source, reading and where it starts."""
    found: list[tuple[str, Letters]] = field(default_factory=list)

    def add(self, source: str, results: list[tuple[int, Result]], *, final: bool) -> None:
        for _, result in results:
            if isinstance(result, frozenset):
                self.found.append((source, result))
        candidates = [(start, result) for start, result in results if result is not None]
        if final and candidates and self.final is None:
            start, result = candidates[-1]
            self.final = (source, result, start)


def _decide(text: str, reader: _Reader) -> tuple[str, Letters] | _Fail:
    readings = _Readings()
    stripped = text.strip()
    if stripped.startswith("[") and (array := json_literal(stripped)) is not None and isinstance(array, list):
        readings.add("json", [(len(text), reader.value(array))], final=True)
    prose, json_results = _json_readings(text, reader)
    readings.add("json", json_results, final=True)
    readings.add("boxed", [(start, reader.span(_unlatex(box))) for start, box in _boxes(prose)], final=True)
    statements, blocks = _statements(prose, reader)
    since = _correction(statements)  # a self-correction sets aside what was said before it
    readings.add("answer-line", [(s.start, s.result) for s in statements if s.start >= since], final=True)
    verdicts = [verdict for verdict in _verdicts(prose, reader) if verdict.start >= since]
    if readings.final is None and (reading := _verdict_reading(verdicts, reader)) is not None:
        readings.add("verdicts", [reading], final=True)
    elif reader.multi and (listed := {v.letter for v in verdicts if v.listed and v.correct}):
        readings.add("verdicts", [(0, frozenset(listed))], final=False)  # "Options A and C are correct" answers too
    if readings.final is None:
        outcome = _fallback(text, reader)
        if isinstance(outcome, _Fail):
            return outcome
        return _sound(outcome[0], outcome[1], 0, prose, verdicts, reader)
    unread = " " * since + prose[since:]
    spans = blocks + [(verdict.start, verdict.end) for verdict in verdicts]
    for start, end in spans:  # lines a statement has read, and verdicts, are not read again as bare lists
        unread = unread[:start] + re.sub(r"[^\n]", " ", unread[start:end]) + unread[end:]
    readings.add("list", [(0, letters) for _, _, letters in _bare_runs(unread, reader)], final=False)
    source, final, start = readings.final
    if isinstance(final, _Fail):
        return final
    if len({letters for _, letters in readings.found}) > 1:
        said = "; ".join(f"{name} says {','.join(sorted(letters))}" for name, letters in _ordered(readings.found))
        return _Fail(f"ambiguous: {said}")
    assert final is not None
    if not reader.multi:  # on single-answer tasks verdicts before the answer are reasoning ("all except")
        verdicts = [verdict for verdict in verdicts if verdict.start >= start]
    return _sound(source, final, start, prose, verdicts, reader)


def _json_readings(text: str, reader: _Reader) -> tuple[str, list[tuple[int, Result]]]:
    """``text`` with each JSON object replaced by its reasoning strings, and the readings of its answer keys.

    A reading's position is the end of its object's strings: the answer region starts after them.
    """
    pieces: list[str] = []
    found: list[tuple[int, Result]] = []
    last = length = 0
    for start, end, obj in json_values(text, "{"):
        if not isinstance(obj, dict):
            continue
        strings = "\n" + "\n".join(_strings(obj)) + "\n"
        pieces += [text[last:start], strings]
        length += start - last + len(strings)
        found += [(length, result) for result in reversed(_json_answers(obj, reader))]
        last = end
    pieces.append(text[last:])
    return "".join(pieces), found


def _sound(
    source: str, letters: Letters, start: int, text: str, verdicts: list[_Verdict], reader: _Reader
) -> tuple[str, Letters] | _Fail:
    """The reading, if every option mention of the answer region agrees with it, else ``ambiguous``."""
    disagreement = _disagreement(text, start, letters, verdicts, reader)
    if disagreement is None:
        return source, letters
    return _Fail(f"ambiguous: {source} says {','.join(sorted(letters))}; {disagreement}")


_MENTION = re.compile(r"(?<![A-Za-z0-9'’])[(\[]?(?P<letter>[A-Z])[)\]]?(?![A-Za-z0-9'’])")
_NOT_A_MENTION = re.compile(
    r"\.\s*[a-z]|[ \t]+(?!(?:and|or|nor|et|ou|ni|is|are|was|were|est|sont|as|also|too|could|would|should|might|may"
    r"|can|must|seems?|holds?|fits?|remains?|has|have|had|does|did|because|since|then|with|but|only|alone"
    r"|together|aussi|semble|paraît|n'|ne)\b)[a-zà-ÿ]"
)
"""What follows a capital that is a word or an abbreviation, not an option: "A patient", "E. coli", "B cells"."""
_NEGATION = re.compile(
    r"\b(?:not|no|never|neither|nor|except|excluding|unlike|rather\s+than|instead\s+of|ruled?\s+out|incorrect|wrong"
    r"|false|unlikely|pas|ni|sauf|faux|fausse|inexacte?|erronée?)\b|n't|不|非|错|錯",
    re.I,
)
_CLAUSE_MARK = re.compile(r"[.!?;\n。！？；]")
_NEGATED_NEXT = re.compile(
    r"\b(?:not|no|nor|neither|except|excluding|unlike|rather\s+than|instead\s+of|sauf|pas|ni)\s+"
    r"(?:(?:the\s+|la\s+|l')?(?:options?|propositions?|choices?)\s+)?[(\[]?$|不是$|非$",
    re.I,
)
"""A negation right before a letter: "not E", "rather than A", "sauf la proposition B"."""
_EXPLANATION_HEAD = re.compile(
    r"^[ \t]*(?:explanation|rationale|reasoning|justification|explication|why|解析|理由)[ \t]*[:：]", re.I | re.M
)


def _disagreement(text: str, start: int, letters: Letters, verdicts: list[_Verdict], reader: _Reader) -> str | None:
    """The first option mention that contradicts or extends ``letters``, described; ``None`` if all agree.

    Mentions: every verdict given; in the answer region (``text`` from ``start``), a letter
    in option position not negated in its clause, and a line that is an option's text (not
    one that reads as letters).
    Letters after an explanation heading ("Explanation:") count only through verdicts.
    """
    for verdict in verdicts:
        if (verdict.letter in letters) != verdict.correct:
            return f"{verdict.letter} judged {'correct' if verdict.correct else 'wrong'}"
    region = reader.mask_texts(text[start:])
    heading = _EXPLANATION_HEAD.search(region)
    judged = [(verdict.start - start, verdict.end - start) for verdict in verdicts]
    for mention in _MENTION.finditer(region, 0, heading.start() if heading else len(region)):
        letter = reader.by_upper.get(mention["letter"])
        if letter is None or letter in letters or _NOT_A_MENTION.match(region, mention.end()):
            continue
        if any(low <= mention.start() < high for low, high in judged) or _negated(region, mention):
            continue
        return f"{letter} named after it"
    for line in text[start:].split("\n"):
        if line.lstrip(" \t*>-\"'«").split(" ", 1)[0].lower() not in reader.first_words:
            continue  # no option text starts this line
        if isinstance(reader.letter_list(line), frozenset):
            continue  # a line of letters names options by letter ("C" where option B's text is "C")
        read = reader.option_text(line, strict=True)
        if isinstance(read, frozenset) and not read <= letters:
            return f"{','.join(sorted(read - letters))} named by its text"
    return None


def _negated(text: str, mention: re.Match[str]) -> bool:
    """Whether ``mention`` is negated: after it in its clause ("(B) was not supported"), or just before ("not D")."""
    closing = _CLAUSE_MARK.search(text, mention.end())
    if _NEGATION.search(text, mention.end(), closing.start() if closing else len(text)):
        return True
    return _NEGATED_NEXT.search(text, max(0, mention.start() - 40), mention.start()) is not None


def _bare_runs(text: str, reader: _Reader) -> list[tuple[int, int, Letters]]:
    """Runs of lines that hold nothing but letters ("A, C", "- A", "C. <its option text>")."""
    runs: list[tuple[int, int, Letters]] = []
    lines = text.split("\n")
    index = 0
    while index < len(lines):
        start, found = index, set[str]()
        while index < len(lines) and isinstance(read := reader.bare(lines[index]), frozenset):
            found |= read
            index += 1
        if found:
            runs.append((start, index, frozenset(found)))
        else:
            index += 1
    return runs


def _ordered(found: list[tuple[str, Letters]]) -> list[tuple[str, Letters]]:
    seen: list[tuple[str, Letters]] = []
    for item in found:
        if item not in seen:
            seen.append(item)
    return seen


def _fallback(text: str, reader: _Reader) -> tuple[str, Letters] | _Fail:
    lines = text.split("\n")
    if len([line for line in lines if line.strip()]) == 1:
        whole = reader.span(text)
        if whole is None:
            whole = reader.line(text)
        if isinstance(whole, _Fail):
            return whole
        return ("whole", whole) if whole else _Fail("no-answer-found")
    runs: list[tuple[int, int, Letters]] = []
    index = 0
    while index < len(lines):
        if not lines[index].strip():
            index += 1
            continue
        read = reader.line(lines[index])
        if isinstance(read, _Fail):
            return read
        if read is None:
            index += 1
            continue
        start, run = index, set(read)
        index += 1
        while index < len(lines) and lines[index].strip():
            more = reader.line(lines[index])
            if isinstance(more, _Fail):
                return more
            if more is None:
                break
            run |= more
            index += 1
        runs.append((start, index, frozenset(run)))
    if runs:
        covered = {line for start, end, _ in runs for line in range(start, end)}
        stray = [line for i, line in enumerate(lines) if i not in covered and reader.stray(line)]
        if stray:  # "Sure! - A" above "- B": letters outside the blocks
            return _Fail(f"unreadable: {_short(stray[0])}")
        if len({letters for _, _, letters in runs}) > 1:
            said = "; ".join(f"lines {a + 1}-{b} say {','.join(sorted(x))}" for a, b, x in runs)
            return _Fail(f"ambiguous: {said}")
        start, end, letters = runs[-1]
        if len(runs) == 1 and (start, end) == (0, len(lines)):
            return "whole", letters
        method = "last-line" if end == len(lines) else "first-line" if start == 0 else "lines"
        return method, letters
    text_reading = reader.option_text(text)
    if isinstance(text_reading, frozenset):
        return "whole", text_reading
    return _Fail("no-answer-found")


# --- helpers ---------------------------------------------------------------------------


def _boxes(text: str) -> Iterator[tuple[int, str]]:
    for match in re.finditer(r"\\boxed\s*\{", text):
        depth, index = 1, match.end()
        while index < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[index], 0)
            index += 1
        if depth == 0:
            yield match.start(), text[match.end() : index - 1]


def _unlatex(text: str) -> str:
    previous = None
    while previous != text:
        previous = text
        text = re.sub(r"\\(?:text|textbf|mathrm|mathbf|mbox)\s*\{([^{}]*)\}", r"\1", text)
    return text.replace("\\,", " ").replace("\\;", " ").replace("$", "")


def _short(text: str, size: int = 40) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= size else flat[: size - 1] + "…"


def _normalize(text: str) -> str:
    return " ".join(text.lower().split()).strip(" .,;:!?\"'()[]*«»")
