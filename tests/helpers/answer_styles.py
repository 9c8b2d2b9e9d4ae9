"""Answers rendered the way real models and harnesses write them, one function per style.

Each style takes the letters of an answer (in option order) and the options, and returns
a reply. The multi-answer styles are the formats of the extraction corpus
(``tests/scorers/extraction_corpus.yaml``); tests render gold answers in each and check
that the parser reads them completely or marks them unparsed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

Style = Callable[[Sequence[str], dict[str, str]], str]


def _join(letters: Sequence[str], last: str, *, oxford: bool = False) -> str:
    if len(letters) == 1:
        return letters[0]
    head = ", ".join(letters[:-1])
    return f"{head}{',' if oxford and len(letters) > 2 else ''} {last} {letters[-1]}"


def _thinking(options: dict[str, str]) -> str:
    return " ".join(f"Option {letter} says: {text.lower()}." for letter, text in options.items())


STYLES: dict[str, Style] = {
    "comma": lambda letters, _: ", ".join(letters),
    "answer-is-oxford": lambda letters, _: f"The answer is {_join(letters, 'and', oxford=True)}.",
    "one-per-line": lambda letters, options: (
        "The correct answers are:\n" + "\n".join(f"{letter}. {options[letter]}" for letter in letters)
    ),
    "bullets": lambda letters, _: "\n".join(f"- {letter}" for letter in letters),
    "dashes": lambda letters, _: " - ".join(letters),
    "answers-dots": lambda letters, _: "Answers: " + " ".join(f"{letter}." for letter in letters),
    "option-verdicts": lambda letters, _: " ".join(f"Option {letter} is correct." for letter in letters),
    "letter-run": lambda letters, _: "".join(letters),
    "python-list": lambda letters, _: repr(list(letters)),
    "reponses-s": lambda letters, _: f"Réponse(s) : {', '.join(letters)}",
    "reponse-finale": lambda letters, _: f"Réponse finale : {', '.join(letters)}",
    "propositions-exactes": lambda letters, _: (
        f"Après lecture de l'article, les propositions {_join(letters, 'et')} sont exactes."
        if len(letters) > 1
        else f"Après lecture de l'article, la proposition {letters[0]} est exacte."
    ),
    "i-would-choose": lambda letters, _: f"I would choose {_join(letters, 'and')}.",
    "therefore": lambda letters, _: f"Therefore, {_join(letters, 'and')}.",
    "json-answer": lambda letters, _: json.dumps({"answer": list(letters)}),
    "medrag-json": lambda letters, options: json.dumps(
        {"step_by_step_thinking": _thinking(options), "answer_choice": ", ".join(letters)}
    ),
    "json-fence-in-prose": lambda letters, _: (
        "Here is my answer:\n```json\n"
        + json.dumps({"reasoning": "See the methods section.", "correct_answers": list(letters)}, indent=2)
        + "\n```\nI hope this helps."
    ),
    "json-nested": lambda letters, _: json.dumps({"result": {"final_answer": {"letters": list(letters)}}}),
    "inspect": lambda letters, options: f"{_thinking(options)}\n\nANSWER: {','.join(letters)}",
    "boxed": lambda letters, _: f"The final answer is $\\boxed{{{', '.join(letters)}}}$",
    "markdown": lambda letters, _: "**Answer:** " + ", ".join(f"**{letter}**" for letter in letters),
    "think": lambda letters, options: f"<think>{_thinking(options)} Which hold?</think>\n\n{', '.join(letters)}",
    "option-text": lambda letters, options: "; ".join(options[letter] for letter in letters),
    "cot-then-answer": lambda letters, options: (
        "Let's review each option.\n"
        + "\n".join(
            f"Option {letter} is {'correct' if letter in letters else 'not supported'}: {text}."
            for letter, text in options.items()
        )
        + f"\n\nAnswer: {', '.join(letters)}"
    ),
}
"""Every style, by name."""
