"""Scorers of multiple-choice answers: single-answer accuracy and the multi-answer exam metrics.

How unparsed output counts is the ``unparsed`` option of each scorer:

- ``"zero"`` (default): an unparsed reply is graded as the empty answer, which is
  wrong on every metric (accuracy, exact match, F1, Hamming and LCA are all 0). The
  aggregate is then the mean over every sample, as the published tables count it
  ("no answer" scores 0 in LCA exams); the unparsed count is reported beside it.
- ``"skip"``: the metrics are ``None`` for an unparsed reply, so the aggregate is the
  mean over parsed replies only and the unparsed ones are counted apart.

``Score.metadata["unparsed"]`` is ``True`` for unparsed replies under both policies.

With ``also_lenient`` (set by tasks run with ``answer_format="strict"``) each metric is
recorded twice: under its name for the task's reading of the reply, and with the suffix
``_lenient`` for the lenient reading (:func:`~ebmeval.scorers.parse_choices`) of the same
output, so summaries show how much the reading changed the score.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Sequence
from typing import Literal

from .._util.errors import ConfigError
from ..tasks import Generation, ParsedAnswer, Sample, SampleContext, Score, scorer
from ._extract import parse_choices

Unparsed = Literal["zero", "skip"]
"""How an unparsed reply counts: as a wrong answer, or left out of the mean."""

LCA_CREDIT: tuple[float, ...] = (1.0, 0.5, 0.25)
"""LCA exam credit by the number of discordant options: 0 → 1, 1 → 0.5, 2 → 0.25, more → 0."""


def exact_match(predicted: Collection[str], gold: Collection[str]) -> float:
    """``1`` when ``P = G``, else ``0`` (averaged over questions: the exact match ratio)."""
    return float(set(predicted) == set(gold))


def set_f1(predicted: Collection[str], gold: Collection[str]) -> float:
    """Set F1 of one question: ``2|P ∩ G| / (|P| + |G|)``; ``0`` when both are empty."""
    total = len(set(predicted)) + len(set(gold))
    return 2 * len(set(predicted) & set(gold)) / total if total else 0.0


def hamming_score(predicted: Collection[str], gold: Collection[str]) -> float:
    """Hamming score of one question: ``|P ∩ G| / |P ∪ G|``; ``0`` when both are empty."""
    union = set(predicted) | set(gold)
    return len(set(predicted) & set(gold)) / len(union) if union else 0.0


def lca_score(
    predicted: Collection[str],
    gold: Collection[str],
    *,
    essential: Collection[str] = (),
    unacceptable: Collection[str] = (),
    credit: Sequence[float] = LCA_CREDIT,
) -> float:
    """The French LCA exam grade of one question.

    ``0`` when no option is chosen, an essential answer is missing (``E ⊄ P``) or an
    unacceptable answer is chosen (``U ∩ P ≠ ∅``); otherwise ``credit[d]`` with
    ``d = |P Δ G|`` the number of discordant options, and ``0`` when ``d ≥ len(credit)``.
    """
    chosen = set(predicted)
    if not chosen or not set(essential) <= chosen or chosen & set(unacceptable):
        return 0.0
    discordant = len(chosen ^ set(gold))
    return credit[discordant] if discordant < len(credit) else 0.0


class _ChoiceScorer(ABC):
    """What the choice scorers share: the ``unparsed`` policy, the optional lenient reading and the score."""

    name: str
    multi = False
    """Whether an answer holds several letters (the lenient parser then reads them all)."""
    also_lenient = False
    """Whether the lenient reading is graded too (set on the instance, so specs without it stay as they were)."""

    def __init__(self, unparsed: Unparsed = "zero", also_lenient: bool = False) -> None:
        if unparsed not in ("zero", "skip"):
            raise ConfigError("unparsed", f"must be 'zero' or 'skip', not {unparsed!r}")
        self.unparsed = unparsed
        if also_lenient:
            self.also_lenient = True

    @abstractmethod
    def grade_answer(self, answer: ParsedAnswer, sample: Sample) -> dict[str, float | None]:
        """The metrics of ``answer``, by the ``unparsed`` policy when it is unparsed."""

    @abstractmethod
    def explain(self, answer: ParsedAnswer, sample: Sample) -> str:
        """The explanation of a parsed ``answer``'s score: the answer and the target."""

    async def __call__(self, sample: Sample, generation: Generation, ctx: SampleContext) -> Score:
        """Grade one answer."""
        answer = generation.answer
        values = self.grade_answer(answer, sample)
        if self.also_lenient:
            lenient = parse_choices(generation.output, sample.choices or {}, multi=self.multi)
            values |= _lenient(self.grade_answer(lenient, sample))
        if not answer.parsed:
            return Score(values=values, explanation="unparsed", metadata={"unparsed": True})
        return Score(values=values, explanation=self.explain(answer, sample), metadata={"unparsed": False})


class Accuracy(_ChoiceScorer):
    """Single-answer accuracy: ``1`` when the parsed answer equals the target, else ``0``.

    Letters compare case-insensitively; a list target is matched as a set.
    Metric key: ``accuracy`` (its mean is the proportion correct).
    """

    name = "accuracy"

    def grade(self, answer: ParsedAnswer, sample: Sample) -> dict[str, float | None]:
        """The accuracy of ``answer``, by the ``unparsed`` policy when it is unparsed."""
        if not answer.parsed:
            return {"accuracy": None if self.unparsed == "skip" else 0.0}
        return {"accuracy": float(_letters(answer.value) == {target.strip().upper() for target in sample.targets})}

    def grade_answer(self, answer: ParsedAnswer, sample: Sample) -> dict[str, float | None]:
        """:meth:`grade`: a single answer is graded as it was read."""
        return self.grade(answer, sample)

    def explain(self, answer: ParsedAnswer, sample: Sample) -> str:
        """``answer 'B', target 'B'``."""
        return f"answer {answer.value!r}, target {sample.target!r}"


class MultiAnswer(_ChoiceScorer):
    """The multi-answer metrics of CareMedEval, per question (P predicted, G gold letters).

    Metric keys, each averaged over questions by the run:

    - ``exact_match``: ``[P = G]`` (mean: exact match ratio).
    - ``f1``: ``2|P ∩ G| / (|P| + |G|)`` (mean: sample-averaged set F1).
    - ``hamming``: ``|P ∩ G| / |P ∪ G|`` (mean: Hamming score).
    - ``lca``: the exam grade of :func:`lca_score`, with the sample's
      ``metadata["essential_answers"]`` and ``metadata["unacceptable_answers"]``.
    """

    name = "multi_answer"
    multi = True

    def __init__(
        self, unparsed: Unparsed = "zero", lca_credit: Sequence[float] = LCA_CREDIT, also_lenient: bool = False
    ) -> None:
        super().__init__(unparsed, also_lenient)
        self.lca_credit = tuple(lca_credit)

    def grade(self, predicted: Collection[str], sample: Sample) -> dict[str, float | None]:
        """The four metrics of ``predicted`` letters against ``sample``."""
        gold = {target.upper() for target in sample.targets}
        chosen = {letter.upper() for letter in predicted}
        essential = {letter.upper() for letter in sample.metadata.get("essential_answers", [])}
        unacceptable = {letter.upper() for letter in sample.metadata.get("unacceptable_answers", [])}
        return {
            "exact_match": exact_match(chosen, gold),
            "f1": set_f1(chosen, gold),
            "hamming": hamming_score(chosen, gold),
            "lca": lca_score(chosen, gold, essential=essential, unacceptable=unacceptable, credit=self.lca_credit),
        }

    def grade_answer(self, answer: ParsedAnswer, sample: Sample) -> dict[str, float | None]:
        """The four metrics of ``answer``, by the ``unparsed`` policy when it is unparsed."""
        if answer.parsed:
            return self.grade(_letters(answer.value), sample)
        values = self.grade((), sample)
        return dict.fromkeys(values, None) if self.unparsed == "skip" else values

    def explain(self, answer: ParsedAnswer, sample: Sample) -> str:
        """``answer ['A', 'C'], target ['A', 'C']``."""
        return f"answer {sorted(_letters(answer.value))}, target {sorted(sample.targets)}"


def _lenient(values: dict[str, float | None]) -> dict[str, float | None]:
    return {f"{metric}_lenient": value for metric, value in values.items()}


def _letters(value: object) -> set[str]:
    if isinstance(value, str):
        return {value.strip().upper()}
    if isinstance(value, (list, tuple, set)):
        return {str(item).strip().upper() for item in value}
    return set()


@scorer("accuracy", binary=("accuracy", "accuracy_lenient"))
def accuracy(unparsed: Unparsed = "zero", also_lenient: bool = False) -> Accuracy:
    """The single-answer accuracy scorer (metric ``accuracy``, and ``accuracy_lenient`` with ``also_lenient``).

    Metrics:
        accuracy: 1 when the answer read from the reply is the gold option, else 0 (an unparsed
            answer scores 0 under ``unparsed=zero`` and is left out under ``unparsed=skip``).
        accuracy_lenient: accuracy of the answer read by the lenient parser (any option letter or
            option text in the reply).
    """
    return Accuracy(unparsed, also_lenient)


@scorer("multi_answer", binary=("exact_match", "exact_match_lenient"))
def multi_answer(
    unparsed: Unparsed = "zero", lca_credit: Sequence[float] = LCA_CREDIT, also_lenient: bool = False
) -> MultiAnswer:
    """The multi-answer scorer (metrics ``exact_match``, ``f1``, ``hamming``, ``lca``; ``*_lenient`` too).

    Metrics:
        exact_match: 1 when the chosen set of options P equals the gold set G, else 0.
        f1: set F1, 2|P ∩ G| / (|P| + |G|).
        hamming: Hamming score, |P ∩ G| / |P ∪ G|.
        lca: the French LCA exam grade: 0 when no option is chosen, an essential option is missing
            or an unacceptable one chosen, else ``lca_credit[d]`` for d = |P Δ G| discordant options.
        *_lenient: the same metric on the answer read by the lenient parser.
    """
    return MultiAnswer(unparsed, lca_credit, also_lenient)
