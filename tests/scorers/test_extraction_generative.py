"""Generated replies: every template of ``tests/helpers/answer_templates.py`` in every decoration.

A reply is built from a template, a random gold set, a preface, a closing remark and a
variant (markdown letters, option texts echoed, word casing), on English or French
multi-answer options or single-answer options. The rule checked: a reply is read as its
gold answer or left unparsed, never read as something else. The fast tier draws a
seeded sample; the slow tier draws 100,000 replies.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator

import pytest

from ebmeval.scorers import parse_choices
from tests.helpers.answer_templates import PREFIXES, SUFFIXES, TEMPLATES, Variant, render

MULTI_OPTIONS = [
    {
        "A": "The primary endpoint was met",
        "B": "The study was randomized",
        "C": "Confounding was controlled by adjustment",
        "D": "The sample size was calculated a priori",
        "E": "Losses to follow-up were reported",
    },
    {
        "A": "Le critère de jugement principal est atteint",
        "B": "L'étude est randomisée",
        "C": "Les facteurs de confusion sont pris en compte",
        "D": "Le nombre de sujets nécessaires a été calculé",
        "E": "Les perdus de vue sont rapportés",
    },
]
SINGLE_OPTIONS = {"A": "Lisinopril", "B": "Metoprolol", "C": "Amlodipine", "D": "Hydrochlorothiazide"}
VARIANTS = [
    Variant(markdown, echo, casing)
    for markdown, echo, casing in itertools.product((False, True), (False, True), ("as-is", "lower", "upper"))
]

Reply = tuple[str, dict[str, str], bool, list[str]]
"""A reply, its options, whether the task is multi-answer, and its gold letters."""


def replies(count: int, seed: int) -> Iterator[Reply]:
    """``count`` replies drawn with ``seed``: a fifth of them single-answer."""
    chance = random.Random(seed)
    for _ in range(count):
        multi = chance.random() < 0.8
        options = chance.choice(MULTI_OPTIONS) if multi else SINGLE_OPTIONS
        letters = list(options)
        gold = sorted(chance.sample(letters, chance.randint(1, len(letters)))) if multi else [chance.choice(letters)]
        body = render(chance.choice(TEMPLATES), gold, options, chance.choice(VARIANTS))
        yield chance.choice(PREFIXES) + body + chance.choice(SUFFIXES), options, multi, gold


def misread(count: int, seed: int) -> tuple[list[tuple[str, object]], int]:
    """The replies read as something other than their gold answer, and how many were read."""
    wrong: list[tuple[str, object]] = []
    read = 0
    for reply, options, multi, gold in replies(count, seed):
        parsed = parse_choices(reply, options, multi=multi)
        if parsed.parsed:
            read += 1
            if parsed.value != (gold if multi else gold[0]):
                wrong.append((reply, parsed.value))
    return wrong, read


def test_there_are_at_least_forty_templates() -> None:
    assert len(TEMPLATES) >= 40 and len(set(TEMPLATES)) == len(TEMPLATES)


def test_every_template_is_read_for_every_gold_set() -> None:
    """Not just "never wrong": each template, undecorated, is read exactly for all 31 gold sets of five options."""
    unread = []
    for options in MULTI_OPTIONS:
        for size in range(1, 6):
            for gold in itertools.combinations(options, size):
                for template in TEMPLATES:
                    parsed = parse_choices(render(template, gold, options), options, multi=True)
                    if parsed.value != list(gold):
                        unread.append((template, gold, parsed.method))
    assert unread == []


def test_a_seeded_sample_of_generated_replies_is_never_misread() -> None:
    wrong, read = misread(3_000, seed=25)
    assert wrong == []
    assert read > 2_000  # most decorated replies are read, not merely left unparsed


@pytest.mark.slow
def test_a_hundred_thousand_generated_replies_are_never_misread(capsys: pytest.CaptureFixture[str]) -> None:
    wrong, read = misread(100_000, seed=2025)
    with capsys.disabled():
        print(f"\ngenerated replies: 100000, read {read}, misread {len(wrong)}")
    assert wrong[:5] == []
