"""Reference baselines of multiple-choice tasks, served as models.

A baseline sees only the messages, like any model: it reads the option letters from
the last ``Options:`` block of the prompt (the ``X. text`` lines every built-in
multiple-choice prompt ends with; under another prompt set, that set's header, such as
``Réponses :``) and answers with letters, e.g. ``"A, C"``.

- ``baseline/first-option``: the first option.
- ``baseline/most-frequent-K`` (K ≥ 1): the K options that are most often correct,
  from a frequency ranking given as the ``ranking`` option (letters, most frequent
  first). The default is CareMedEval's ranking ``CABDE`` (its correct answers: C 295,
  A 286, B 280, D 270, E 259), the dataset these baselines were published for; pass
  ``ranking`` for another task (``ebmeval.builtin_tasks.caremedeval.answer_ranking``
  computes one). Ranked letters missing from the options are skipped and, when fewer
  than K remain, the remaining options follow in display order.
- ``baseline/random``: on a single-answer question, one option drawn uniformly (the
  chance baseline: accuracy 1/number of options in expectation). On a multi-answer
  question, K options drawn uniformly without replacement, with K uniform in
  ``[min_options, max_options]`` (default 1–3, capped at the number of options).
  The draw is seeded by ``GenerateConfig.seed`` when set, else the ``seed`` option
  (default 0), together with the prompt, so each question gets the same answer
  whatever the order or concurrency of the run.
- ``baseline/majority`` (single-answer tasks): the gold letter most common in a
  task's dataset, learnt when the model is built from the ``task`` option (a task
  name, e.g. ``--model-arg task=mirage/medqa``; its default arguments), counting every
  sample's gold letter, or given as the ``answer`` option. Ties are broken by a draw
  seeded by ``seed``. On a question whose options lack that letter it answers the next
  most common one present. The counts and the letter are recorded in the run's model
  description. Learning from the evaluated dataset is the usual definition of a
  majority-class baseline: it is an upper bound of what answering by letter
  frequency alone can reach, not a model that could be deployed.

Whether a question takes one answer or several is read from the prompt: the answer
format sentence of the built-in templates (``format/single``: "Exactly one option is
correct", ``format/multi``: "One or more options are correct"), or of another prompt
set (its ``format_single`` and ``format_multi`` text up to their first field). For prompts
without one, the ``answers`` option (``single`` or ``multi``) says which; ``auto`` (default)
refuses such prompts rather than guess.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Literal

from ..._util.errors import ConfigError, ModelError
from ..._util.hashing import stable_hash
from .._api import ModelAPI, modelapi
from .._types import ChatMessage, GenerateConfig, ModelOutput

DEFAULT_RANKING = "CABDE"
"""CareMedEval's answer letters by how often they are correct, most frequent first."""

_OPTION_LINE = re.compile(r"([A-Za-z])[.)]\s")
_MOST_FREQUENT = re.compile(r"most-frequent-([1-9][0-9]*)")
SINGLE_MARK = "Exactly one option is correct"
"""The start of the ``format/single`` prompt template: the question takes one answer."""
MULTI_MARK = "One or more options are correct"
"""The start of the ``format/multi`` prompt template: the question takes one or more answers."""
Answers = Literal["auto", "single", "multi"]


def _prompt_set_texts() -> tuple[re.Pattern[str], list[tuple[str, Literal["single", "multi"]]]]:
    """The option-block headers (``Options:``, ``Réponses :`` …) and answer-format sentences of every prompt set."""
    from ...prompts import prompt_sets

    sets = [prompt_sets.get(name) for name in prompt_sets]
    headers = {p.options.text.split("{", 1)[0].strip() for p in sets}
    marks: list[tuple[str, Literal["single", "multi"]]] = [(SINGLE_MARK, "single"), (MULTI_MARK, "multi")]
    for p in sets:
        marks += [(p.format_single.text.split("{", 1)[0], "single"), (p.format_multi.text.split("{", 1)[0], "multi")]
    pattern = re.compile("^(?:" + "|".join(re.escape(h) for h in sorted(headers)) + r")\s*$", re.M)
    return pattern, marks


def prompt_options(messages: Sequence[ChatMessage]) -> list[str]:
    """The option letters of the last options block in the last user message, in display order."""
    prompts = [message.content for message in messages if message.role == "user"]
    headers = list(_prompt_set_texts()[0].finditer(prompts[-1])) if prompts else []
    if not headers:
        raise ModelError("baseline models need a prompt with an 'Options:' block of 'X. text' lines")
    letters = []
    for line in prompts[-1][headers[-1].end() :].lstrip("\n").splitlines():
        match = _OPTION_LINE.match(line)
        if match is None:
            break
        letters.append(match.group(1))
    if not letters:
        raise ModelError("baseline models need 'X. text' option lines after 'Options:'")
    return letters


def answer_kind(messages: Sequence[ChatMessage], answers: Answers = "auto") -> Literal["single", "multi"]:
    """Whether the question in ``messages`` takes one answer or several (see the module docstring)."""
    if answers != "auto":
        return answers
    prompts = [message.content for message in messages if message.role == "user"]
    last = prompts[-1] if prompts else ""
    found = max(((last.rfind(mark), kind) for mark, kind in _prompt_set_texts()[1]), key=lambda pair: pair[0])
    if found[0] == -1:
        raise ModelError(
            "baseline models need the prompt's answer format sentence "
            f"('{SINGLE_MARK}' or '{MULTI_MARK}'), or the option answers=single|multi"
        )
    return found[1]


def gold_counts(task: str) -> Counter[str]:
    """How often each letter is the gold answer in ``task``'s dataset (default task arguments).

    Raises ``ConfigError`` for a multi-answer task (a sample with several gold letters).
    """
    from ...tasks import create_task

    counts: Counter[str] = Counter()
    for sample in create_task(task).dataset:
        if len(sample.targets) != 1:
            raise ConfigError("task", f"baseline/majority is for single-answer tasks; '{task}' has several answers")
        counts[sample.targets[0]] += 1
    return counts


@dataclass(eq=False)
class BaselineModel(ModelAPI):
    """A baseline answering from the option letters alone (see the module docstring).

    ``counts`` (majority): how often each letter is the gold answer; it sets the ranking.
    """

    max_concurrency = 64

    kind: str
    _: KW_ONLY
    seed: int = 0
    ranking: str = DEFAULT_RANKING
    min_options: int = 1
    max_options: int = 3
    answers: Answers = "auto"
    counts: dict[str, int] = field(default_factory=dict)
    task: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("first-option", "random", "majority") and not _MOST_FREQUENT.fullmatch(self.kind):
            raise ConfigError(
                "model", f"unknown baseline '{self.kind}' (known: first-option, majority, most-frequent-K, random)"
            )
        if not 1 <= self.min_options <= self.max_options:
            raise ConfigError(
                "min_options",
                f"need 1 <= min_options <= max_options, got {self.min_options}, {self.max_options}",
            )
        if self.answers not in ("auto", "single", "multi"):
            raise ConfigError("answers", f"must be auto, single or multi, not {self.answers!r}")
        self.name = f"baseline/{self.kind}"
        self.counts = dict(self.counts)
        if self.kind == "majority":
            if not self.counts:
                raise ConfigError("task", "baseline/majority needs the option task=NAME (or answer=LETTER)")
            # most common first; ties in a seeded random order, so no letter is favoured by its name
            tie_break = random.Random(self.seed).sample(sorted(self.counts), len(self.counts))
            self.ranking = "".join(sorted(tie_break, key=lambda letter: -self.counts[letter]))

    def describe(self) -> dict[str, Any]:
        """The baseline and the options that change its answers."""
        described: dict[str, Any] = {"name": self.name}
        if self.kind == "random":
            described.update(seed=self.seed, min_options=self.min_options, max_options=self.max_options)
        elif self.kind.startswith("most-frequent"):
            described["ranking"] = self.ranking
        elif self.kind == "majority":
            described.update(task=self.task, counts=self.counts, seed=self.seed, answer=self.ranking[0])
        if self.answers != "auto":
            described["answers"] = self.answers
        return described

    def choose(self, letters: Sequence[str], messages: Sequence[ChatMessage], seed: int) -> list[str]:
        """The letters this baseline answers among ``letters``, in display order."""
        if self.kind == "first-option":
            return [letters[0]]
        if self.kind == "random":
            key = stable_hash([seed, [message.model_dump() for message in messages]], 16)
            rng = random.Random(int(key, 16))
            if answer_kind(messages, self.answers) == "single":
                return [rng.choice(list(letters))]
            count = rng.randint(min(self.min_options, len(letters)), min(self.max_options, len(letters)))
            drawn = set(rng.sample(list(letters), count))
            return [letter for letter in letters if letter in drawn]
        if self.kind == "majority":
            if answer_kind(messages, self.answers) == "multi":
                raise ModelError("baseline/majority answers single-answer questions; use most-frequent-K for these")
            wanted = 1
        else:
            wanted = int(self.kind.rsplit("-", 1)[1])
        by_case = {letter.upper(): letter for letter in letters}
        ranked = [by_case[letter] for letter in self.ranking.upper() if letter in by_case]
        chosen = set((ranked + [letter for letter in letters if letter not in ranked])[:wanted])
        return [letter for letter in letters if letter in chosen]

    async def generate(self, messages: Sequence[ChatMessage], config: GenerateConfig) -> ModelOutput:
        """Answer with letters, e.g. ``"A, C"``."""
        letters = prompt_options(messages)
        seed = config.seed if config.seed is not None else self.seed
        return ModelOutput(text=", ".join(self.choose(letters, messages, seed)), model=self.name, finish_reason="stop")


def _int_option(options: dict[str, object], name: str, default: int) -> int:
    value = options.pop(name, default)
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ConfigError(name, f"must be an integer, not {value!r}")
    try:
        return int(value)
    except ValueError:
        raise ConfigError(name, f"must be an integer, not {value!r}") from None


_KNOWN_OPTIONS = "answer, answers, max_options, min_options, ranking, seed, task"


@modelapi("baseline")
def baseline(name: str, **options: object) -> ModelAPI:
    """``baseline/first-option``, ``baseline/majority``, ``baseline/most-frequent-K`` or ``baseline/random``.

    Options: ``seed`` (random; majority's tie-break), ``min_options``/``max_options``
    (random, multi-answer questions), ``ranking`` (most-frequent-K, letters most frequent
    first), ``task`` or ``answer`` (majority), ``answers`` (``auto``, ``single``, ``multi``).
    """
    seed = _int_option(options, "seed", 0)
    low = _int_option(options, "min_options", 1)
    high = _int_option(options, "max_options", 3)
    ranking = options.pop("ranking", DEFAULT_RANKING)
    if not isinstance(ranking, str) or not ranking.isalpha():
        raise ConfigError("ranking", f"must be option letters, most frequent first, not {ranking!r}")
    answers = options.pop("answers", "auto")
    if answers not in ("auto", "single", "multi"):
        raise ConfigError("answers", f"must be auto, single or multi, not {answers!r}")
    task, answer = options.pop("task", None), options.pop("answer", None)
    counts: dict[str, int] = {}
    if name == "majority":
        if (task is None) == (answer is None):
            raise ConfigError("task", "baseline/majority needs exactly one of the options task=NAME and answer=LETTER")
        if answer is not None:
            if not isinstance(answer, str) or len(answer) != 1 or not answer.isalpha():
                raise ConfigError("answer", f"must be one option letter, not {answer!r}")
            counts = {answer: 1}
        else:
            if not isinstance(task, str):
                raise ConfigError("task", f"must be a task name, not {task!r}")
            counts = dict(gold_counts(task))
    elif task is not None or answer is not None:
        raise ConfigError("task" if task is not None else "answer", "only baseline/majority takes this option")
    if options:
        raise ConfigError(sorted(options)[0], f"unknown option of baseline models (known: {_KNOWN_OPTIONS})")
    return BaselineModel(
        name,
        seed=seed,
        ranking=ranking,
        min_options=low,
        max_options=high,
        answers="single" if answers == "single" else "multi" if answers == "multi" else "auto",
        counts=counts,
        task=task if isinstance(task, str) else None,
    )
