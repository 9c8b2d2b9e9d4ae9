"""Aggregate a stored run into metrics with confidence intervals."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .._util.errors import UsageError
from ..models import Usage
from ..stats import bootstrap_ci, wilson_ci
from ..store import RunRecord, RunStore, ScoreSet
from ..tasks import Generation, Sample, run_metric_registry, scorer_registry
from ._engine import is_cut


@dataclass(frozen=True)
class MetricSummary:
    """One metric of one scorer, over the samples of one group.

    ``value`` is the mean of the per-sample values (``None`` when no sample has one); ``ci``
    its interval by ``ci_method``: ``wilson`` (the Wilson score interval) for a proportion, a
    metric whose values are all 0 or 1, else ``bootstrap`` (percentile bootstrap); ``missing``
    counts samples whose value could not be computed (e.g. an unparsed answer under
    ``unparsed=skip``), which are left out of the mean and counted here instead. ``scorer`` is
    the label of the score set. ``truncated`` counts the answers (sample × epoch) of its score
    set whose reply was cut at its token limit, which no scorer grades, and ``input_truncated``
    the answers it graded whose input was cut to fit the context window.
    """

    scorer: str
    metric: str
    value: float | None
    ci: tuple[float, float]
    n: int
    missing: int
    group: str | None = None
    ci_method: str = "bootstrap"
    truncated: int = 0
    input_truncated: int = 0


@dataclass
class RunSummary:
    """Everything ``ebmeval show`` prints about a run."""

    run: RunRecord
    generations: int
    unparsed: int
    failing: int
    """Sample × epoch pairs whose last attempt failed and that have no generation."""
    usage: Usage
    mean_latency: float
    metrics: list[MetricSummary] = field(default_factory=list)
    truncated: int = 0
    """Generations with a model call stopped at its token limit (of which ``truncated_unparsed`` unparsed)."""
    truncated_unparsed: int = 0
    input_truncated: int = 0
    """Generations whose input (an article, the evidence) was cut to fit the context window."""
    score_sets: list[ScoreSet] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """What a reader must know about these numbers (e.g. greedy epochs that repeat one reply, or a
    sample whose ``metadata["data_issue"]`` says its key is flawed)."""

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready form (what ``--json`` prints)."""
        return {
            "run_id": self.run.run_id,
            "task": self.run.task,
            "model": self.run.model,
            "status": self.run.status,
            "generations": self.generations,
            "unparsed": self.unparsed,
            "truncated": self.truncated,
            "truncated_unparsed": self.truncated_unparsed,
            "input_truncated": self.input_truncated,
            "failing": self.failing,
            "usage": self.usage.model_dump(),
            "mean_latency": self.mean_latency,
            "metrics": [
                {
                    "scorer": m.scorer,
                    "metric": m.metric,
                    "group": m.group,
                    "value": m.value,
                    "ci": None if math.isnan(m.ci[0]) else list(m.ci),
                    "ci_method": m.ci_method,
                    "n": m.n,
                    "missing": m.missing,
                    "truncated": m.truncated,
                    "input_truncated": m.input_truncated,
                }
                for m in self.metrics
            ],
            "score_sets": [{"id": s.id, "name": s.name, "label": s.label, "spec": s.spec} for s in self.score_sets],
            "notes": self.notes,
        }


def summarize(
    store: RunStore,
    run_id: str,
    *,
    by: str | None = None,
    level: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
    samples: set[str] | None = None,
) -> RunSummary:
    """Per-metric means with bootstrap CIs, overall and, with ``by``, per metadata value.

    A sample whose ``metadata[by]`` is a list counts in every group it names; a ``by`` key
    that no sample has is a ``UsageError`` naming the keys there are. ``samples`` restricts
    everything to those sample ids (the subset a ``--limit`` run asked for). A metric for
    which no sample has a value is still listed, with ``n = 0`` and every sample missing.
    """
    run = store.get_run(run_id)
    tally = _tally_generations(store, run.run_id, samples, by)
    if by is not None and tally.generated and by not in tally.keys:
        raise UsageError(
            f"no sample of run {run.run_id} has the metadata key '{by}'; keys: {', '.join(sorted(tally.keys))}"
        )
    failed = {(s, e) for s, e, _stage, _err, _t in store.errors(run.run_id) if samples is None or s in samples}
    values = _grouped_values(store, run.run_id, samples, tally.groups)
    metrics = _run_metrics(store, run.run_id, samples) + [
        _metric_summary(scorer, metric, group, raw, level=level, n_resamples=n_resamples, seed=seed)
        for (scorer, metric, group), raw in sorted(values.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2] or ""))
    ]
    scored_and_cut = _scored_and_cut(store, run.run_id, samples)
    return RunSummary(
        run=run,
        generations=len(tally.generated),
        unparsed=len(tally.unparsed),
        failing=len(failed - tally.generated),
        usage=tally.usage,
        mean_latency=float(np.mean(tally.latencies)) if tally.latencies else 0.0,
        metrics=_with_truncations(metrics, scored_and_cut, tally.inputs_cut, tally.groups),
        truncated=len(tally.truncated),
        truncated_unparsed=len(tally.truncated & tally.unparsed),
        input_truncated=len(tally.inputs_cut),
        score_sets=store.score_sets(run.run_id),
        notes=_notes(run) + sorted(tally.issues),
    )


@dataclass
class _Tally:
    """What the generations of a run add up to, as :class:`RunSummary` reports it.

    Answers are (sample id, epoch) pairs, of which a run has one generation each.
    """

    generated: set[tuple[str, int]] = field(default_factory=set)
    unparsed: set[tuple[str, int]] = field(default_factory=set)
    truncated: set[tuple[str, int]] = field(default_factory=set)
    """The answers with a model call stopped at its token limit."""
    inputs_cut: set[tuple[str, int]] = field(default_factory=set)
    """The answers whose input was cut to fit the context window."""
    usage: Usage = field(default_factory=Usage)
    latencies: list[float] = field(default_factory=list)
    keys: set[str] = field(default_factory=set)
    """The metadata keys of the samples."""
    issues: set[str] = field(default_factory=set)
    """The notes of samples whose key is flawed (``Sample.data_issue_note``)."""
    groups: dict[str, list[str]] = field(default_factory=dict)
    """Per sample id, the groups of ``summarize(by=…)`` it counts in."""

    def add(self, sample: Sample, generation: Generation, by: str | None) -> None:
        """Count one generation of ``sample``; with ``by``, note the groups the sample counts in."""
        answer = (sample.id, generation.epoch)
        self.generated.add(answer)
        if not generation.answer.parsed:
            self.unparsed.add(answer)
        if generation.truncated:
            self.truncated.add(answer)
        if input_was_cut(generation.metadata):
            self.inputs_cut.add(answer)
        self.usage = self.usage + generation.usage
        self.latencies.append(generation.latency)
        self.keys.update(sample.metadata)
        note = sample.data_issue_note()
        if note is not None:
            self.issues.add(note)
        if by is not None:
            label = sample.metadata.get(by)
            labels = label if isinstance(label, list) else [label]
            self.groups[sample.id] = [str(x) for x in labels if x is not None]


def _tally_generations(store: RunStore, run_id: str, samples: set[str] | None, by: str | None) -> _Tally:
    """The :class:`_Tally` of the run's generations (of ``samples`` only, when given)."""
    tally = _Tally()
    for sample, generation in store.generations(run_id):
        if samples is None or sample.id in samples:
            tally.add(sample, generation, by)
    return tally


def _grouped_values(
    store: RunStore, run_id: str, samples: set[str] | None, groups: dict[str, list[str]]
) -> dict[tuple[str, str, str | None], list[float | None]]:
    """Per (scorer, metric, group), the value of each sample in it (:func:`sample_values`); group ``None``: all."""
    values: dict[tuple[str, str, str | None], list[float | None]] = defaultdict(list)
    for (scorer, metric), by_sample in sample_values(store, run_id, samples).items():
        for sample_id, value in by_sample.items():
            values[(scorer, metric, None)].append(value)
            for label in groups.get(sample_id, []):
                values[(scorer, metric, label)].append(value)
    return values


def _metric_summary(
    scorer: str, metric: str, group: str | None, raw: list[float | None], *, level: float, n_resamples: int, seed: int
) -> MetricSummary:
    """The mean of the values in ``raw`` that are present, with its interval (see :class:`MetricSummary`)."""
    present = np.array([v for v in raw if v is not None], dtype=float)
    method = "wilson" if present.size and bool(np.isin(present, (0.0, 1.0)).all()) else "bootstrap"
    if method == "wilson":
        low, high = wilson_ci(int(present.sum()), int(present.size), level=level)
    elif present.size < 2:  # a bootstrap needs two values; the interval is undefined
        low = high = float("nan")
    else:
        estimate = bootstrap_ci(present, n_resamples=n_resamples, level=level, seed=seed)
        low, high = estimate.ci if estimate.ci is not None else (estimate.value, estimate.value)
    return MetricSummary(
        scorer=scorer,
        metric=metric,
        value=float(present.mean()) if present.size else None,
        ci=(float(low), float(high)),
        n=int(present.size),
        missing=len(raw) - int(present.size),
        group=group,
        ci_method=method,
    )


def _scored_and_cut(
    store: RunStore, run_id: str, samples: set[str] | None
) -> tuple[dict[str, set[tuple[str, int]]], dict[str, set[tuple[str, int]]]]:
    """Per score set label, the answers (sample, epoch) it graded and those it left ungraded as cut."""
    scored: defaultdict[str, set[tuple[str, int]]] = defaultdict(set)
    cut: defaultdict[str, set[tuple[str, int]]] = defaultdict(set)
    for sample_id, epoch, label, score in store.scores(run_id):
        if samples is None or sample_id in samples:
            (cut if is_cut(score) else scored)[label].add((sample_id, epoch))
    return scored, cut


NOT_GRADED = "(no answer graded)"
"""The metric of a score set every one of whose answers was cut at its token limit, so that its truncations show."""


def _with_truncations(
    metrics: list[MetricSummary],
    scored_and_cut: tuple[dict[str, set[tuple[str, int]]], dict[str, set[tuple[str, int]]]],
    inputs_cut: set[tuple[str, int]],
    groups: dict[str, list[str]],
) -> list[MetricSummary]:
    """``metrics`` with their truncation counts (see :class:`MetricSummary`), each within its group.

    A score set none of whose answers was graded (each cut) is listed under :data:`NOT_GRADED`.
    """
    scored, cut = scored_and_cut
    listed = {m.scorer for m in metrics}
    metrics = metrics + [
        MetricSummary(label, NOT_GRADED, None, (math.nan, math.nan), 0, 0) for label in sorted(set(cut) - listed)
    ]

    def within(keys: set[tuple[str, int]], group: str | None) -> int:
        return sum(group is None or group in groups.get(sample_id, []) for sample_id, _epoch in keys)

    return [
        replace(
            m,
            truncated=within(cut.get(m.scorer, set()), m.group),
            input_truncated=within(scored.get(m.scorer, set()) & inputs_cut, m.group),
        )
        for m in metrics
    ]


def _run_metrics(store: RunStore, run_id: str, samples: set[str] | None) -> list[MetricSummary]:
    """The run-level metrics that scorers declare (``ebmeval.tasks.run_metric``), per score set."""
    found = []
    for score_set in store.score_sets(run_id):
        if score_set.name not in scorer_registry or score_set.name not in run_metric_registry:
            continue
        scores = [
            s
            for sample, _e, _l, s in store.scores(run_id, score_set.id)
            if (samples is None or sample in samples) and not is_cut(s)
        ]
        for metric, (value, ci) in run_metric_registry.get(score_set.name)(scores).items():
            low, high = ci if ci is not None else (float("nan"), float("nan"))
            found.append(MetricSummary(score_set.label, metric, value, (low, high), len(scores), 0))
    return found


def input_was_cut(metadata: dict[str, Any]) -> bool:
    """Whether a generation's workflow record says an input was cut to fit the context window.

    Question-answering workflows record ``metadata["context"]["truncated"]``; synthesis
    workflows ``metadata["overflow"]``, whose ``truncated`` / ``summaries_truncated`` list the
    documents cut.
    """
    context, overflow = metadata.get("context"), metadata.get("overflow")
    if isinstance(context, dict) and context.get("truncated") is True:
        return True
    return isinstance(overflow, dict) and bool(overflow.get("truncated") or overflow.get("summaries_truncated"))


def sample_values(
    store: RunStore, run_id: str, samples: set[str] | None = None
) -> dict[tuple[str, str], dict[str, float | None]]:
    """Per (scorer, metric), each sample's value: the mean over its epochs (:func:`epoch_mean`).

    ``samples`` restricts it to those sample ids. Summaries and paired comparisons read
    values through this, so both take the sample as the unit of analysis.
    """
    epochs: dict[tuple[str, str], dict[str, list[float | None]]] = defaultdict(lambda: defaultdict(list))
    for sample_id, _epoch, scorer, score in store.scores(run_id):
        if samples is None or sample_id in samples:
            for metric, value in score.values.items():
                epochs[(scorer, metric)][sample_id].append(value)
    return {key: {sample: epoch_mean(found) for sample, found in by.items()} for key, by in epochs.items()}


def epoch_mean(values: list[float | None]) -> float | None:
    """A sample's value over its epochs: the mean of those with a value, ``None`` when none has one.

    The sample, not the sample × epoch, is the unit of analysis: epochs of one sample are not
    independent observations, so intervals and paired tests take one value per sample.
    """
    present = [value for value in values if value is not None]
    return sum(present) / len(present) if present else None


def _notes(run: RunRecord) -> list[str]:
    return _default_roles(run) + _epoch_notes(run) + _ignored(run)


def _ignored(run: RunRecord) -> list[str]:
    """A note naming the task options given that the run's workflow does not use."""
    ignored = run.config.get("ignored_args") or []
    if not ignored:
        return []
    workflow = (run.config.get("task_args") or {}).get("workflow")
    return [
        f"task options {', '.join(ignored)} do not apply to workflow {workflow!r}: ignored (not part of the run id)"
    ]


def _default_roles(run: RunRecord) -> list[str]:
    """A note for each role (judge …) played by the model under evaluation or the task's default, none being given."""
    given = set(run.config.get("roles") or {})
    models = run.provenance.get("models") or {}
    notes = []
    for role in sorted(set(models) - given - {"model"}):
        shared = [other for other in sorted(given) if models.get(other) == models[role]]
        if shared:
            notes.append(
                f"role {role}: played by the model of role {shared[0]}; choose another with --role {role}=SPEC"
            )
        elif models[role] == models.get("model"):
            notes.append(
                f"role {role}: played by the model under evaluation ({run.model}); "
                f"choose another with --role {role}=SPEC"
            )
        else:
            name = (models[role] or {}).get("name", "?")
            notes.append(
                f"role {role}: played by the task's default model ({name}), the same for every model under "
                f"evaluation; choose another with --role {role}=SPEC"
            )
    return notes


def _epoch_notes(run: RunRecord) -> list[str]:
    epochs = int(run.config.get("epochs", 1))
    if epochs < 2:
        return []
    notes = []
    temperature = (run.config.get("model_settings") or {}).get("temperature")
    if temperature == 0:
        notes.append(
            f"{epochs} epochs at temperature 0: greedy decoding repeats one reply per sample "
            "(later epochs are served from the response cache), so epochs add no information"
        )
    notes.append(f"{epochs} epochs per sample, averaged per sample: n counts samples, intervals resample samples")
    return notes
