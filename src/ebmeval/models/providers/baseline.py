"""Reference baselines of multiple-choice tasks, served as models.

A baseline sees only the messages, like any model: it reads the option letters from
the last ``Options:`` block of the prompt (the ``X. text`` lines every built-in
multiple-choice prompt ends with) and answers with letters, e.g. ``"A, C"``.

- ``baseline/first-option``: the first option.
- ``baseline/most-frequent-K`` (K ≥ 1): the K options that are most often correct,
  from a frequency ranking given as the ``ranking`` option (letters, most frequent
  first). The default is CareMedEval's ranking ``CABDE`` (its correct answers: C 295,
  A 286, B 280, D 270, E 259), the dataset these baselines were published for; pass
  ``ranking`` for another task (``ebmeval.benchmarks.caremedeval.answer_ranking``
  computes one). Ranked letters missing from the options are skipped and, when fewer
  than K remain, the remaining options follow in display order.
- ``baseline/random``: K options drawn uniformly without replacement, with K uniform
  in ``[min_options, max_options]`` (default 1–3, capped at the number of options).
  The draw is seeded by ``GenerateConfig.seed`` when set, else the ``seed`` option
  (default 0), together with the prompt, so each question gets the same answer
  whatever the order or concurrency of the run.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from typing import Any

from ..._util.errors import ConfigError, ModelError
from ..._util.hashing import stable_hash
from .._api import ModelAPI, modelapi
from .._types import ChatMessage, GenerateConfig, ModelOutput

DEFAULT_RANKING = "CABDE"
"""CareMedEval's answer letters by how often they are correct, most frequent first."""

_OPTIONS_HEADER = re.compile(r"^Options:\s*$", re.M)
_OPTION_LINE = re.compile(r"([A-Za-z])[.)]\s")
_MOST_FREQUENT = re.compile(r"most-frequent-([1-9][0-9]*)")


def prompt_options(messages: Sequence[ChatMessage]) -> list[str]:
    """The option letters of the last ``Options:`` block in the last user message, in display order."""
    prompts = [message.content for message in messages if message.role == "user"]
    headers = list(_OPTIONS_HEADER.finditer(prompts[-1])) if prompts else []
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


class BaselineModel(ModelAPI):
    """A baseline answering from the option letters alone (see the module docstring)."""

    max_concurrency = 64

    def __init__(
        self,
        kind: str,
        *,
        seed: int = 0,
        ranking: str = DEFAULT_RANKING,
        min_options: int = 1,
        max_options: int = 3,
    ) -> None:
        if kind not in ("first-option", "random") and not _MOST_FREQUENT.fullmatch(kind):
            raise ConfigError("model", f"unknown baseline '{kind}' (known: first-option, most-frequent-K, random)")
        if not 1 <= min_options <= max_options:
            raise ConfigError("min_options", f"need 1 <= min_options <= max_options, got {min_options}, {max_options}")
        self.kind = kind
        self.name = f"baseline/{kind}"
        self.seed = seed
        self.ranking = ranking
        self.min_options = min_options
        self.max_options = max_options

    def describe(self) -> dict[str, Any]:
        """The baseline and the options that change its answers."""
        described: dict[str, Any] = {"name": self.name}
        if self.kind == "random":
            described.update(seed=self.seed, min_options=self.min_options, max_options=self.max_options)
        elif self.kind.startswith("most-frequent"):
            described["ranking"] = self.ranking
        return described

    def choose(self, letters: Sequence[str], messages: Sequence[ChatMessage], seed: int) -> list[str]:
        """The letters this baseline answers among ``letters``, in display order."""
        if self.kind == "first-option":
            return [letters[0]]
        if self.kind == "random":
            key = stable_hash([seed, [message.model_dump() for message in messages]], 16)
            rng = random.Random(int(key, 16))
            count = rng.randint(min(self.min_options, len(letters)), min(self.max_options, len(letters)))
            drawn = set(rng.sample(list(letters), count))
            return [letter for letter in letters if letter in drawn]
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


@modelapi("baseline")
def baseline(name: str, **options: object) -> ModelAPI:
    """``baseline/first-option``, ``baseline/most-frequent-K`` or ``baseline/random``.

    Options: ``seed`` (random), ``min_options``/``max_options`` (random),
    ``ranking`` (most-frequent-K, letters most frequent first).
    """
    seed = _int_option(options, "seed", 0)
    low = _int_option(options, "min_options", 1)
    high = _int_option(options, "max_options", 3)
    ranking = options.pop("ranking", DEFAULT_RANKING)
    if not isinstance(ranking, str) or not ranking.isalpha():
        raise ConfigError("ranking", f"must be option letters, most frequent first, not {ranking!r}")
    if options:
        raise ConfigError(
            sorted(options)[0], "unknown option of baseline models (known: seed, ranking, min_options, max_options)"
        )
    return BaselineModel(name, seed=seed, ranking=ranking, min_options=low, max_options=high)
