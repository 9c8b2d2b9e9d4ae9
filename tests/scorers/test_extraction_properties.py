"""Never a partial reading: a rendered answer is read exactly, or the reply is unparsed."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ebmeval.scorers import parse_choices
from tests.helpers.answer_styles import STYLES

OPTIONS = {
    "A": "The primary endpoint was met",
    "B": "The study was randomized",
    "C": "Confounding was controlled by adjustment",
    "D": "The sample size was calculated a priori",
    "E": "Losses to follow-up were reported",
}
gold_sets = st.sets(st.sampled_from(sorted(OPTIONS)), min_size=1, max_size=5).map(sorted)
styles = st.sampled_from(sorted(STYLES))


@settings(max_examples=400, deadline=None)
@given(gold=gold_sets, style=styles)
def test_a_multi_answer_reply_is_read_exactly_or_unparsed(gold: list[str], style: str) -> None:
    parsed = parse_choices(STYLES[style](gold, OPTIONS), OPTIONS, multi=True)
    assert parsed.value == gold if parsed.parsed else parsed.value is None


@settings(max_examples=200, deadline=None)
@given(letter=st.sampled_from(sorted(OPTIONS)), style=styles)
def test_a_single_answer_reply_is_read_exactly_or_unparsed(letter: str, style: str) -> None:
    parsed = parse_choices(STYLES[style]([letter], OPTIONS), OPTIONS)
    assert parsed.value == letter if parsed.parsed else parsed.value is None


def test_every_style_is_read() -> None:
    """Not just "never wrong": each style of the corpus is actually read, for every gold set."""
    unread = []
    for size in range(1, 6):
        for gold in itertools.combinations(sorted(OPTIONS), size):
            for name, style in STYLES.items():
                if parse_choices(style(list(gold), OPTIONS), OPTIONS, multi=True).value != list(gold):
                    unread.append((name, gold))
    assert unread == []


@settings(max_examples=300, deadline=None)
@given(gold=gold_sets, other=gold_sets, first=styles, second=st.sampled_from(["answer-is-oxford", "json-answer"]))
def test_two_different_answers_in_one_reply_are_ambiguous(
    gold: list[str], other: list[str], first: str, second: str
) -> None:
    """A list in one style and a different final answer (three letters, then one) is never read as either."""
    if gold == other or first in ("option-text",):
        return
    reply = STYLES[first](gold, OPTIONS) + "\n\n" + STYLES[second](other, OPTIONS)
    parsed = parse_choices(reply, OPTIONS, multi=True)
    assert not parsed.parsed, f"{reply!r} read as {parsed.value}"


PREFIXES = [
    "",
    "After reading the methods section carefully:\n\n",
    "Let me think step by step. The cohort was followed for two years.\n",
    "<think>Option B was tempting, but the allocation was not random.</think>\n",
    "Sure! ",
    "Based on the article, ",
    "Réponse argumentée.\n",
    "Here is my analysis of the options.\n\n",
    "1. ",
    "Bien sûr. ",
]
SUFFIXES = [
    "",
    "\n\nThese choices follow from the methods section.",
    "\n\nI considered D as well, but the sample size was not justified.",
    "\n\nHope this helps!",
    "\n\nNote: option C could also be argued.",
    " (see Table 2)",
    "\n\n(B) was not supported.",
]


@settings(max_examples=400, deadline=None)
@given(
    gold=gold_sets,
    style=styles,
    prefix=st.sampled_from(PREFIXES),
    suffix=st.sampled_from(SUFFIXES),
)
def test_prose_around_an_answer_never_makes_it_partial(gold: list[str], style: str, prefix: str, suffix: str) -> None:
    reply = prefix + STYLES[style](gold, OPTIONS) + suffix
    parsed = parse_choices(reply, OPTIONS, multi=True)
    assert parsed.value == gold if parsed.parsed else parsed.value is None, reply


@pytest.mark.slow
def test_prose_around_every_answer_in_every_style() -> None:
    """Exhaustively: 31 gold sets x every style x every preface x every closing remark."""
    wrong = []
    for size in range(1, 6):
        for combination in itertools.combinations(sorted(OPTIONS), size):
            gold = list(combination)
            for style in STYLES.values():
                for prefix in PREFIXES:
                    for suffix in SUFFIXES:
                        reply = prefix + style(gold, OPTIONS) + suffix
                        parsed = parse_choices(reply, OPTIONS, multi=True)
                        if parsed.parsed and parsed.value != gold:
                            wrong.append((reply, parsed.value))
    assert wrong == []
