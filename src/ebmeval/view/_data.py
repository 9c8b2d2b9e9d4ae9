"""What the viewer shows, read from a run store: sample rows, their filters, one sample in full, pairs of runs.

Nothing here writes: the viewer opens the store read-only.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from ..store import RunRecord, RunStore, ScoreSet
from ..tasks import Generation, Sample, Score

KINDS = ("wrong", "correct", "unparsed", "ambiguous", "truncated", "errored")
"""The flags a sample row may be filtered on (all the chosen ones must hold)."""


@dataclass(frozen=True)
class SampleFilter:
    """Which sample rows to show: flags, a metadata label, a score set and a range of one of its metrics.

    ``label`` is ``KEY=VALUE`` on the sample's metadata (a list value matches any of its items).
    ``low``/``high`` bound ``metric`` of ``score_set`` (both inclusive); a row without that value
    is left out once a bound or a metric is given.
    """

    kinds: tuple[str, ...] = ()
    label: str | None = None
    score_set: str | None = None
    metric: str | None = None
    low: float | None = None
    high: float | None = None

    def query(self) -> list[tuple[str, str]]:
        """The URL query that gives this filter back."""
        pairs = [("kind", k) for k in self.kinds]
        for key in ("label", "score_set", "metric", "low", "high"):
            value = getattr(self, key)
            if value is not None:
                pairs.append((key, str(value)))
        return pairs


@dataclass
class SampleRow:
    """One sample × epoch of a run, as the sample list shows it."""

    sample_id: str
    epoch: int
    question: str
    target: str | list[str]
    answer: Any
    parsed: bool
    method: str
    truncated: bool
    errors: list[str]
    labels: dict[str, Any]
    scores: dict[str, dict[str, float | None]] = field(default_factory=dict)
    """Score set label → metric → value."""
    binary: dict[str, dict[str, float]] = field(default_factory=dict)
    """The scores of ``scores`` whose metric is right/wrong (only 0 and 1 across the run)."""

    @property
    def generated(self) -> bool:
        """Whether the run recorded an output (a sample that only failed has none)."""
        return self.method != "-"

    @property
    def ambiguous(self) -> bool:
        """The reply named answers in ways that disagree (the reader says ``ambiguous: …``)."""
        return self.method.startswith("ambiguous")

    def has(self, kind: str) -> bool:
        """Whether the row carries the flag ``kind`` (one of :data:`KINDS`)."""
        values = [v for by_metric in self.binary.values() for v in by_metric.values()]
        flags = {
            "wrong": 0.0 in values,
            "correct": bool(values) and all(v == 1.0 for v in values),
            "unparsed": self.generated and not self.parsed,
            "ambiguous": self.ambiguous,
            "truncated": self.truncated,
            "errored": bool(self.errors) and not self.generated,
        }
        return flags[kind]


def sample_rows(store: RunStore, run_id: str) -> list[SampleRow]:
    """Every sample × epoch the run generated or failed on, in the order they were recorded."""
    rows: dict[tuple[str, int], SampleRow] = {}
    for sample, generation in store.generations(run_id):
        rows[(sample.id, generation.epoch)] = _row(sample, generation)
    for sample_id, epoch, stage, error, _at in store.errors(run_id):
        row = rows.get((sample_id, epoch))
        if row is None:
            row = rows[(sample_id, epoch)] = SampleRow(sample_id, epoch, "", "", None, False, "-", False, [], {})
        row.errors.append(f"{stage}: {error}")
    values: dict[tuple[str, str], list[float]] = defaultdict(list)
    for sample_id, epoch, label, score in store.scores(run_id):
        row = rows.get((sample_id, epoch))
        if row is None:
            continue
        row.scores.setdefault(label, {}).update(score.values)
        for metric, value in score.values.items():
            if value is not None:
                values[(label, metric)].append(value)
    binary = {key for key, found in values.items() if set(found) <= {0.0, 1.0}}
    for row in rows.values():
        for label, by_metric in row.scores.items():
            for metric, value in by_metric.items():
                if (label, metric) in binary and value is not None:
                    row.binary.setdefault(label, {})[metric] = value
    return list(rows.values())


def _row(sample: Sample, generation: Generation) -> SampleRow:
    return SampleRow(
        sample_id=sample.id,
        epoch=generation.epoch,
        question=sample.input,
        target=sample.target,
        answer=generation.answer.value,
        parsed=generation.answer.parsed,
        method=generation.answer.method,
        truncated=generation.truncated,
        errors=[],
        labels=sample.metadata,
    )


def select(rows: list[SampleRow], chosen: SampleFilter) -> list[SampleRow]:
    """The rows that pass every part of ``chosen``."""
    return [row for row in rows if _passes(row, chosen)]


def _passes(row: SampleRow, chosen: SampleFilter) -> bool:
    if not all(row.has(kind) for kind in chosen.kinds):
        return False
    if chosen.label is not None and not _labelled(row.labels, chosen.label):
        return False
    if chosen.score_set is not None and chosen.score_set not in row.scores:
        return False
    if chosen.metric is None and chosen.low is None and chosen.high is None:
        return True
    sets = [chosen.score_set] if chosen.score_set is not None else list(row.scores)
    present = [
        value
        for name in sets
        for metric, value in row.scores.get(name, {}).items()
        if chosen.metric in (None, metric) and value is not None
    ]
    return any((chosen.low is None or v >= chosen.low) and (chosen.high is None or v <= chosen.high) for v in present)


def _labelled(metadata: dict[str, Any], label: str) -> bool:
    key, _, wanted = label.partition("=")
    value = metadata.get(key)
    values = value if isinstance(value, list) else [value]
    return any(str(v) == wanted for v in values if v is not None)


def label_choices(rows: list[SampleRow]) -> list[str]:
    """``KEY=VALUE`` of the scalar metadata the rows share, for the label filter (at most 200)."""
    found: set[str] = set()
    for row in rows:
        for key, value in row.labels.items():
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, str | int | float | bool) and len(str(item)) <= 60:
                    found.add(f"{key}={item}")
    return sorted(found)[:200]


@dataclass(frozen=True)
class StepView:
    """One recorded step of a sample: a model call (its messages and reply) or a workflow record."""

    name: str
    role: str | None
    model: str | None
    messages: list[dict[str, Any]]
    reply: str | None
    reasoning: str | None
    details: dict[str, Any]
    """Everything else the step recorded (a negation's text, a retrieval, usage …)."""

    @property
    def judged(self) -> bool:
        """Whether a judge (any role but the model under evaluation) made this call."""
        return self.role not in (None, "model")


def step_view(name: str, payload: dict[str, Any]) -> StepView:
    """The viewer's form of a stored step payload."""
    rest = dict(payload)
    output = rest.pop("output", None)
    reply = reasoning = None
    if isinstance(output, dict):
        reply = output.get("text")
        reasoning = output.get("reasoning")
        rest.update({f"output.{k}": v for k, v in output.items() if k not in ("text", "reasoning") and v})
    elif output is not None:
        reply = str(output)
    messages = rest.pop("messages", None)
    return StepView(
        name=name,
        role=rest.pop("role", None),
        model=rest.pop("model", None),
        messages=messages if isinstance(messages, list) else [],
        reply=reply,
        reasoning=reasoning,
        details=rest,
    )


@dataclass(frozen=True)
class ScoreView:
    """One score set's grade of a sample, with the judge's reply and rationale where there is one."""

    score_set: ScoreSet
    score: Score

    @property
    def notes(self) -> dict[str, str]:
        """The score's metadata as text, long values (a judge's raw reply) kept whole."""
        return {
            k: v if isinstance(v, str) else json.dumps(v, ensure_ascii=False) for k, v in self.score.metadata.items()
        }


@dataclass
class SampleDetail:
    """Everything the store holds about one sample × epoch of a run."""

    run: RunRecord
    sample_id: str
    epoch: int
    epochs: list[int]
    sample: Sample | None
    generation: Generation | None
    steps: list[StepView]
    scores: list[ScoreView]
    errors: list[tuple[str, str, str]]
    """(stage, error, when) of every failed attempt."""


def sample_detail(store: RunStore, run_id: str, sample_id: str, epoch: int = 0) -> SampleDetail | None:
    """One sample × epoch in full; ``None`` when the run has nothing for it."""
    run = store.get_run(run_id)
    found = store.get_generation(run.run_id, sample_id, epoch)
    errors = [(stage, error, at) for s, e, stage, error, at in store.errors(run.run_id) if (s, e) == (sample_id, epoch)]
    if found is None and not errors:
        return None
    sets = {s.label: s for s in store.score_sets(run.run_id)}
    scores = [
        ScoreView(sets[label], score)
        for s, e, label, score in store.scores(run.run_id)
        if (s, e) == (sample_id, epoch) and label in sets
    ]
    epochs = sorted({e for s, e in store.done_generations(run.run_id) if s == sample_id} | {epoch})
    return SampleDetail(
        run=run,
        sample_id=sample_id,
        epoch=epoch,
        epochs=epochs,
        sample=found[0] if found else None,
        generation=found[1] if found else None,
        steps=[step_view(name, payload) for name, payload in store.steps(run.run_id, sample_id, epoch)],
        scores=scores,
        errors=errors,
    )


PAIR_KINDS = ("differ", "only-a-right", "only-b-right")
"""Filters of the side-by-side view: the answers differ, or exactly one run is right."""


@dataclass(frozen=True)
class PairRow:
    """One sample × epoch both runs recorded."""

    a: SampleRow
    b: SampleRow

    def has(self, kind: str) -> bool:
        """Whether the pair carries ``kind`` (one of :data:`PAIR_KINDS`)."""
        if kind == "differ":
            return bool(self.a.answer != self.b.answer or self.a.parsed != self.b.parsed)
        right_a, right_b = self.a.has("correct"), self.b.has("correct")
        return right_a and not right_b if kind == "only-a-right" else right_b and not right_a


def pair_rows(store: RunStore, run_a: str, run_b: str) -> list[PairRow]:
    """The sample × epoch pairs both runs recorded, in the order of ``run_a``."""
    by_key = {(r.sample_id, r.epoch): r for r in sample_rows(store, run_b)}
    return [
        PairRow(a, by_key[(a.sample_id, a.epoch)])
        for a in sample_rows(store, run_a)
        if (a.sample_id, a.epoch) in by_key
    ]
