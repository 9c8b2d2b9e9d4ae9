"""The factuality schema for a (target summary, generated summary) pair.

Eight binary categories: the population, intervention and outcome agree (a broader or narrower
concept is an error), the effect direction agrees, the claim modality agrees, and the generated
text is grammatical, lexically sound and not redundant. Derived:

* ``pico`` = population ∧ intervention ∧ outcome;
* ``factually_correct`` = pico ∧ direction ∧ modality;
* ``fully_correct`` = factually_correct ∧ grammar ∧ lexical ∧ non_redundancy.

Direction agreement is only defined where neither side's modality is ``no evidence`` or
``no claim``; there it is ``None`` (not applicable) and does not count against the derived values.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Final, Literal

Direction = Literal["positive", "negative", "no effect"]
"""The direction of the reported effect of the intervention on the outcome."""

Modality = Literal["strong", "moderate", "weak", "no evidence", "no claim"]
"""How firmly the claim is made: strong, moderate or weak claim; no evidence; no claim."""

DIRECTIONS: Final[tuple[Direction, ...]] = ("positive", "negative", "no effect")
MODALITIES: Final[tuple[Modality, ...]] = ("strong", "moderate", "weak", "no evidence", "no claim")
NO_DIRECTION_MODALITIES: Final[frozenset[Modality]] = frozenset({"no evidence", "no claim"})

BINARY_CATEGORIES: Final[tuple[str, ...]] = (
    "population",
    "intervention",
    "outcome",
    "direction",
    "modality",
    "grammar",
    "lexical",
    "non_redundancy",
)
"""The binary categories, in table order."""

DERIVED_CATEGORIES: Final[tuple[str, ...]] = ("pico", "factually_correct", "fully_correct")
"""Categories computed from the binary ones."""

LABEL_CATEGORIES: Final[tuple[str, ...]] = (
    "target_direction",
    "target_modality",
    "generated_direction",
    "generated_modality",
)
"""The per-side labels behind the direction and modality categories."""

_DIRECTION_WORDS: Final[dict[str, Direction]] = {
    "positive": "positive",
    "positive effect": "positive",
    "increase": "positive",
    "increased": "positive",
    "significantly increased": "positive",
    "significantly increase": "positive",
    "beneficial": "positive",
    "negative": "negative",
    "negative effect": "negative",
    "decrease": "negative",
    "decreased": "negative",
    "significantly decreased": "negative",
    "harmful": "negative",
    "no effect": "no effect",
    "no_effect": "no effect",
    "none": "no effect",
    "no difference": "no effect",
    "no significant difference": "no effect",
    "neutral": "no effect",
}

_MODALITY_WORDS: Final[dict[str, Modality]] = {
    "strong": "strong",
    "strong claim": "strong",
    "moderate": "moderate",
    "moderate claim": "moderate",
    "weak": "weak",
    "weak claim": "weak",
    "no evidence": "no evidence",
    "no_evidence": "no evidence",
    "insufficient evidence": "no evidence",
    "no claim": "no claim",
    "no_claim": "no claim",
}


def _key(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip().strip(".\"'`*").lower())


def normalize_direction(text: str | None) -> Direction | None:
    """The direction named by ``text`` (``increased`` → ``positive`` …), or None if it names none.

    ``n/a`` and empty strings give None.
    """
    return None if text is None else _DIRECTION_WORDS.get(_key(text))


def normalize_modality(text: str | None) -> Modality | None:
    """The modality named by ``text`` (``weak claim`` → ``weak`` …), or None if it names none."""
    return None if text is None else _MODALITY_WORDS.get(_key(text))


def direction_applies(target_modality: Modality | None, generated_modality: Modality | None) -> bool:
    """Whether direction agreement is defined: neither side is ``no evidence`` or ``no claim``."""
    return not ({target_modality, generated_modality} & NO_DIRECTION_MODALITIES)


def direction_agrees(
    target_direction: Direction | None,
    generated_direction: Direction | None,
    target_modality: Modality | None,
    generated_modality: Modality | None,
) -> bool | None:
    """Direction agreement: None where it does not apply or a direction is unknown, else equality."""
    if not direction_applies(target_modality, generated_modality):
        return None
    if target_direction is None or generated_direction is None:
        return None
    return target_direction == generated_direction


def _all_of(values: tuple[bool | None, ...], optional: tuple[bool | None, ...] = ()) -> bool | None:
    """False if any value is False; None if a required value is None; else True."""
    if any(v is False for v in values + optional):
        return False
    if any(v is None for v in values):
        return None
    return True


@dataclass(frozen=True, slots=True)
class FactualityLabels:
    """The binary schema for one (target, generated) pair; None = unknown or not applicable."""

    population: bool | None = None
    intervention: bool | None = None
    outcome: bool | None = None
    direction: bool | None = None
    modality: bool | None = None
    grammar: bool | None = None
    lexical: bool | None = None
    non_redundancy: bool | None = None

    @property
    def pico(self) -> bool | None:
        """PICO agreement: population ∧ intervention ∧ outcome."""
        return _all_of((self.population, self.intervention, self.outcome))

    @property
    def factually_correct(self) -> bool | None:
        """Factual correctness: pico ∧ direction ∧ modality, where a not-applicable direction (None) does not count."""
        return _all_of((self.pico, self.modality), (self.direction,))

    @property
    def fully_correct(self) -> bool | None:
        """Full correctness: factually_correct ∧ grammar ∧ lexical ∧ non_redundancy."""
        return _all_of((self.factually_correct, self.grammar, self.lexical, self.non_redundancy))

    def value(self, category: str) -> bool | None:
        """The value of a binary or derived category by name."""
        if category not in BINARY_CATEGORIES and category not in DERIVED_CATEGORIES:
            raise KeyError(category)
        result: bool | None = getattr(self, category)
        return result

    def as_dict(self) -> dict[str, bool | None]:
        """Binary and derived categories by name."""
        return {**asdict(self), **{name: self.value(name) for name in DERIVED_CATEGORIES}}
