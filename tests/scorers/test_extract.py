from __future__ import annotations

import pytest

from ebmeval.models import strip_reasoning
from ebmeval.scorers import choice_parser, parse_choices
from ebmeval.tasks import Sample

YES_NO = {"A": "yes", "B": "no", "C": "maybe"}
FIVE = {"A": "observational", "B": "randomized", "C": "etiological", "D": "prospective", "E": "retrospective"}
FOUR = {
    "A": "Paralysis of the facial muscles.",
    "B": "Paralysis of the facial muscles and loss of taste.",
    "C": "Loss of taste only.",
    "D": "Hyperacusis.",
}

SINGLE = [
    ("B", "B", "whole"),
    (" b ", "B", "whole"),
    ("B.", "B", "whole"),
    ("(B)", "B", "whole"),
    ("[C]", "C", "whole"),
    ("B) no", "B", "whole"),
    ("A. yes", "A", "whole"),
    ("Answer: B", "B", "answer-line"),
    ("**Answer:** C", "C", "answer-line"),
    ("The answer is (B).", "B", "answer-line"),
    ("The correct answer is:\n\nC", "C", "answer-line"),
    ("Final answer: A", "A", "answer-line"),
    ("Réponse : c", "C", "answer-line"),
    ("Let me think.\nThe abstract reports a benefit.\nAnswer: A", "A", "answer-line"),
    ("Answer: A\n\nExplanation: the trial found a benefit, so B is wrong.", "A", "answer-line"),
    # "X is correct" sentences are their own source, "verdicts" (they add up across sentences)
    ("Option C is correct because the data are mixed.", "C", "verdicts"),
    ("B is correct because the study was negative.", "B", "verdicts"),
    ("yes", "A", "whole"),
    ("Yes.", "A", "whole"),
    ("No, the study found no difference.", "B", "whole"),
    ("Answer: maybe", "C", "answer-line"),
    ('{"answer": "B"}', "B", "json"),
    ('```json\n{"reasoning": "short", "answer": "C"}\n```', "C", "json"),
    ("The result is \\boxed{A}", "A", "boxed"),
    ("<think>Option A looks right... no, B.</think>\nB", "B", "whole"),
    ("reasoning without opening tag</think>\n\nAnswer: C", "C", "answer-line"),
    ("<think>\nThe answer is A\n</think>\n\nThe answer is B.", "B", "answer-line"),
    ("The trial was positive.\n\nB", "B", "last-line"),
    ("C\nThe evidence is inconclusive.", "C", "first-line"),
]

SINGLE_FOUR = [
    ("Paralysis of the facial muscles and loss of taste.", "B", "whole"),
    ("Answer: Hyperacusis", "D", "answer-line"),
    ("D. Hyperacusis", "D", "whole"),
]

MULTI = [
    ("B, E", ["B", "E"], "whole"),
    ("(b) and (e)", ["B", "E"], "whole"),
    ("A C E", ["A", "C", "E"], "whole"),
    ("a;c;e", ["A", "C", "E"], "whole"),
    ("E, A", ["A", "E"], "whole"),
    ("Answer: A, C, E", ["A", "C", "E"], "answer-line"),
    ("Answers: B", ["B"], "answer-line"),
    ("The correct answers are A and C.", ["A", "C"], "answer-line"),
    ("The correct options are: B, D", ["B", "D"], "answer-line"),
    ("Réponses : a, c et e", ["A", "C", "E"], "answer-line"),
    ("observational, etiological", ["A", "C"], "whole"),
    ("Answer: randomized and prospective", ["B", "D"], "answer-line"),
    ('{"answers": ["a", "c"]}', ["A", "C"], "json"),
    ('{"answer": "A, D"}', ["A", "D"], "json"),
    ("<think>Maybe A and B.</think>Answer: A, D", ["A", "D"], "answer-line"),
    ('["A", "C"]', ["A", "C"], "json"),
    (
        "Step 1: the study enrolled patients retrospectively.\nStep 2: it looks for causes.\n\nAnswer: A, C, E",
        ["A", "C", "E"],
        "answer-line",
    ),
]

UNPARSED = [
    ("", "empty"),
    ("   \n ", "empty"),
    ("<think>The question asks whether the trial", "thinking-unfinished"),
    ("<think>all reasoning</think>", "thinking-unfinished"),
    ("I don't know.", "no-answer-found"),
    ("A patient with this profile should be treated.", "no-answer-found"),
    ("B or C", "hedged: B or C"),  # the reason now says why
    ("None of the options is correct.", "no-answer-found"),
    ("The question cannot be answered from the abstract.", "no-answer-found"),
    ("Answer: F", "not-an-option: F"),  # the reason now says why
    ("To answer this question we need more data.", "no-answer-found"),
    ("Answer: B, C", "several-letters"),
    ("(b) and (c)", "several-letters"),
    ("B. yes", "letter-text-conflict"),
    ("Answer: (C) no", "letter-text-conflict"),
]


@pytest.mark.parametrize(("text", "value", "method"), SINGLE)
def test_single_answers(text: str, value: str, method: str) -> None:
    parsed = parse_choices(text, YES_NO)
    assert (parsed.value, parsed.parsed, parsed.method) == (value, True, method)


@pytest.mark.parametrize(("text", "value", "method"), SINGLE_FOUR)
def test_single_answers_by_option_text(text: str, value: str, method: str) -> None:
    parsed = parse_choices(text, FOUR)
    assert (parsed.value, parsed.method) == (value, method)


@pytest.mark.parametrize(("text", "value", "method"), MULTI)
def test_multi_answers(text: str, value: list[str], method: str) -> None:
    parsed = parse_choices(text, FIVE, multi=True)
    assert (parsed.value, parsed.parsed, parsed.method) == (value, True, method)


@pytest.mark.parametrize(("text", "reason"), UNPARSED)
def test_outputs_that_stay_unparsed(text: str, reason: str) -> None:
    parsed = parse_choices(text, YES_NO)
    assert parsed.parsed is False
    assert parsed.value is None
    assert parsed.method == reason


@pytest.mark.parametrize(
    "text", ["Options A and B are both plausible", "A or B", "I would pick the first one", "Answer: G"]
)
def test_multi_outputs_that_stay_unparsed(text: str) -> None:
    assert parse_choices(text, FIVE, multi=True).parsed is False


def test_lowercase_option_keys_keep_their_case() -> None:
    parsed = parse_choices("B, E", {"a": "x", "b": "y", "e": "z"}, multi=True)
    assert parsed.value == ["b", "e"]


def test_no_options_is_unparsed() -> None:
    assert parse_choices("A", {}).method == "no-options"


def test_strip_reasoning() -> None:
    assert strip_reasoning("<think>x</think>A") == "A"
    assert strip_reasoning("<THINKING>x</THINKING> A <think>y</think>") == " A "
    assert strip_reasoning("x</think>A") == "A"
    assert strip_reasoning("A<think>cut off") == "A"


def test_choice_parser_reads_sample_choices() -> None:
    sample = Sample(id="1", input="q", target=["A"], choices=FIVE)
    assert choice_parser(multi=True)("A and E", sample).value == ["A", "E"]
    assert choice_parser()("A and E", sample).parsed is False


def test_a_bare_letter_compiles_no_pattern_of_the_option_texts() -> None:
    """Option texts differ per question: reading "A" or "The answer is B." must not compile their patterns."""
    from ebmeval.scorers import _extract

    before = _extract._echo_pattern.cache_info().currsize + _extract._text_pattern.cache_info().currsize
    for i in range(50):
        choices = {letter: f"treatment {i}-{letter} for condition {i}" for letter in "ABCD"}
        assert parse_choices("A", choices).value == "A"
        assert parse_choices("The answer is B.", choices).value == "B"
    after = _extract._echo_pattern.cache_info().currsize + _extract._text_pattern.cache_info().currsize
    assert after == before
    # an echoed option text is still read (and its pattern compiled once)
    choices = {"A": "aspirin daily", "B": "warfarin"}
    assert parse_choices("A. aspirin daily", choices).value == "A"
