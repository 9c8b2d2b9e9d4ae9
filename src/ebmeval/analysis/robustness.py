"""How much a judge score depends on the judge model and the prompt wording, and how it tracks humans.

All functions work on a stored run: answers are never regenerated. :func:`sweep`
applies judge variants with :func:`ebmeval.runner.rescore` under distinct scorer names
(``judge/steps-with-reference@p3``, ``…[smollm2]``), so a repeated sweep reuses every
score already stored and an interrupted one resumes.
"""

from __future__ import annotations

import csv
import math
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._util.errors import ConfigError, DataError, UsageError
from ..models import Model
from ..report import SIGN, condition_label
from ..runner import register_scorers, rescore
from ..scorers.judges import (
    LIST_MAX_TOKENS,
    PROMPT_VARIANTS,
    STEP_MAX_TOKENS,
    StepsWithoutReference,
    StepsWithReference,
    StepsWithReferenceSingle,
)
from ..stats import BlandAltman, Estimate, TestResult, bland_altman, bootstrap_ci, cohen_kappa, pearson
from ..store import RunStore
from ..tables import Column, Table
from ..tables import Estimate as Cell
from ..tasks import Scorer

STRATEGIES = ("steps-with-reference", "steps-with-reference-single", "steps-without-reference")
"""Judge strategies :func:`sweep` can time, by the suffix of their scorer name."""

_METRIC = {
    "steps-with-reference": "steps_supported",
    "steps-with-reference-single": "steps_supported",
    "steps-without-reference": "steps_covered",
}


@dataclass(frozen=True)
class SweepRow:
    """One judge variant applied to every generation of a run.

    Attributes:
        strategy: ``steps-with-reference``, ``steps-with-reference-single`` or ``steps-without-reference``.
        judge: Name of the judge model (a key of ``judges``).
        prompt: Prompt variant (``p1`` … ``p5``) of the per-step judge; ``-`` for the others.
        scorer: Scorer name the scores are stored under.
        metric: Name of the score value.
        mean: Mean over the samples with a score, or NaN when none has one.
        ci: 95% percentile bootstrap interval of the mean (``bootstrap_ci``), or None for fewer than 2 scores.
        n: Samples with a score.
        unparsed: Samples whose score is None (judge reply unreadable after the retry).
        wall_s: Seconds this call spent scoring (0 when every score was already stored).
        scored: Samples newly scored by this call.
    """

    strategy: str
    judge: str
    prompt: str
    scorer: str
    metric: str
    mean: float
    ci: tuple[float, float] | None
    n: int
    unparsed: int
    wall_s: float
    scored: int


def _judge_scorer(strategy: str, prompt: str, tag: str | None, max_tokens: int | None, temperature: float) -> Scorer:
    suffix = f"[{tag}]" if tag else ""
    if strategy == "steps-with-reference":
        budget = STEP_MAX_TOKENS if max_tokens is None else max_tokens
        name = StepsWithReference.default_name(prompt) + suffix
        return StepsWithReference(prompt, name=name, max_tokens=budget, temperature=temperature)
    budget = LIST_MAX_TOKENS if max_tokens is None else max_tokens
    if strategy == "steps-with-reference-single":
        name = "judge/steps-with-reference-single" + suffix
        return StepsWithReferenceSingle(name=name, max_tokens=budget, temperature=temperature)
    if strategy == "steps-without-reference":
        name = "judge/steps-without-reference" + suffix
        return StepsWithoutReference(name=name, max_tokens=budget, temperature=temperature)
    raise ConfigError("strategies", f"unknown judge strategy {strategy!r} (known: {', '.join(STRATEGIES)})")


def metric_values(store: RunStore, run_id: str, scorer: str, metric: str) -> tuple[dict[str, float], int]:
    """Per sample id, the mean of ``metric`` over epochs, and the count of ``None`` scores."""
    found: dict[str, list[float]] = defaultdict(list)
    missing = 0
    for sample_id, _epoch, _name, score in store.scores(run_id, scorer):
        value = score.values.get(metric)
        if value is None:
            missing += 1
        else:
            found[sample_id].append(value)
    return {sample_id: float(np.mean(v)) for sample_id, v in found.items()}, missing


def _summarize(values: Sequence[float], seed: int, n_resamples: int) -> tuple[float, tuple[float, float] | None]:
    if not values:
        return math.nan, None
    if len(values) < 2:
        return float(values[0]), None
    estimate = bootstrap_ci(np.asarray(values), n_resamples=n_resamples, seed=seed)
    return estimate.value, estimate.ci


def sweep(
    store_path: str,
    run_id: str,
    judges: Mapping[str, Model],
    prompt_variants: Sequence[str] = PROMPT_VARIANTS,
    *,
    strategies: Sequence[str] = ("steps-with-reference",),
    prompt_judge: str | None = None,
    concurrency: int = 1,
    seed: int = 0,
    n_resamples: int = 10_000,
    judge_max_tokens: int | None = None,
    judge_temperature: float | None = None,
) -> list[SweepRow]:
    """Judge the stored rationales of ``run_id`` with several judges, strategies and prompt wordings.

    Every judge in ``judges`` applies every strategy in ``strategies`` with the default
    prompt; ``prompt_judge`` (default: the first judge) also applies the per-step judge
    with every prompt in ``prompt_variants``. Scores are stored in the run under scorer
    names carrying the prompt (``@p3``) and the judge (``[name]``), so nothing is judged
    twice. Each row's mean has a 95% percentile bootstrap CI over samples (scores of
    several epochs of a sample are averaged first). ``judge_max_tokens`` and
    ``judge_temperature`` replace the judges' own reply budget and temperature; they are
    part of each score set's identity.

    Returns:
        One :class:`SweepRow` per (strategy, judge) pair, then one per further prompt variant.
    """
    plan = _plan(judges, prompt_variants, strategies, prompt_judge)
    temperature = 0.0 if judge_temperature is None else judge_temperature
    rows = []
    for strategy, judge, prompt in plan:
        scorer = _judge_scorer(strategy, prompt, judge, judge_max_tokens, temperature)
        applied = _apply(store_path, run_id, scorer, judges[judge], _METRIC[strategy], concurrency)
        mean, ci = _summarize(list(applied.values.values()), seed, n_resamples)
        rows.append(
            SweepRow(
                strategy=strategy,
                judge=judge,
                prompt=prompt if strategy == "steps-with-reference" else "-",
                scorer=scorer.name,
                metric=_METRIC[strategy],
                mean=mean,
                ci=ci,
                n=len(applied.values),
                unparsed=applied.missing,
                wall_s=applied.wall_s,
                scored=applied.scored,
            )
        )
    return rows


def _plan(
    judges: Mapping[str, Model], prompt_variants: Sequence[str], strategies: Sequence[str], prompt_judge: str | None
) -> list[tuple[str, str, str]]:
    """The (strategy, judge, prompt) a :func:`sweep` applies, in the order of its rows."""
    if not judges:
        raise UsageError("sweep needs at least one judge model")
    chosen = prompt_judge or next(iter(judges))
    if chosen not in judges:
        raise UsageError(f"prompt_judge {chosen!r} is not one of the judges ({', '.join(judges)})")
    plan: list[tuple[str, str, str]] = [(s, j, PROMPT_VARIANTS[0]) for j in judges for s in strategies]
    plan += [("steps-with-reference", chosen, p) for p in prompt_variants if p != PROMPT_VARIANTS[0]]
    if PROMPT_VARIANTS[0] in prompt_variants and ("steps-with-reference", chosen, PROMPT_VARIANTS[0]) not in plan:
        plan.append(("steps-with-reference", chosen, PROMPT_VARIANTS[0]))
    return plan


@dataclass(frozen=True)
class _Applied:
    """What applying one judge variant to a run gave."""

    values: dict[str, float]
    """Per sample id, the mean of the metric over epochs."""
    missing: int
    """Scores without the metric."""
    wall_s: float
    """Seconds spent scoring."""
    scored: int
    """Samples newly scored."""


def _apply(store_path: str, run_id: str, scorer: Scorer, judge: Model, metric: str, concurrency: int) -> _Applied:
    """Score the run with ``scorer`` judged by ``judge`` (:func:`ebmeval.runner.rescore`), then read ``metric``."""
    before, score_set = _count_scored(store_path, run_id, scorer, judge)
    started = time.perf_counter()
    rescore(store_path, run_id, [scorer], {"judge": judge}, concurrency=concurrency)
    wall = time.perf_counter() - started
    store = RunStore(store_path)
    try:
        full_id = store.get_run(run_id).run_id
        values, missing = metric_values(store, full_id, score_set, metric)
        return _Applied(values, missing, wall, len(store.scored(full_id, score_set)) - before)
    finally:
        store.close()


def _count_scored(store_path: str, run_id: str, scorer: Scorer, judge: Model) -> tuple[int, str]:
    """How many samples the score set of ``scorer`` judged by ``judge`` has scored, and its id."""
    store = RunStore(store_path)
    try:
        full_id = store.get_run(run_id).run_id
        (score_set,) = register_scorers(store, full_id, [scorer], {"judge": judge})
        return len(store.scored(full_id, score_set.id)), score_set.id
    finally:
        store.close()


def format_table(rows: Sequence[SweepRow]) -> str:
    """The sweep as a Markdown table: strategy, judge, prompt, mean [95% CI], n, unparsed, wall time."""
    table = Table(
        "",
        [
            "strategy",
            "judge",
            "prompt",
            Column("mean [95% CI]", "estimate"),
            Column("n", "number"),
            Column("unparsed", "number"),
            Column("wall s", "number", fmt="{:.1f}"),
            Column("newly scored", "number"),
        ],
    )
    for r in rows:
        table.add(r.strategy, r.judge, r.prompt, Cell(r.mean, r.ci), r.n, r.unparsed, r.wall_s, r.scored)
    return table.markdown().rstrip("\n")


@dataclass(frozen=True)
class StepAgreement:
    """Agreement of two step judges on the same generations.

    Attributes:
        kappa: Cohen's kappa of the per-step verdicts (supported = 1, not = 0).
        correlation: Pearson r (with 95% CI) of the per-sample scores, or None below 3 samples
            or with a constant score.
        n_steps: Steps with a verdict from both judges.
        n_samples: Samples with a score from both judges.
    """

    kappa: Estimate
    correlation: TestResult | None
    n_steps: int
    n_samples: int


def step_agreement(
    store_path: str,
    run_id: str,
    first: str = "judge/steps-with-reference",
    second: str = "judge/steps-with-reference-single",
) -> StepAgreement:
    """Agreement of two stored step judges: Cohen's kappa on verdicts, Pearson r on scores.

    kappa = (p_o − p_e) / (1 − p_e) over the steps both judges gave a verdict for
    (:func:`ebmeval.stats.cohen_kappa`); r = cov(s1, s2) / (sd(s1) sd(s2)) over the samples
    both scored (:func:`ebmeval.stats.pearson`, Fisher-z CI).
    """
    store = RunStore(store_path)
    try:
        run_id = store.get_run(run_id).run_id
        verdicts = {name: _verdicts(store, run_id, name) for name in (first, second)}
        scores = {name: metric_values(store, run_id, name, "steps_supported")[0] for name in (first, second)}
    finally:
        store.close()
    keys = sorted(set(verdicts[first]) & set(verdicts[second]))
    if not keys:
        raise UsageError(f"no step has a verdict from both '{first}' and '{second}' in run {run_id}")
    a = [verdicts[first][k] for k in keys]
    b = [verdicts[second][k] for k in keys]
    samples = sorted(set(scores[first]) & set(scores[second]))
    x = [scores[first][s] for s in samples]
    y = [scores[second][s] for s in samples]
    correlation = pearson(x, y) if len(samples) >= 3 and len(set(x)) > 1 and len(set(y)) > 1 else None
    return StepAgreement(
        kappa=cohen_kappa(a, b, categories=[0.0, 1.0]),
        correlation=correlation,
        n_steps=len(keys),
        n_samples=len(samples),
    )


def _verdicts(store: RunStore, run_id: str, scorer: str) -> dict[tuple[str, int, int], float]:
    """Per (sample, epoch, step number): 1.0 supported, 0.0 not; unreadable verdicts left out."""
    found = {}
    for sample_id, epoch, _name, score in store.scores(run_id, scorer):
        for number, verdict in enumerate(score.metadata.get("verdicts", []), start=1):
            if verdict.get("supported") is not None:
                found[(sample_id, epoch, number)] = 1.0 if verdict["supported"] else 0.0
    return found


def read_human_scores(path: str | Path) -> dict[str, float]:
    """Human scores from a CSV file with header ``sample_id,score`` (one row per sample).

    Raises ``DataError`` (with the line) for a missing column, a score that is not a
    finite number, or a sample id given twice.
    """
    source = Path(path)
    try:
        handle = source.open(newline="", encoding="utf-8")
    except OSError as exc:
        raise DataError(source, f"cannot read: {exc.strerror}") from None
    scores: dict[str, float] = {}
    with handle:
        reader = csv.DictReader(handle)
        for column in ("sample_id", "score"):
            if column not in (reader.fieldnames or []):
                raise DataError(source, "missing column", line=1, field=column)
        for line, row in enumerate(reader, start=2):
            sample_id = (row["sample_id"] or "").strip()
            if not sample_id:
                raise DataError(source, "empty sample id", line=line, field="sample_id")
            try:
                value = float(row["score"])
            except (TypeError, ValueError):
                raise DataError(source, "not a number", line=line, field="score", value=row["score"]) from None
            if not math.isfinite(value):
                raise DataError(source, "not a finite number", line=line, field="score", value=row["score"])
            if sample_id in scores:
                raise DataError(source, "sample id given twice", line=line, field="sample_id", value=sample_id)
            scores[sample_id] = value
    return scores


@dataclass(frozen=True)
class HumanAgreement:
    """How an automatic score tracks human scores on the same samples.

    Attributes:
        pearson: Pearson r with its 95% CI (``value``, ``ci``) and p-value.
        bland_altman: Bias mean(human − automatic) and limits of agreement.
        n: Samples with both scores.
        unmatched: Human-scored sample ids without an automatic score in the run.
        condition: The run's condition (task · workflow · model): one run is one condition.
        sign: The sign convention, the same as ``ebmeval annotate report``'s (``report.SIGN``).
    """

    pearson: TestResult
    bland_altman: BlandAltman
    n: int
    unmatched: list[str]
    condition: str = ""
    sign: str = SIGN


def human_agreement(
    store_path: str, run_id: str, scorer: str, metric: str, human_scores: str | Path | Mapping[str, float]
) -> HumanAgreement:
    """Pearson correlation and Bland–Altman agreement of a stored score with human scores.

    r = cov(h, a) / (sd(h) sd(a)) with a Fisher-z 95% CI (:func:`ebmeval.stats.pearson`);
    Bland–Altman on d = h − a: bias = mean(d), limits bias ∓ 1.96 sd(d)
    (:func:`ebmeval.stats.bland_altman`). ``human_scores`` is a CSV path (see
    :func:`read_human_scores`) or a mapping of sample id to score; scores of several
    epochs of a sample are averaged. The run is one condition, named in the result; compare
    several conditions with ``ebmeval annotate report``, which gives each its own statistics.
    """
    human = dict(human_scores) if isinstance(human_scores, Mapping) else read_human_scores(human_scores)
    store = RunStore(store_path)
    try:
        record = store.get_run(run_id)
        automatic, _missing = metric_values(store, record.run_id, scorer, metric)
    finally:
        store.close()
    shared = sorted(set(human) & set(automatic))
    if len(shared) < 3:
        raise UsageError(
            f"only {len(shared)} samples have both a human score and a '{scorer}' {metric} score; at least 3 are needed"
        )
    h = [human[s] for s in shared]
    a = [automatic[s] for s in shared]
    return HumanAgreement(
        pearson=pearson(h, a),
        bland_altman=bland_altman(h, a),
        n=len(shared),
        unmatched=sorted(set(human) - set(automatic)),
        condition=condition_label(record),
    )
