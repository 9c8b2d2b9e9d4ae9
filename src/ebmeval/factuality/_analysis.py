"""The factuality analysis: correctness rates, confusion matrices, ROUGE t-tests and agreement."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from .._util.errors import UsageError
from ..stats import (
    Estimate,
    StatsInputError,
    TestResult,
    bootstrap_ci,
    cohen_kappa,
    fleiss_kappa,
    gwet_ac1,
    percent_agreement,
)
from ._copying import ROUGE_TYPES, OpeningCount, opening_counts, rouge
from ._importers import HumanLabels, SummaryPair, pairs_from_run, read_pairs

if TYPE_CHECKING:
    from ._main_annotator import MainAgreement
from ..judges import (
    BINARY_CATEGORIES,
    DERIVED_CATEGORIES,
    DIRECTIONS,
    MODALITIES,
    Direction,
    FactualityLabels,
    Modality,
    direction_applies,
    normalize_direction,
    normalize_modality,
)

ALL_CATEGORIES = BINARY_CATEGORIES + DERIVED_CATEGORIES


@dataclass(frozen=True, slots=True)
class Assessment:
    """A summary pair with its factuality labels (by a judge or an annotator).

    Attributes:
        pair: The generated summary and its target.
        labels: The binary schema.
        target_direction: Direction of the target statement, when labelled.
        target_modality: Modality of the target statement, when labelled.
        generated_direction: Direction of the generated summary, when labelled.
        generated_modality: Modality of the generated summary, when labelled.
    """

    pair: SummaryPair
    labels: FactualityLabels
    target_direction: Direction | None = None
    target_modality: Modality | None = None
    generated_direction: Direction | None = None
    generated_modality: Modality | None = None


def _flag(value: float | None) -> bool | None:
    return None if value is None else bool(value >= 0.5)


_SIDES = ("target", "generated")


def _assessment(
    pair: SummaryPair, labels: FactualityLabels, target: Mapping[str, Any], generated: Mapping[str, Any]
) -> Assessment:
    """An assessment with each side's ``direction`` and ``modality`` normalised."""
    return Assessment(
        pair=pair,
        labels=labels,
        target_direction=normalize_direction(target.get("direction")),
        target_modality=normalize_modality(target.get("modality")),
        generated_direction=normalize_direction(generated.get("direction")),
        generated_modality=normalize_modality(generated.get("modality")),
    )


def assessments_from_run(store_path: str | Path, run_id: str, scorer: str = "judge/factuality") -> list[Assessment]:
    """The judge's assessments stored in a run (epoch 0), in generation order.

    Generations the scorer has not scored are left out.
    """
    from ..store import RunStore

    pairs = {pair.review_id: pair for pair in pairs_from_run(store_path, run_id)}
    store = RunStore(store_path, read_only=True)
    try:
        scores = {sample_id: score for sample_id, epoch, _, score in store.scores(run_id, scorer) if epoch == 0}
    finally:
        store.close()
    out = []
    for review, pair in pairs.items():
        score = scores.get(review)
        if score is None:
            continue
        labels = FactualityLabels(**{name: _flag(score.values.get(name)) for name in BINARY_CATEGORIES})
        target = score.metadata.get("target", {})
        generated = score.metadata.get("generated", {})
        out.append(_assessment(pair, labels, target, generated))
    return out


@dataclass(frozen=True, slots=True)
class CategoryRate:
    """Share of summaries correct in one category.

    Attributes:
        category: The category.
        rate: Mean of the 0/1 values over the n summaries where it is known, with a bootstrap CI.
        unknown: Summaries where the category is unknown or not applicable.
    """

    category: str
    rate: Estimate | None
    unknown: int


def correctness_rates(
    assessments: Sequence[Assessment],
    categories: Sequence[str] = ALL_CATEGORIES,
    *,
    level: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> list[CategoryRate]:
    """Per category, rate = (1/n) sum_i y_i over summaries with a known 0/1 value y_i.

    The interval is a percentile bootstrap (:func:`ebmeval.stats.bootstrap_ci`); with fewer than
    2 known values the rate is None.
    """
    out = []
    for category in categories:
        known = [v for a in assessments if (v := a.labels.value(category)) is not None]
        rate = None
        if len(known) >= 2:
            rate = bootstrap_ci(np.array(known, dtype=float), n_resamples=n_resamples, level=level, seed=seed)
        elif known:
            rate = Estimate(value=float(known[0]), n=1, method="single value")
        out.append(CategoryRate(category=category, rate=rate, unknown=len(assessments) - len(known)))
    return out


@dataclass(frozen=True, slots=True)
class Confusion:
    """Counts of target label (rows) × generated label (columns).

    Attributes:
        kind: ``direction`` or ``modality``.
        labels: Row and column labels, in order.
        counts: ``counts[i][j]`` pairs with target ``labels[i]`` and generated ``labels[j]``.
        missing: Pairs where either side is unlabelled.
        not_applicable: Direction only: pairs left out because a side's modality is "no evidence"
            or "no claim" (direction is not defined there).
    """

    kind: str
    labels: tuple[str, ...]
    counts: tuple[tuple[int, ...], ...]
    missing: int
    not_applicable: int = 0


def confusion_matrix(assessments: Sequence[Assessment], kind: Literal["direction", "modality"]) -> Confusion:
    """Target × generated confusion matrix of direction or modality labels.

    The direction matrix counts only the pairs where direction is defined: neither side's
    modality is "no evidence" or "no claim" (the others are counted in ``not_applicable``).
    """
    labels: tuple[str, ...] = DIRECTIONS if kind == "direction" else MODALITIES
    index = {label: i for i, label in enumerate(labels)}
    counts = [[0] * len(labels) for _ in labels]
    missing = not_applicable = 0
    for a in assessments:
        if kind == "direction" and not direction_applies(a.target_modality, a.generated_modality):
            not_applicable += 1
            continue
        t, g = (
            (a.target_direction, a.generated_direction)
            if kind == "direction"
            else (a.target_modality, a.generated_modality)
        )
        if t is None or g is None:
            missing += 1
            continue
        counts[index[t]][index[g]] += 1
    return Confusion(
        kind=kind,
        labels=labels,
        counts=tuple(tuple(r) for r in counts),
        missing=missing,
        not_applicable=not_applicable,
    )


def ttest(a: Sequence[float], b: Sequence[float], *, welch: bool = False) -> TestResult:
    """Two-sample two-sided t-test of mean(a) = mean(b): Student's (pooled variance) or Welch's.

    Student: t = (m_a - m_b) / (s_p sqrt(1/n_a + 1/n_b)), s_p² = ((n_a - 1)s_a² + (n_b - 1)s_b²) /
    (n_a + n_b - 2), df = n_a + n_b - 2. Welch: t = (m_a - m_b) / sqrt(s_a²/n_a + s_b²/n_b) with the
    Welch-Satterthwaite df. Computed by ``scipy.stats.ttest_ind(equal_var=not welch)``; ``value`` = m_a - m_b.

    Raises:
        StatsInputError: a group has fewer than 2 values or both have zero variance.
    """
    from scipy import stats as scipy_stats

    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.size < 2 or y.size < 2:
        raise StatsInputError(f"each group needs at least 2 values, got {x.size} and {y.size}")
    if np.var(x, ddof=1) == 0.0 and np.var(y, ddof=1) == 0.0:
        raise StatsInputError("both groups have zero variance, so the t statistic is undefined")
    result = scipy_stats.ttest_ind(x, y, equal_var=not welch)
    return TestResult(
        statistic=float(result.statistic),
        pvalue=float(result.pvalue),
        n=int(x.size + y.size),
        method="Welch t-test" if welch else "Student t-test",
        value=float(np.mean(x) - np.mean(y)),
    )


def welch_ttest(a: Sequence[float], b: Sequence[float]) -> TestResult:
    """Welch's two-sample t-test (unequal variances, two-sided): :func:`ttest` with ``welch=True``."""
    return ttest(a, b, welch=True)


@dataclass(frozen=True, slots=True)
class RougeComparison:
    """ROUGE of correct against incorrect summaries in one category.

    Attributes:
        category: The category splitting the summaries.
        metric: ``rouge1``, ``rouge2``, ``rougeL`` (F-measure against the target) or ``bertscore`` (F1).
        n_correct: Summaries correct in the category.
        n_incorrect: Summaries incorrect in it.
        mean_correct: Mean ROUGE of the correct ones (None when there are none).
        mean_incorrect: Mean ROUGE of the incorrect ones.
        test: The t-test (Student's or Welch's) of correct − incorrect, or None when undefined.
        note: Why the test is missing.
    """

    category: str
    metric: str
    n_correct: int
    n_incorrect: int
    mean_correct: float | None
    mean_incorrect: float | None
    test: TestResult | None
    note: str = ""


def rouge_by_correctness(
    assessments: Sequence[Assessment],
    scores: Sequence[Mapping[str, float]],
    metric: str = "rougeL",
    categories: Sequence[str] = ALL_CATEGORIES,
    *,
    welch: bool = False,
) -> list[RougeComparison]:
    """Per category, a t-test of ROUGE between correct and incorrect summaries.

    The test is :func:`ttest`: Student's, as in the paper, or Welch's with ``welch``.
    """
    if len(scores) != len(assessments):
        raise ValueError(f"{len(scores)} ROUGE scores for {len(assessments)} assessments")
    out = []
    for category in categories:
        correct = [s[metric] for a, s in zip(assessments, scores, strict=True) if a.labels.value(category) is True]
        wrong = [s[metric] for a, s in zip(assessments, scores, strict=True) if a.labels.value(category) is False]
        test, note = None, ""
        try:
            test = ttest(correct, wrong, welch=welch)
        except StatsInputError as exc:
            note = str(exc)
        out.append(
            RougeComparison(
                category=category,
                metric=metric,
                n_correct=len(correct),
                n_incorrect=len(wrong),
                mean_correct=float(np.mean(correct)) if correct else None,
                mean_incorrect=float(np.mean(wrong)) if wrong else None,
                test=test,
                note=note,
            )
        )
    return out


@dataclass(frozen=True, slots=True)
class Agreement:
    """Agreement among raters on one category.

    Attributes:
        category: The category (binary or a label category).
        raters: The raters compared.
        n: Items rated by at least two of them.
        percent: Percent agreement.
        ac1: Gwet's AC1 (over all possible categories).
        fleiss: Fleiss' kappa.
        cohen: Cohen's kappa (exactly two raters only).
        notes: Why a coefficient is missing.
    """

    category: str
    raters: tuple[str, ...]
    n: int
    percent: float | None
    ac1: float | None
    fleiss: float | None
    cohen: float | None
    notes: tuple[str, ...] = ()


def agreement(
    category: str,
    ratings: Mapping[str, Mapping[str, Any]],
    codes: Sequence[Any] = (False, True),
) -> Agreement:
    """Percent agreement, Gwet's AC1, Fleiss' kappa and (two raters) Cohen's kappa on one category.

    ``ratings[rater][item]`` is a value from ``codes`` or None (missing). Values are coded by
    their position in ``codes``, which also gives AC1 its full category set. The formulas are those
    of :mod:`ebmeval.stats` (:func:`~ebmeval.stats.percent_agreement`, :func:`~ebmeval.stats.gwet_ac1`,
    :func:`~ebmeval.stats.fleiss_kappa`, :func:`~ebmeval.stats.cohen_kappa`); a coefficient that is
    undefined on the data (e.g. kappa when everyone gives one value) is None with a note.
    """
    raters = tuple(ratings)
    position = {code: float(i) for i, code in enumerate(codes)}
    items = sorted({item for per_rater in ratings.values() for item in per_rater})
    table = np.full((len(items), len(raters)), math.nan)
    for j, rater in enumerate(raters):
        for i, item in enumerate(items):
            value = ratings[rater].get(item)
            if value is not None:
                table[i, j] = position[value]
    paired = table[np.sum(~np.isnan(table), axis=1) >= 2]
    if paired.shape[0] == 0:
        note = ("no item is rated by two raters",)
        return Agreement(category, raters, 0, None, None, None, None, notes=note)
    notes: list[str] = []

    def attempt(name: str, compute: Any) -> float | None:
        try:
            return float(compute().value)
        except StatsInputError as exc:
            notes.append(f"{name}: {exc}")
            return None

    cats = list(position.values())
    return Agreement(
        category=category,
        raters=raters,
        n=int(paired.shape[0]),
        percent=attempt("percent", lambda: percent_agreement(paired)),
        ac1=attempt("AC1", lambda: gwet_ac1(paired, categories=cats)),
        fleiss=attempt("Fleiss", lambda: fleiss_kappa(paired)),
        cohen=(
            attempt("Cohen", lambda: cohen_kappa(paired[:, 0], paired[:, 1], categories=cats))
            if len(raters) == 2
            else None
        ),
        notes=tuple(notes),
    )


def binary_agreement(
    raters: Mapping[str, Mapping[str, FactualityLabels]], categories: Sequence[str] = ALL_CATEGORIES
) -> list[Agreement]:
    """:func:`agreement` on each binary or derived category; ``raters[rater][review_id]`` = labels."""
    return [
        agreement(c, {r: {item: labels.value(c) for item, labels in per.items()} for r, per in raters.items()})
        for c in categories
    ]


@dataclass(frozen=True, slots=True)
class LabelAccuracy:
    """A labeller's labels against gold labels.

    Attributes:
        field: What is labelled (``direction``, ``modality``).
        n: Items with a gold label.
        unparsed: Of those, items the labeller gave no label for (counted as wrong in ``accuracy``).
        accuracy: Share of the n items labelled as the gold label.
        agreement: Agreement between labeller and gold over items both labelled (Cohen's kappa …).
    """

    field: str
    n: int
    unparsed: int
    accuracy: float | None
    agreement: Agreement


def label_accuracy(
    field_name: str,
    gold: Mapping[str, str | None],
    predicted: Mapping[str, str | None],
    labels: Sequence[str],
) -> LabelAccuracy:
    """Accuracy = (1/n) sum_i [pred_i = gold_i] over items with a gold label, and :func:`agreement`."""
    items = [item for item, value in gold.items() if value is not None]
    hits = sum(1 for item in items if predicted.get(item) == gold[item])
    unparsed = sum(1 for item in items if predicted.get(item) is None)
    both = {"gold": {i: gold[i] for i in items}, "labeller": {i: predicted.get(i) for i in items}}
    return LabelAccuracy(
        field=field_name,
        n=len(items),
        unparsed=unparsed,
        accuracy=hits / len(items) if items else None,
        agreement=agreement(field_name, both, codes=labels),
    )


@dataclass(slots=True)
class FactualityReport:
    """All tables of one factuality analysis.

    Attributes:
        n: Summaries with labels (the correctness, confusion and t-test tables).
        rates: Correctness per category.
        direction: Direction confusion matrix (target × generated), applicable pairs only.
        modality: Modality confusion matrix.
        n_copying: Summaries in the copying analysis (all summaries given, labelled or not).
        rouge_target: Mean ROUGE F of the generated summaries against their targets, by type.
        rouge_background: Mean ROUGE F against the background, where known, by type.
        n_background: Summaries with a background.
        openings: Stock-phrase frequencies of the generated summaries.
        rouge_tests: t-tests of ROUGE-1, -2 and -L (and BERTScore F1 when asked) between correct and
            incorrect summaries.
        agreement: Multi-rater agreement tables, by title.
        main_agreement: The Table 1 protocol (agreement with the main annotator), when asked for.
    """

    n: int
    rates: list[CategoryRate]
    direction: Confusion
    modality: Confusion
    n_copying: int
    rouge_target: dict[str, float]
    rouge_background: dict[str, float]
    n_background: int
    openings: list[OpeningCount]
    rouge_tests: list[RougeComparison]
    agreement: dict[str, list[Agreement]] = field(default_factory=dict)
    main_agreement: list[MainAgreement] = field(default_factory=list)

    def to_markdown(self) -> str:
        """The report as Markdown tables."""
        from ._tables import report_markdown

        return report_markdown(self)


def analyze(
    assessments: Sequence[Assessment],
    *,
    pairs: Sequence[SummaryPair] | None = None,
    welch: bool = False,
    openings: Sequence[str] | None = None,
    agreement_raters: Mapping[str, Mapping[str, Mapping[str, FactualityLabels]]] | None = None,
    main_annotator: str | None = None,
    bertscore: bool = False,
    level: float = 0.95,
    seed: int = 0,
) -> FactualityReport:
    """The full analysis of judged (or annotated) summaries.

    Args:
        assessments: Pairs with their labels.
        pairs: Every summary for the copying analysis (ROUGE against target and background,
            stock phrases), labelled or not; default: the assessed pairs.
        welch: Welch's instead of Student's t-test for ROUGE of correct vs incorrect summaries.
        openings: Stock phrases to count (default :data:`CANNED_OPENINGS`, the paper's three).
        agreement_raters: Agreement tables to compute, by title: ``{title: {rater: {review_id: labels}}}``.
        main_annotator: With ``agreement_raters["annotators"]``, also the Table 1 protocol against
            this annotator (:func:`~ebmeval.factuality.main_annotator_agreement`).
        bertscore: Also the t-tests on BERTScore F1 against the target (the paper's footnote 9;
            :func:`ebmeval.scorers.text.bertscore`, the bundled encoder, so not the paper's values).
        level: Confidence level of the rate intervals.
        seed: Bootstrap seed.
    """
    from ._copying import CANNED_OPENINGS
    from ._main_annotator import main_annotator_agreement

    every = list(pairs) if pairs is not None else [a.pair for a in assessments]
    to_target = rouge([p.generated for p in every], [p.target for p in every])
    with_bg = [p for p in every if p.background]
    to_background = rouge([p.generated for p in with_bg], [p.background or "" for p in with_bg])
    raters = agreement_raters or {}
    main: list[MainAgreement] = []
    if main_annotator is not None:
        if "annotators" not in raters:
            raise UsageError("the main-annotator protocol needs the labels of two or more annotators")
        main = main_annotator_agreement(raters["annotators"], main_annotator)
    assessed = rouge([a.pair.generated for a in assessments], [a.pair.target for a in assessments])
    if bertscore and assessments:
        from ..scorers.text import bertscore as bert

        f1 = bert([a.pair.generated for a in assessments], [a.pair.target for a in assessments]).f1
        assessed = [{**scores, "bertscore": value} for scores, value in zip(assessed, f1, strict=True)]
    metrics = (*ROUGE_TYPES, "bertscore") if bertscore else ROUGE_TYPES
    tests = [t for m in metrics for t in rouge_by_correctness(assessments, assessed, m, welch=welch)]
    return FactualityReport(
        n=len(assessments),
        rates=correctness_rates(assessments, level=level, seed=seed),
        direction=confusion_matrix(assessments, "direction"),
        modality=confusion_matrix(assessments, "modality"),
        n_copying=len(every),
        rouge_target=_means(to_target),
        rouge_background=_means(to_background),
        n_background=len(with_bg),
        openings=opening_counts([p.generated for p in every], CANNED_OPENINGS if openings is None else openings),
        rouge_tests=tests if assessments else [],
        agreement={title: binary_agreement(r) for title, r in raters.items()},
        main_agreement=main,
    )


def _means(scores: Sequence[Mapping[str, float]]) -> dict[str, float]:
    return {name: float(np.mean([s[name] for s in scores])) for name in ROUGE_TYPES} if scores else {}


def human_assessments(
    generated: str | Path, targets: str | Path, human: HumanLabels, annotator: str
) -> list[Assessment]:
    """The summaries in ``generated`` (against ``targets``) as ``annotator`` labelled them in ``human``.

    Pairs the annotator did not label are left out.

    Raises:
        UsageError: ``annotator`` is not among the file's annotators.
    """
    if annotator not in human.binary:
        raise UsageError(f"annotator {annotator!r} is not in {human.path} (annotators: {', '.join(human.annotators)})")
    out = []
    for pair in read_pairs(generated, targets):
        labels = human.binary[annotator].get(pair.review_id)
        if labels is None:
            continue
        extra = human.labels.get(annotator, {}).get(pair.review_id, {})
        target_labels, generated_labels = (
            {k: extra.get(f"{side}_{k}") for k in ("direction", "modality")} for side in _SIDES
        )
        out.append(_assessment(pair, labels, target_labels, generated_labels))
    return out
