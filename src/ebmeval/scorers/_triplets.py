r"""Relation triplets: reading them out of model output, and strict micro-F1 over a corpus.

A triplet is ``(subject, relation, object)``. :func:`parse_triplets` accepts, in order:

1. ``json``: the first JSON array or object in the reply. An array of 3-item arrays, or of
   objects keyed ``subject``/``relation``/``object`` (synonyms: ``drug1``/``type``/``drug2``,
   ``head``/``relation``/``tail``, ``chemical``/``relation``/``protein``, ``e1``/``label``/``e2``);
   an object holding such an array under ``triplets``, ``relations``, ``interactions`` or
   ``answer``. An empty array states that there is no relation.
2. ``lines``: one triplet per line, bullets and numbering ignored, as ``A - type - B``,
   ``A | type | B``, ``A -> type -> B``, ``A; type; B``, ``(A, type, B)`` or ``A, type, B``.
   A line saying ``none`` / ``no interactions`` / ``no relations`` states that there is none;
   a line ending in ``:`` is a heading. Any other line is kept as unparseable and counted.

Matching is strict: a predicted triplet is a true positive only if all three components equal a
gold triplet's after normalisation (Unicode case folding, runs of whitespace collapsed to one
space, surrounding quotes, brackets and punctuation stripped; in the relation, ``_`` and spaces
read as ``-``). With ``symmetric=True`` the pair is unordered: (A, r, B) matches (B, r, A).
Triplets are sets per sample: a repeated triplet counts once.

Per sample: TP = |P ∩ G|, FP = |P \ G|, FN = |G \ P|. Over a corpus, micro-averaged:
precision = ΣTP / (ΣTP + ΣFP), recall = ΣTP / (ΣTP + ΣFN), F1 = 2 ΣTP / (2 ΣTP + ΣFP + ΣFN),
summing over samples (never averaging per-sample F1). Because a run summary reports the mean of
each per-sample value, micro-F1 = 2 mean(tp) / (2 mean(tp) + mean(fp) + mean(fn)) can be read off
it; :func:`micro_f1` computes it, per relation type too, with a bootstrap interval over samples.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from .._util.errors import DataError, UsageError
from ..judges import json_in_text
from ..models import strip_reasoning
from ..stats import bootstrap_ci
from ..tables import Column, Estimate, Table
from ..tasks import Generation, ParsedAnswer, Sample, SampleContext, Score, run_metric, scorer

if TYPE_CHECKING:
    from ..store import RunStore

Triplet = tuple[str, str, str]

_KEYS = (
    ("subject", "relation", "object"),
    ("drug1", "type", "drug2"),
    ("head", "relation", "tail"),
    ("chemical", "relation", "protein"),
    ("e1", "label", "e2"),
    ("subject", "type", "object"),
    ("drug1", "relation", "drug2"),
)
_LIST_KEYS = ("triplets", "relations", "interactions", "answer")
_BULLET = re.compile(r"^\s*(?:[-*•]\s+|\d+\s*[.)]\s*|\(\d+\)\s*)")
_SEPARATOR = re.compile(r"\s+[-–—]+>?\s+|\s*->\s*|\s*\|\s*|\s*;\s*|\t+")
_NONE = re.compile(r"^(?:none|no\s+(?:drug[- ]drug\s+)?(?:interactions?|relations?|triplets?)\b.*|n/?a)\W*$", re.I)
_MARKUP = re.compile(r"\*\*|__|`+")
_STRIP = " \t\"'“”‘’()[]{}<>.,:;"


@dataclass(frozen=True)
class TripletParse:
    """What :func:`parse_triplets` read from one reply."""

    triplets: list[Triplet]
    """Triplets found, in reply order (not yet normalised)."""
    unparsed_lines: list[str] = field(default_factory=list)
    """Non-empty lines that held no triplet, no heading and no "none" statement."""
    stated_none: bool = False
    """The reply said explicitly that there is no relation (``[]`` or a "none" line)."""
    method: str = "lines"
    """``json`` or ``lines``."""

    @property
    def parsed(self) -> bool:
        """Whether the reply gave an answer: some triplet, or an explicit "none"."""
        return bool(self.triplets) or self.stated_none


def normalise_entity(text: str) -> str:
    """Case-folded text with whitespace collapsed and surrounding quotes/brackets/punctuation stripped."""
    cleaned = unicodedata.normalize("NFKC", text).casefold()
    return re.sub(r"\s+", " ", cleaned).strip(_STRIP).strip()


def normalise_relation(text: str) -> str:
    """:func:`normalise_entity` with ``_`` and spaces read as ``-`` (``A_B C`` → ``a-b-c``)."""
    return re.sub(r"[\s_]+", "-", normalise_entity(text))


def normalise(triplet: Sequence[str], *, symmetric: bool = False) -> Triplet:
    """The matching key of a triplet; with ``symmetric`` the two entities are put in sorted order."""
    subject, relation, obj = normalise_entity(triplet[0]), normalise_relation(triplet[1]), normalise_entity(triplet[2])
    if symmetric and obj < subject:
        subject, obj = obj, subject
    return subject, relation, obj


def _from_json(value: Any) -> list[Triplet] | None:
    if isinstance(value, dict):
        for key in _LIST_KEYS:
            if isinstance(value.get(key), list):
                return _from_json(value[key])
        one = _from_item(value)
        return [one] if one is not None else None
    if not isinstance(value, list):
        return None
    found = [_from_item(item) for item in value]
    if any(item is None for item in found):
        return None
    return [item for item in found if item is not None]


def _from_item(item: Any) -> Triplet | None:
    if isinstance(item, list | tuple) and len(item) == 3 and all(isinstance(x, str) for x in item):
        return str(item[0]), str(item[1]), str(item[2])
    if isinstance(item, dict):
        lowered = {str(k).casefold(): v for k, v in item.items()}
        for keys in _KEYS:
            values = [lowered.get(k) for k in keys]
            if all(isinstance(v, str) for v in values):
                return str(values[0]), str(values[1]), str(values[2])
    return None


def _from_line(line: str) -> Triplet | None:
    parts = [p.strip() for p in _SEPARATOR.split(line)]
    if len(parts) != 3:
        inner = line.strip()
        if inner.startswith("(") and inner.endswith(")"):
            inner = inner[1:-1]
        parts = [p.strip() for p in inner.split(",")]
    if len(parts) == 3 and all(normalise_entity(p) for p in parts):
        return parts[0].strip(_STRIP), parts[1].strip(_STRIP), parts[2].strip(_STRIP)
    return None


def parse_triplets(text: str) -> TripletParse:
    """Read ``(subject, relation, object)`` triplets from a reply (formats in the module docstring)."""
    cleaned = _MARKUP.sub("", strip_reasoning(text)).strip()
    found = json_in_text(cleaned)
    if found is not None:
        triplets = _from_json(found)
        if triplets is not None:
            return TripletParse(triplets, stated_none=not triplets, method="json")
    triplets = []
    unparsed: list[str] = []
    stated_none = False
    for raw in cleaned.splitlines():
        line = _BULLET.sub("", raw).strip()
        if not line or line.endswith(":") or line.startswith(("```", "[", "]")):
            continue
        if _NONE.match(line):
            stated_none = True
            continue
        one = _from_line(line)
        if one is None:
            unparsed.append(raw.strip())
        else:
            triplets.append(one)
    return TripletParse(triplets, unparsed, stated_none=stated_none and not triplets)


def triplet_parser(output: str, sample: Sample) -> ParsedAnswer:
    """Task parser: the triplets as ``[[s, r, o], …]`` (``[]`` for an explicit none); unparsed otherwise."""
    found = parse_triplets(output)
    if not found.parsed:
        return ParsedAnswer.unparsed(found.method)
    return ParsedAnswer(value=[list(t) for t in found.triplets], method=found.method)


@dataclass(frozen=True)
class Counts:
    """True positives, false positives and false negatives, with the scores they give.

    precision = tp / (tp + fp); recall = tp / (tp + fn); F1 = 2 tp / (2 tp + fp + fn);
    each is ``None`` when its denominator is 0.
    """

    tp: int = 0
    fp: int = 0
    fn: int = 0

    def __add__(self, other: Counts) -> Counts:
        return Counts(self.tp + other.tp, self.fp + other.fp, self.fn + other.fn)

    @property
    def precision(self) -> float | None:
        """Precision, tp / (tp + fp)."""
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    @property
    def recall(self) -> float | None:
        """Recall, tp / (tp + fn)."""
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None

    @property
    def f1(self) -> float | None:
        """F1, 2 tp / (2 tp + fp + fn)."""
        total = 2 * self.tp + self.fp + self.fn
        return 2 * self.tp / total if total else None


def match_triplets(
    predicted: Iterable[Sequence[str]], gold: Iterable[Sequence[str]], *, symmetric: bool = False
) -> tuple[Counts, dict[str, Counts]]:
    """Strict set matching of predicted against gold triplets: overall and per relation type counts."""
    pred = {normalise(t, symmetric=symmetric) for t in predicted}
    true = {normalise(t, symmetric=symmetric) for t in gold}
    per_type: dict[str, Counts] = {}
    for key, kind in (
        [(k, "tp") for k in pred & true] + [(k, "fp") for k in pred - true] + [(k, "fn") for k in true - pred]
    ):
        one = Counts(tp=int(kind == "tp"), fp=int(kind == "fp"), fn=int(kind == "fn"))
        per_type[key[1]] = per_type.get(key[1], Counts()) + one
    return Counts(len(pred & true), len(pred - true), len(true - pred)), per_type


def gold_triplets(sample: Sample, key: str = "triplets") -> list[Triplet]:
    """The gold triplets in ``sample.metadata[key]`` (a list of 3-item lists); ``DataError`` otherwise."""
    value = sample.metadata.get(key)
    if not isinstance(value, list) or not all(
        isinstance(t, list | tuple) and len(t) == 3 and all(isinstance(x, str) for x in t) for t in value
    ):
        raise DataError(
            f"sample {sample.id}", "expected a list of [subject, relation, object]", field=f"metadata.{key}"
        )
    return [(t[0], t[1], t[2]) for t in value]


class TripletF1:
    """Strict triplet matching of the generation against ``sample.metadata["triplets"]``.

    Score values per sample: ``tp``, ``fp``, ``fn`` (for corpus micro-F1, see the module
    docstring and :func:`micro_f1`), and this sample's ``precision``/``recall``/``f1`` from its
    own counts (``None`` when a denominator is 0), plus ``unparsed_lines``. ``metadata`` holds
    ``per_type`` counts and the normalised predicted and gold triplets. An unparsed reply
    predicts no triplet (all gold triplets are false negatives).

    Args:
        symmetric: Match (A, r, B) with (B, r, A).
        gold_key: Sample metadata key of the gold triplets.
        name: Scorer name.
    """

    def __init__(self, *, symmetric: bool = False, gold_key: str = "triplets", name: str = "triplet-f1") -> None:
        self.symmetric = symmetric
        self.gold_key = gold_key
        self.name = name

    async def __call__(self, sample: Sample, generation: Generation, ctx: SampleContext) -> Score:
        """Count the sample's true positives, false positives and false negatives."""
        found = parse_triplets(generation.output)
        gold = gold_triplets(sample, self.gold_key)
        counts, per_type = match_triplets(found.triplets, gold, symmetric=self.symmetric)
        return Score(
            values={
                "tp": float(counts.tp),
                "fp": float(counts.fp),
                "fn": float(counts.fn),
                "precision": counts.precision,
                "recall": counts.recall,
                "f1": counts.f1,
                "unparsed_lines": float(len(found.unparsed_lines)),
            },
            metadata={
                "per_type": {k: [c.tp, c.fp, c.fn] for k, c in sorted(per_type.items())},
                "predicted": sorted({normalise(t, symmetric=self.symmetric) for t in found.triplets}),
                "gold": sorted({normalise(t, symmetric=self.symmetric) for t in gold}),
                "unparsed_lines": found.unparsed_lines,
                "parsed": found.parsed,
            },
        )


@scorer("triplet-f1")
def triplet_f1(symmetric: bool = False, gold_key: str = "triplets") -> TripletF1:
    r"""Strict (subject, relation, object) matching; corpus micro-F1 via :func:`micro_f1`.

    P and G are the sample's normalised predicted and gold triplet sets.

    Metrics:
        tp: true positives, |P ∩ G|.
        fp: false positives, |P \ G|.
        fn: false negatives, |G \ P|.
        precision: this sample's tp / (tp + fp); None when nothing is predicted.
        recall: this sample's tp / (tp + fn); None when there is no gold triplet.
        f1: this sample's 2 tp / (2 tp + fp + fn); None when both sets are empty. Corpus micro-F1 is
            2 mean(tp) / (2 mean(tp) + mean(fp) + mean(fn)), not the mean of this value.
        unparsed_lines: non-empty reply lines read as neither a triplet, a heading nor a "none"; 0 when the
            reply is read as JSON.
    """
    return TripletF1(symmetric=symmetric, gold_key=gold_key)


@dataclass(frozen=True)
class MicroF1:
    """Corpus-level strict triplet scores of one run.

    Attributes:
        overall: Counts summed over samples (``precision``, ``recall``, ``f1`` are micro-averaged).
        per_type: Counts summed over samples for each (normalised) relation type.
        f1_ci: Percentile bootstrap interval of micro-F1, resampling samples; ``None`` with < 2 samples.
        samples: Samples scored.
        unparsed: Samples whose reply gave neither a triplet nor an explicit "none".
    """

    overall: Counts
    per_type: dict[str, Counts]
    f1_ci: tuple[float, float] | None
    samples: int
    unparsed: int

    def to_markdown(self) -> str:
        """The overall and per-type table."""
        table = Table(
            "",
            [
                "type",
                *[Column(name, "number") for name in ("TP", "FP", "FN", "precision", "recall", "F1")],
            ],
        )
        for name, c in [("**micro**", self.overall), *sorted(self.per_type.items())]:
            table.add(name, c.tp, c.fp, c.fn, c.precision, c.recall, c.f1)
        f1 = Column("F1", "estimate", pair="(95% CI {}–{})")
        summary = f"{self.samples} samples, {self.unparsed} unparsed replies; micro-F1 "
        return table.markdown() + "\n" + summary + f1.text(Estimate(self.overall.f1, self.f1_ci)) + "."


def micro_f1(
    store: RunStore, run_id: str, *, scorer: str = "triplet-f1", n_resamples: int = 2000, seed: int = 0
) -> MicroF1:
    """Micro-averaged strict triplet precision/recall/F1 of a stored run, overall and per type.

    Sums the per-sample ``tp``/``fp``/``fn`` of ``scorer`` over the run's samples; the interval of
    F1 is a percentile bootstrap over samples (:func:`ebmeval.stats.bootstrap_ci`), each replicate
    recomputing 2 ΣTP / (2 ΣTP + ΣFP + ΣFN) on the resampled samples (replicates with no triplet
    at all count as F1 = 0).

    Args:
        store: A :class:`~ebmeval.store.RunStore`.
        run_id: The run (or an unambiguous prefix of its id).
        scorer: Name under which the triplet scorer stored its scores.
        n_resamples: Bootstrap resamples.
        seed: Bootstrap seed.
    """
    run = store.get_run(run_id)
    scores = [score for _sample_id, _epoch, _name, score in store.scores(run.run_id, scorer)]
    if not scores:
        raise UsageError(f"run {run.run_id} has no '{scorer}' scores; rescore it with `--scorer {scorer}`")
    return micro_f1_of(scores, n_resamples=n_resamples, seed=seed)


def micro_f1_of(scores: Sequence[Score], *, n_resamples: int = 2000, seed: int = 0) -> MicroF1:
    """:func:`micro_f1` of the triplet scores of one run's samples."""
    rows: list[tuple[int, int, int]] = []
    per_type: dict[str, Counts] = {}
    unparsed = 0
    for score in scores:
        values = score.values
        rows.append((int(values["tp"] or 0), int(values["fp"] or 0), int(values["fn"] or 0)))
        unparsed += int(not score.metadata.get("parsed", True))
        for kind, (tp, fp, fn) in score.metadata.get("per_type", {}).items():
            per_type[kind] = per_type.get(kind, Counts()) + Counts(tp, fp, fn)
    table: NDArray[np.float64] = np.array(rows, dtype=float)
    overall = Counts(*(int(x) for x in table.sum(axis=0)))

    def f1_of(indices: NDArray[np.float64], /, *, axis: int) -> NDArray[np.float64]:
        picked = table[indices.astype(np.intp)]  # (..., n, 3)
        sums = picked.sum(axis=-2)
        denominator = 2 * sums[..., 0] + sums[..., 1] + sums[..., 2]
        f1: NDArray[np.float64] = np.divide(
            2 * sums[..., 0], denominator, out=np.zeros_like(denominator), where=denominator > 0
        )
        return f1

    ci: tuple[float, float] | None = None
    if len(rows) >= 2:
        estimate = bootstrap_ci(np.arange(len(rows), dtype=float), f1_of, n_resamples=n_resamples, seed=seed)
        ci = estimate.ci
    return MicroF1(overall, dict(sorted(per_type.items())), ci, len(rows), unparsed)


@run_metric("triplet-f1")
def corpus_metrics(scores: Sequence[Score]) -> dict[str, tuple[float | None, tuple[float, float] | None]]:
    """The headline metrics of extraction: corpus micro-F1 (with its bootstrap CI), precision and recall."""
    if not scores:
        return {}
    found = micro_f1_of(scores)
    overall = found.overall
    return {
        "micro_f1": (overall.f1, found.f1_ci),
        "micro_precision": (overall.precision, None),
        "micro_recall": (overall.recall, None),
    }
