"""Answer templates for the generative extraction test: one line per style, rendered for any gold set.

A template is a ``str.format`` string whose fields render the gold letters (or every
option judged) in one shape; ``Variant`` adds the decorations real replies carry:
markdown emphasis on the letters, each letter's option text echoed after it on line
lists, and the casing of every word. ``render`` fills a template. To cover a new style,
add one line to ``TEMPLATES``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

TEMPLATES: list[str] = [
    "{comma}",
    "The answer is {oxford}.",
    "The answers are {and}.",
    "Answer: {comma}",
    "ANSWER: {tight}",
    "ANSWER: {run}",
    "Final answer: {and}",
    "The correct answers are:\n{lines}",
    "Correct options:\n{bullets}",
    "{bullets}",
    "{numbered}",
    "{dash}",
    "{slash}",
    "{semi}",
    "{run}",
    "{array}",
    '{{"answer": {array}}}',
    '{{"step_by_step_thinking": "Each option was weighed against the methods.", "answer_choice": "{comma}"}}',
    'Here is my answer:\n```json\n{{"reasoning": "See the methods.", "correct_answers": {array}}}\n```',
    "\\boxed{{{comma}}}",
    "The final answer is $\\boxed{{{comma}}}$.",
    "I would choose {and}.",
    "Therefore, {and}.",
    "So the answer is {and}.",
    "The correct options are {oxford}.",
    "The answer is {paren}.",
    "Answer: {and}.\n\nExplanation: the other options are not supported by the article.",
    "Réponse(s) : {comma}",
    "Réponse finale : {et}",
    "Les bonnes réponses sont {et}.",
    "Les réponses correctes sont {et}.",
    "Après lecture de l'article, les propositions {et} sont exactes.",
    "Je choisis {et}.",
    "Il faut cocher {et}.",
    "答案：{run}",
    "正确答案是{zh}。",
    "{yes_no}",
    "{true_false}",
    "{vrai_faux}",
    "{zh_verdicts}",
    "{paren_verdicts}",
    "{text_verdicts}",
    "{is_correct}",
    "{each_correct}",
    "Options {and} are correct.",
    "{texts}",
    "The answer is {other_and}. Actually, on second thought, {and}.",
    "Answer: {other_comma}\n\nOn reflection, the correct answer is {and}.",
    "Réponse : {other_comma}. Finalement, {et}.",
]
"""Every style of the generative test, as a ``str.format`` template."""

PREFIXES = [
    "",
    "Let me think step by step. The cohort was followed for two years.\n\n",
    "<think>Option B was tempting, but the allocation was not random.</think>\n",
    "After reading the methods section carefully:\n\n",
    "Sure! ",
    "Analysons chaque proposition.\n",
    "The primary endpoint is reported in Table 2 and confounders were adjusted for.\n\n",
]
"""Reasoning or preamble before the answer."""

SUFFIXES = [
    "",
    "\n\nHope this helps!",
    "\n\nThese choices follow from the methods section.",
    " (see Table 2)",
    "\n\nI considered the other options, but the article does not support them.",
]
"""Closing remarks after the answer."""


@dataclass(frozen=True)
class Variant:
    """Decorations of one rendering: markdown letters, option texts echoed on line lists, word casing."""

    markdown: bool = False
    echo: bool = False
    casing: str = "as-is"
    """``as-is``, ``lower`` or ``upper``: every word of two letters or more, except capitals and LaTeX commands."""


def render(template: str, gold: Sequence[str], options: dict[str, str], variant: Variant = Variant()) -> str:
    """``template`` filled for the ``gold`` letters (in option order) among ``options``."""
    reply = template.format_map(_Fields(gold, options, variant))
    if variant.casing == "as-is":
        return reply
    change: Callable[[str], str] = str.lower if variant.casing == "lower" else str.upper
    return re.sub(r"(?<![\\\w])[^\W\d_]{2,}", lambda word: word[0] if word[0].isupper() else change(word[0]), reply)


class _Fields(dict[str, str]):
    """The template fields, each rendered when the template asks for it."""

    def __init__(self, gold: Sequence[str], options: dict[str, str], variant: Variant) -> None:
        super().__init__()
        self.gold, self.options, self.variant = list(gold), options, variant
        rest = [letter for letter in options if letter not in gold]
        self.other = rest or self.gold[:-1] or [next(letter for letter in options if letter != gold[0])]

    def __missing__(self, key: str) -> str:
        letters = self.other if key.startswith("other_") else self.gold
        return _RENDER[key.removeprefix("other_")](self, letters)

    def mark(self, letter: str) -> str:
        return f"**{letter}**" if self.variant.markdown else letter

    def item(self, letter: str) -> str:
        """A letter on a line list, its option text echoed after it in the ``echo`` variant."""
        return f"{self.mark(letter)}. {self.options[letter]}" if self.variant.echo else self.mark(letter)

    def marked(self, letters: Sequence[str]) -> list[str]:
        return [self.mark(letter) for letter in letters]

    def judged(self, good: str, bad: str, sep: str, joiner: str) -> str:
        """Every option with its verdict: ``A<sep>good`` or ``B<sep>bad``, joined."""
        return joiner.join(f"{self.mark(letter)}{sep}{good if letter in self.gold else bad}" for letter in self.options)


def _joined(letters: Sequence[str], last: str, *, oxford: bool = False) -> str:
    if len(letters) == 1:
        return letters[0]
    return f"{', '.join(letters[:-1])}{',' if oxford and len(letters) > 2 else ''} {last} {letters[-1]}"


def _sentences(fields: _Fields) -> Iterator[str]:
    for letter in fields.options:
        yield f"{fields.mark(letter)} is {'correct' if letter in fields.gold else 'not'}"


_RENDER: dict[str, Callable[[_Fields, list[str]], str]] = {
    "comma": lambda f, g: ", ".join(f.marked(g)),
    "tight": lambda f, g: ",".join(f.marked(g)),
    "and": lambda f, g: _joined(f.marked(g), "and"),
    "oxford": lambda f, g: _joined(f.marked(g), "and", oxford=True),
    "et": lambda f, g: _joined(f.marked(g), "et"),
    "paren": lambda f, g: _joined([f"({f.mark(letter)})" for letter in g], "and"),
    "dash": lambda f, g: " - ".join(f.marked(g)),
    "slash": lambda f, g: "/".join(f.marked(g)),
    "semi": lambda f, g: "; ".join(f.marked(g)),
    "run": lambda f, g: f.mark("".join(g)),
    "zh": lambda f, g: "、".join(f.marked(g)),
    "array": lambda f, g: json.dumps(list(g)),
    "lines": lambda f, g: "\n".join(f.item(letter) for letter in g),
    "bullets": lambda f, g: "\n".join(f"- {f.item(letter)}" for letter in g),
    "numbered": lambda f, g: "\n".join(f"{n}. {f.item(letter)}" for n, letter in enumerate(g, 1)),
    "texts": lambda f, g: "; ".join(f.options[letter] for letter in g),
    "yes_no": lambda f, g: f.judged("Yes", "No", ". ", "\n"),
    "true_false": lambda f, g: f.judged("True", "False", ": ", "\n"),
    "vrai_faux": lambda f, g: f.judged("vrai", "faux", " : ", " ; "),
    "zh_verdicts": lambda f, g: f.judged("正确", "错误", "：", "\n"),
    "paren_verdicts": lambda f, g: f.judged("(correct)", "(incorrect)", " ", ", "),
    "text_verdicts": lambda f, g: "\n".join(
        f"{f.mark(letter)}. {text} - {'Yes' if letter in f.gold else 'No'}" for letter, text in f.options.items()
    ),
    "is_correct": lambda f, g: ", ".join(_sentences(f)) + ".",
    "each_correct": lambda f, g: " ".join(f"Option {f.mark(letter)} is correct." for letter in g),
}
