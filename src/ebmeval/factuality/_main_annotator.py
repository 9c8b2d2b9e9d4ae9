"""Agreement as the paper's Table 1 reports it: each annotator against a named main annotator.

Per category, the paper gives the mean over the other annotators of their percent agreement and
Gwet's AC1 with the main annotator, and Fleiss' κ over all annotators together (main included).
Its "Overall" column is the mean of the six base columns (PICO, direction, modality, grammar,
lexical, non-redundancy), without "factually correct": the published row means (89 %, 0.82, 0.73)
are those of the six columns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np

from .._util.errors import UsageError
from ..judges import FactualityLabels
from ._analysis import agreement

TABLE1_CATEGORIES: Final[tuple[str, ...]] = (
    "pico",
    "direction",
    "modality",
    "grammar",
    "lexical",
    "non_redundancy",
    "factually_correct",
)
"""The columns of the paper's Table 1, in order."""

OVERALL_OF: Final[tuple[str, ...]] = TABLE1_CATEGORIES[:6]
"""The columns whose mean is the "Overall" column."""


@dataclass(frozen=True, slots=True)
class MainAgreement:
    """One column of Table 1.

    Attributes:
        category: The category, or ``overall``.
        main: The main annotator.
        percent: Mean over the other annotators of their percent agreement with ``main``.
        ac1: Mean over the other annotators of Gwet's AC1 with ``main``.
        fleiss: Fleiss' κ over all annotators, ``main`` included.
        per_annotator: ``{annotator: (percent, AC1)}`` against ``main``.
        n: Items rated by ``main`` and at least one other annotator.
    """

    category: str
    main: str
    percent: float | None
    ac1: float | None
    fleiss: float | None
    per_annotator: dict[str, tuple[float | None, float | None]]
    n: int


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return float(np.mean(known)) if known else None


def _column(category: str, raters: Mapping[str, Mapping[str, FactualityLabels]], main: str) -> MainAgreement:
    ratings = {r: {item: labels.value(category) for item, labels in per.items()} for r, per in raters.items()}
    pairs = {a: agreement(category, {main: ratings[main], a: ratings[a]}) for a in ratings if a != main}
    rated = {item for item, v in ratings[main].items() if v is not None}
    n = sum(1 for item in rated if any(ratings[a].get(item) is not None for a in pairs))
    return MainAgreement(
        category=category,
        main=main,
        percent=_mean([p.percent for p in pairs.values()]),
        ac1=_mean([p.ac1 for p in pairs.values()]),
        fleiss=agreement(category, ratings).fleiss,
        per_annotator={a: (p.percent, p.ac1) for a, p in pairs.items()},
        n=n,
    )


def main_annotator_agreement(
    raters: Mapping[str, Mapping[str, FactualityLabels]],
    main: str,
    categories: Sequence[str] = TABLE1_CATEGORIES,
) -> list[MainAgreement]:
    """Table 1: a column per category, then ``overall`` (the mean of the :data:`OVERALL_OF` columns).

    ``raters[rater][review_id]`` = labels. A coefficient undefined on a category (e.g. Fleiss' κ
    when everyone gives one value) is None and left out of the means.

    Raises:
        UsageError: ``main`` is not a rater, or there is no other rater.
    """
    if main not in raters:
        raise UsageError(f"main annotator {main!r} is not among the annotators ({', '.join(raters)})")
    if len(raters) < 2:
        raise UsageError("the main-annotator protocol needs at least one other annotator")
    columns = [_column(c, raters, main) for c in categories]
    base = [c for c in columns if c.category in OVERALL_OF]
    others = [a for a in raters if a != main]
    overall = MainAgreement(
        category="overall",
        main=main,
        percent=_mean([c.percent for c in base]),
        ac1=_mean([c.ac1 for c in base]),
        fleiss=_mean([c.fleiss for c in base]),
        per_annotator={
            a: (_mean([c.per_annotator[a][0] for c in base]), _mean([c.per_annotator[a][1] for c in base]))
            for a in others
        },
        n=max((c.n for c in base), default=0),
    )
    return [*columns, overall]
