"""Pairwise arena over stored runs: judge every pair of answers in both orders, then rate the systems.

A *system* is one run of a long-form task (same task, different model or system prompt). For each
question answered by every run and each pair of runs (a, b), the judge sees the two answers twice:
a shown as A and b as B, then b as A and a as B. Each order gives a verdict per axis (A, B or tie),
mapped back to the systems. Per axis the two verdicts are combined into one match:

* both orders agree → that outcome (a win for one system, or a tie);
* they disagree → a tie, and the comparison counts as **position bias** (the verdict followed the
  position rather than the answer); rate = inconsistent / comparisons with both verdicts read;
* only one order could be read (after the judge's one retry) → that verdict alone;
* neither → no match (counted as unjudged).

Ratings per axis from the matches: sequential Elo (:func:`ebmeval.stats.elo_ratings`, initial 1000,
K = ``k``) and Bradley–Terry (:func:`ebmeval.stats.bradley_terry`), both with bootstrap intervals.

Length bias per axis, over decisive matches (not ties) between answers of different length
(words, whitespace-split): the share won by the longer answer with a percentile bootstrap interval
(:func:`ebmeval.stats.bootstrap_ci`), and the point-biserial correlation between "a won" (1/0) and
the length difference len(a) − len(b) (Pearson r of a binary and a continuous variable,
:func:`ebmeval.stats.pearson`, Fisher-z interval). A share near 1/2 and r near 0 mean no length bias.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._util.blocking import synchronous
from .._util.errors import ConfigError, UsageError, require_at_least_one
from .._util.hashing import stable_hash
from ..judges import AXES, PAIRWISE, STRICT, PairwiseVerdict, ask, parse_pairwise, render_pairwise, verdict_form
from ..models import GenerateConfig, Model
from ..runner import Failure, Progress, ProgressCallback, attempt, run_all
from ..stats import Estimate, Ratings, StatsInputError, TestResult, bootstrap_ci, bradley_terry, elo_ratings, pearson
from ..store import RunRecord, RunStore
from ..tables import MISSING, Column, Table
from ..tasks import Sample, SampleContext

JUDGE_MAX_TOKENS = 96
"""Reply budget of one pairwise judgement (one short line per axis)."""


@dataclass(frozen=True)
class Comparison:
    """One question judged for one pair of systems, in both orders.

    Attributes:
        sample_id: The question.
        a: Run id of the first system of the pair.
        b: Run id of the second.
        ab: Verdicts per axis with a shown first (in system terms: ``"a"``, ``"b"`` or ``"tie"``), or ``None``.
        ba: Verdicts per axis with b shown first, in system terms, or ``None``.
        length_a: Words in a's answer.
        length_b: Words in b's answer.
    """

    sample_id: str
    a: str
    b: str
    ab: dict[str, str] | None
    ba: dict[str, str] | None
    length_a: int
    length_b: int

    def outcome(self, axis: str) -> tuple[str | None, bool]:
        """The combined outcome (``"a"``, ``"b"``, ``"tie"`` or ``None``) and whether the orders disagreed."""
        first = self.ab.get(axis) if self.ab else None
        second = self.ba.get(axis) if self.ba else None
        if first is not None and second is not None:
            return (first, False) if first == second else ("tie", True)
        return first if first is not None else second, False


@dataclass(frozen=True)
class LengthBias:
    """Whether the judge prefers longer answers (formulas in the module docstring).

    Attributes:
        longer_won: Share of decisive matches of unequal length won by the longer answer, with a
            bootstrap interval; ``None`` with fewer than two such matches.
        correlation: Point-biserial r between "a won" and len(a) − len(b); ``None`` when undefined
            (fewer than three decisive matches, or a constant variable).
        n: Decisive matches of unequal length.
    """

    longer_won: Estimate | None
    correlation: TestResult | None
    n: int


@dataclass(frozen=True)
class AxisResult:
    """The arena's results on one axis.

    Attributes:
        axis: Axis name.
        elo: Elo ratings with bootstrap intervals.
        bradley_terry: Bradley–Terry ratings with bootstrap intervals, or ``None`` when they do not
            exist (a system won or lost every comparison); ``bt_note`` says why.
        record: Wins, losses and ties of each system (run id → (wins, losses, ties)).
        matches: Combined matches used for the ratings.
        position_bias: Comparisons whose two orders disagreed.
        both_orders: Comparisons with both orders read (the denominator of the rate).
        unjudged: Comparisons with neither order read.
        length_bias: The length-bias check.
    """

    axis: str
    elo: Ratings
    bradley_terry: Ratings | None
    bt_note: str | None
    record: dict[str, tuple[int, int, int]]
    matches: int
    position_bias: int
    both_orders: int
    unjudged: int
    length_bias: LengthBias

    @property
    def position_bias_rate(self) -> float | None:
        """position_bias / both_orders."""
        return self.position_bias / self.both_orders if self.both_orders else None


@dataclass
class ArenaResult:
    """Everything :func:`run_arena` found.

    Attributes:
        arena_id: Key of the arena's stored judge steps (same runs, judge, axes → same id).
        systems: Run id → label (model and task options).
        questions: Questions answered by every run and compared.
        comparisons: Every comparison with its verdicts.
        axes: Results per axis.
        judge: Name of the judge model.
        errors: Comparisons whose judgement failed, with the error; the ratings leave them out.
    """

    arena_id: str
    systems: dict[str, str]
    questions: int
    comparisons: list[Comparison]
    axes: dict[str, AxisResult] = field(default_factory=dict)
    judge: str = ""
    min_matches: int | None = None
    """The sampled design's target of matches per pair and axis (``None``: exhaustive)."""

    def pair_matches(self, axis: str) -> dict[tuple[str, str], int]:
        """Matches (comparisons with an outcome) of each pair of systems on ``axis``."""
        counts: dict[tuple[str, str], int] = {}
        for c in self.comparisons:
            counts[(c.a, c.b)] = counts.get((c.a, c.b), 0) + (c.outcome(axis)[0] is not None)
        return counts

    errors: list[dict[str, str]] = field(default_factory=list)
    """Comparisons whose judgement failed (``sample_id``, ``a``, ``b``, ``error``); left out of the ratings."""

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready form (what ``ebmeval arena --json`` prints)."""

        def ratings(r: Ratings | None) -> dict[str, Any] | None:
            if r is None:
                return None
            return {run: {"value": r.value[run], "ci": list(r.ci[run])} for run in r.value}

        def estimate(e: Estimate | TestResult | None) -> dict[str, Any] | None:
            return None if e is None else {"value": e.value, "ci": None if e.ci is None else list(e.ci), "n": e.n}

        return {
            "arena_id": self.arena_id,
            "judge": self.judge,
            "systems": self.systems,
            "questions": self.questions,
            "design": "exhaustive" if self.min_matches is None else f"sampled, at least {self.min_matches} matches",
            "pair_matches": {
                axis: {f"{a} vs {b}": n for (a, b), n in self.pair_matches(axis).items()} for axis in self.axes
            },
            "errors": self.errors,
            "axes": {
                axis: {
                    "elo": ratings(r.elo),
                    "bradley_terry": ratings(r.bradley_terry),
                    "bradley_terry_note": r.bt_note,
                    "record": {
                        run: dict(zip(("wins", "losses", "ties"), wlt, strict=True)) for run, wlt in r.record.items()
                    },
                    "matches": r.matches,
                    "position_bias": r.position_bias,
                    "both_orders": r.both_orders,
                    "position_bias_rate": r.position_bias_rate,
                    "unjudged": r.unjudged,
                    "length_bias": {
                        "n": r.length_bias.n,
                        "longer_won": estimate(r.length_bias.longer_won),
                        "point_biserial": estimate(r.length_bias.correlation),
                    },
                }
                for axis, r in self.axes.items()
            },
        }

    def to_markdown(self) -> str:
        """Tables per axis: Elo and Bradley–Terry with intervals, record, position and length bias."""
        lines = [
            f"# Arena {self.arena_id}",
            "",
            f"Judge: {self.judge}; {len(self.systems)} systems, {self.questions} questions, "
            f"{len(self.comparisons)} comparisons, each judged in both orders"
            + (f"; {len(self.errors)} comparisons failed and are left out." if self.errors else "."),
            "",
        ]
        names = _short_names(self.systems)
        systems = Table("", ["system", "run", "label"])
        for run, label in self.systems.items():
            systems.add(names[run], run, label)
        lines.append(systems.markdown().rstrip("\n"))
        for result in self.axes.values():
            lines += ["", f"## {result.axis}", ""]
            ratings = Table(
                "",
                [
                    "system",
                    Column("Elo", "number", fmt="{:.0f}"),
                    Column("Elo 95% CI", "interval", fmt="{:.0f}", pair="{}–{}"),
                    Column("BT", "number", fmt="{:.0f}"),
                    Column("BT 95% CI", "interval", fmt="{:.0f}", pair="{}–{}"),
                    Column("W", "number"),
                    Column("L", "number"),
                    Column("T", "number"),
                ],
            )
            bt = result.bradley_terry
            for run in sorted(self.systems, key=lambda run: -result.elo.value[run]):
                ratings.add(
                    names[run],
                    result.elo.value[run],
                    result.elo.ci[run],
                    bt.value[run] if bt else None,
                    bt.ci[run] if bt else None,
                    *result.record[run],
                )
            lines.append(ratings.markdown().rstrip("\n"))
            rate = result.position_bias_rate
            shown = MISSING if rate is None else f"{rate:.2f}"
            lines += [
                "",
                f"Matches: {result.matches}; position bias: {result.position_bias} of {result.both_orders} "
                f"comparisons judged in both orders (rate {shown}); unjudged: {result.unjudged}.",
            ]
            if result.bt_note:
                lines.append(f"Bradley–Terry: {result.bt_note}")
            lines.append(_length_line(result.length_bias))
        return "\n".join(lines)


def _short_names(systems: dict[str, str]) -> dict[str, str]:
    return {run: chr(ord("A") + i) if i < 26 else run[:8] for i, run in enumerate(systems)}


def _length_line(bias: LengthBias) -> str:
    parts = [f"Length bias ({bias.n} decisive matches of unequal length):"]
    if bias.longer_won is not None and bias.longer_won.ci is not None:
        low, high = bias.longer_won.ci
        parts.append(f"longer answer won {bias.longer_won.value:.2f} (95% CI {low:.2f}–{high:.2f});")
    else:
        parts.append("longer-answer share undefined;")
    if bias.correlation is not None and bias.correlation.value is not None and bias.correlation.ci is not None:
        low, high = bias.correlation.ci
        parts.append(f"point-biserial r = {bias.correlation.value:.2f} (95% CI {low:.2f}–{high:.2f}).")
    else:
        parts.append("point-biserial r undefined.")
    return " ".join(parts)


def _label(run: RunRecord) -> str:
    options = {k: v for k, v in run.config.get("task_args", {}).items() if v not in (None, "", [], {})}
    shown = ", ".join(f"{k}={v!r}" for k, v in sorted(options.items()))
    return f"{run.model} ({shown})" if shown else run.model


def _words(text: str) -> int:
    return len(text.split())


def _to_systems(verdicts: dict[str, PairwiseVerdict] | None, first_is_a: bool) -> dict[str, str] | None:
    if verdicts is None:
        return None
    mapping = {"A": "a", "B": "b"} if first_is_a else {"A": "b", "B": "a"}
    return {axis: mapping.get(v, "tie") for axis, v in verdicts.items()}


def _length_bias(comparisons: Sequence[Comparison], axis: str, seed: int) -> LengthBias:
    a_won: list[float] = []
    difference: list[float] = []
    for c in comparisons:
        outcome, _ = c.outcome(axis)
        if outcome in ("a", "b") and c.length_a != c.length_b:
            a_won.append(1.0 if outcome == "a" else 0.0)
            difference.append(float(c.length_a - c.length_b))
    longer = [float((d > 0) == (w == 1.0)) for w, d in zip(a_won, difference, strict=True)]
    share = bootstrap_ci(np.array(longer), n_resamples=2000, seed=seed) if len(longer) >= 2 else None
    try:
        correlation: TestResult | None = pearson(a_won, difference)
    except StatsInputError:
        correlation = None
    return LengthBias(share, correlation, len(longer))


def _axis_result(
    axis: str, comparisons: Sequence[Comparison], runs: Sequence[str], *, k: float, n_bootstrap: int, seed: int
) -> AxisResult:
    matches: list[tuple[str, str, str]] = []
    record = {run: [0, 0, 0] for run in runs}
    position_bias = both = unjudged = 0
    for c in comparisons:
        outcome, inconsistent = c.outcome(axis)
        if c.ab is not None and c.ba is not None:
            both += 1
        position_bias += inconsistent
        if outcome is None:
            unjudged += 1
            continue
        matches.append((c.a, c.b, outcome))
        if outcome == "tie":
            record[c.a][2] += 1
            record[c.b][2] += 1
        else:
            winner, loser = (c.a, c.b) if outcome == "a" else (c.b, c.a)
            record[winner][0] += 1
            record[loser][1] += 1
    if not matches:
        raise UsageError(f"axis '{axis}': no comparison could be judged; check the judge's replies")
    elo = elo_ratings(matches, k=k, n_bootstrap=n_bootstrap, seed=seed)
    bt: Ratings | None
    try:
        bt, note = bradley_terry(matches, n_bootstrap=n_bootstrap, seed=seed), None
    except StatsInputError as exc:
        bt, note = None, str(exc)
    return AxisResult(
        axis=axis,
        elo=elo,
        bradley_terry=bt,
        bt_note=note,
        record={run: (w, lost, t) for run, (w, lost, t) in record.items()},
        matches=len(matches),
        position_bias=position_bias,
        both_orders=both,
        unjudged=unjudged,
        length_bias=_length_bias(comparisons, axis, seed),
    )


def _answers(store: RunStore, run: RunRecord, prefix: str = "") -> dict[str, tuple[Sample, str]]:
    return {
        prefix + sample.id: (sample, generation.output)
        for sample, generation in store.generations(run.run_id)
        if generation.epoch == 0 and generation.answer.parsed
    }


Systems = tuple[dict[str, dict[str, tuple[Sample, str]]], dict[str, str], list[str]]
"""Answers by system id and question key, labels by system id, and every run id named."""


def pooled_systems(store: RunStore, groups: Sequence[str | Sequence[str]]) -> Systems:
    """The systems of an arena: each is one run, or a group of runs of different tasks pooled into one.

    A group (``"RUN_A1,RUN_A2"`` or a list) pools one system's runs of several tasks (MRAG pools
    LiveQA, MedicationQA and HealthSearchQA): its questions are keyed ``<task>/<sample id>``,
    every system must answer the same tasks, and its id joins the run ids with ``+``. Single runs
    keep their run id and plain sample ids (so an arena of single runs is stored as before); they
    must all answer one task.
    """
    named = [[g] if isinstance(g, str) else list(g) for g in groups]
    named = [[part.strip() for item in group for part in item.split(",") if part.strip()] for group in named]
    answers: dict[str, dict[str, tuple[Sample, str]]] = {}
    labels: dict[str, str] = {}
    task_sets: dict[str, tuple[str, ...]] = {}
    run_ids: list[str] = []
    pooled = any(len(group) > 1 for group in named)
    for group in named:
        runs = [store.get_run(r) for r in group]
        tasks = tuple(sorted(r.task for r in runs))
        if len(set(tasks)) < len(tasks):
            raise UsageError(f"runs {', '.join(r.run_id for r in runs)} pool two runs of one task into one system")
        system = "+".join(sorted(r.run_id for r in runs))
        answers[system] = {}
        for run in runs:
            answers[system].update(_answers(store, run, f"{run.task}/" if pooled else ""))
        labels[system] = " + ".join(f"{_label(r)} [{r.task}]" if pooled else _label(r) for r in runs)
        task_sets[system] = tasks
        run_ids += [r.run_id for r in runs]
    if len(set(task_sets.values())) > 1:
        listed = "; ".join(f"{', '.join(t)}" for t in dict.fromkeys(task_sets.values()))
        what = "the runs answer different tasks" if not pooled else "the systems pool different tasks"
        raise UsageError(f"{what} ({listed}); compare runs of one task, or pool the same tasks in every system")
    return answers, labels, run_ids


def sampled_pairs(common: Sequence[str], systems: Sequence[str], *, seed: int) -> dict[tuple[str, str], list[str]]:
    """For each pair of systems, the shared questions in a seeded random order (MRAG's sampled design).

    The arena judges each pair's questions in this order until the pair has ``min_matches``
    matches on every axis (or its questions run out); the order depends only on the seed, the
    questions and the pair, not on the judge's verdicts.
    """
    order: dict[tuple[str, str], list[str]] = {}
    for a, b in itertools.combinations(systems, 2):
        rng = np.random.default_rng(int(stable_hash([seed, a, b], 8), 16))
        order[(a, b)] = [common[i] for i in rng.permutation(len(common))]
    return order


def _short_of(comparisons: Sequence[Comparison], axes: Sequence[str], target: int) -> int:
    """Matches still missing on the pair's worst axis."""
    return max(target - sum(c.outcome(axis)[0] is not None for c in comparisons) for axis in axes)


async def _judge_pair(
    store: RunStore,
    arena_id: str,
    judge: Model,
    sample: Sample,
    answers: tuple[tuple[str, str], tuple[str, str]],
    axes: Sequence[str],
    config: GenerateConfig,
) -> Comparison:
    (run_a, text_a), (run_b, text_b) = answers
    ctx = SampleContext({"judge": judge}, store.arena_memo(arena_id, f"{sample.id}|{run_a}|{run_b}"))
    strict = STRICT.render(form=verdict_form(axes))

    def parse(text: str) -> dict[str, PairwiseVerdict] | None:
        return parse_pairwise(text, axes)

    ab = await ask(ctx, "arena/ab", render_pairwise(sample.input, text_a, text_b, axes), parse, strict, config=config)
    ba = await ask(ctx, "arena/ba", render_pairwise(sample.input, text_b, text_a, axes), parse, strict, config=config)
    return Comparison(
        sample_id=sample.id,
        a=run_a,
        b=run_b,
        ab=_to_systems(ab.value, first_is_a=True),
        ba=_to_systems(ba.value, first_is_a=False),
        length_a=_words(text_a),
        length_b=_words(text_b),
    )


_Judged = tuple[list[Comparison], list[dict[str, str]]]
"""The comparisons a batch of judgements made, and an error record for each that failed."""

_JudgeBatch = Callable[[Sequence[tuple[str, str, str]]], Awaitable[_Judged]]
"""Judges a batch of (question, system a, system b)."""


async def arun_arena(
    store_path: str | Path,
    run_ids: Sequence[str],
    *,
    judge: Model,
    axes: Sequence[str] = tuple(AXES),
    k: float = 40.0,
    seed: int = 0,
    concurrency: int = 4,
    limit: int | None = None,
    n_bootstrap: int = 1000,
    max_tokens: int = JUDGE_MAX_TOKENS,
    min_matches: int | None = None,
    on_progress: ProgressCallback | None = None,
) -> ArenaResult:
    """Judge the answers of two or more runs pairwise on ``axes`` and rate the runs (see the module docstring).

    Judge calls are steps ``arena/ab`` and ``arena/ba`` (and ``…/retry``) of each comparison, stored
    in the run store's ``arena_steps`` table under the arena id, so an interrupted arena resumes
    without repeating a finished judgement.

    Args:
        store_path: The run store holding the runs.
        run_ids: Two or more systems: runs of the same task (ids or unambiguous prefixes), or groups
            of runs of several tasks pooled into one system each (``"RUN_A1,RUN_A2"`` or a list; see
            :func:`pooled_systems`).
        judge: The judge model (role ``judge``).
        axes: Axes to judge, a subset of :data:`AXES`.
        k: Elo K-factor.
        seed: Seed of the bootstrap intervals.
        concurrency: Comparisons judged at once.
        limit: Compare only the first ``limit`` shared questions.
        min_matches: ``None`` judges every shared question for every pair (the exhaustive design).
            N: MRAG's sampled design: each pair's questions in a seeded random order
            (:func:`sampled_pairs`), judged until the pair has at least N matches on every axis
            or its questions run out.
        n_bootstrap: Bootstrap replicates of the rating intervals.
        max_tokens: Reply budget of one judgement.
        on_progress: Called after each comparison with the counts so far (``total`` grows with each
            round of the sampled design); ``done`` counts comparisons judged, ``errors`` those failed.

    Returns:
        The per-axis tables (:class:`ArenaResult`).
    """
    _check_options(axes, concurrency, min_matches)
    store = RunStore(store_path)
    try:
        by_run, systems, common = _shared_questions(store, run_ids, limit)
        ordered = sorted(by_run)
        arena_id = _arena_id(ordered, judge, axes, max_tokens)
        config = GenerateConfig(temperature=0.0, max_tokens=max_tokens)
        judging = _Judging(store, arena_id, judge, by_run, axes, config, concurrency, on_progress)
        comparisons, errors = await _judge_questions(judging.batch, common, ordered, axes, min_matches, seed)
    finally:
        store.close()
    judged = len({c.sample_id for c in comparisons})
    result = ArenaResult(
        arena_id, systems, judged, comparisons, judge=judge.name, min_matches=min_matches, errors=errors
    )
    for axis in axes:
        result.axes[axis] = _axis_result(axis, comparisons, list(by_run), k=k, n_bootstrap=n_bootstrap, seed=seed)
    return result


run_arena = synchronous(arun_arena, "ebmeval.arena.run_arena", "await arun_arena(…)")


def _check_options(axes: Sequence[str], concurrency: int, min_matches: int | None) -> None:
    """``ConfigError`` for axes outside :data:`AXES` (or none), a concurrency or a ``min_matches`` below 1."""
    unknown = [a for a in axes if a not in AXES]
    if unknown or not axes:
        raise ConfigError("axes", f"must be a non-empty subset of {', '.join(AXES)}; unknown: {', '.join(unknown)}")
    require_at_least_one("concurrency", concurrency)
    if min_matches is not None:
        require_at_least_one("min_matches", min_matches)


def _shared_questions(
    store: RunStore, run_ids: Sequence[str], limit: int | None
) -> tuple[dict[str, dict[str, tuple[Sample, str]]], dict[str, str], list[str]]:
    """Each system's answers (:func:`pooled_systems`), their labels, and the first ``limit`` questions all answered.

    Raises:
        UsageError: Fewer than two different runs, or no question with a parsed answer in every run.
    """
    by_run, systems, _named = pooled_systems(store, run_ids)
    if len(by_run) < 2:
        raise UsageError("an arena needs at least two different runs")
    # Pairs and question order follow the sorted run ids, so the comparison keys of the stored judge
    # steps do not depend on the order in which the runs were named.
    first, *others = sorted(by_run)
    common = [s for s in by_run[first] if all(s in by_run[r] for r in others)]
    if not common:
        raise UsageError("no question has a parsed answer in every run")
    return by_run, systems, common[:limit] if limit is not None else common


def _arena_id(runs: Sequence[str], judge: Model, axes: Sequence[str], max_tokens: int) -> str:
    """The arena's id, from its sorted ``runs``, the judge, the axes, the prompt and the judge's reply budget."""
    return stable_hash(
        {
            "runs": list(runs),
            "judge": judge.api.describe(),
            "axes": list(axes),
            "prompt": PAIRWISE.id,
            "tokens": max_tokens,
        },
        16,
    )


@dataclass
class _Judging:
    """The judge calls of one arena, batch by batch, counted in one :class:`Progress`."""

    store: RunStore
    arena_id: str
    judge: Model
    by_run: dict[str, dict[str, tuple[Sample, str]]]
    axes: Sequence[str]
    config: GenerateConfig
    concurrency: int
    on_progress: ProgressCallback | None
    progress: Progress = field(default_factory=lambda: Progress(total=0))

    async def batch(self, pairs: Sequence[tuple[str, str, str]]) -> _Judged:
        """Judge each (question, a, b) of ``pairs``, adding them to the progress total; each is tallied as it ends."""
        self.progress.total += len(pairs)
        gate = asyncio.Semaphore(self.concurrency)
        judged: dict[int, Comparison] = {}
        errors: list[dict[str, str]] = []

        async def judge_pair(index: int) -> None:
            sample_id, a, b = pairs[index]
            # keyed by the question key: pooled tasks may share sample ids
            sample = self.by_run[a][sample_id][0].model_copy(update={"id": sample_id})
            pair = ((a, self.by_run[a][sample_id][1]), (b, self.by_run[b][sample_id][1]))
            judged[index] = await _judge_pair(
                self.store, self.arena_id, self.judge, sample, pair, self.axes, self.config
            )

        async def one(index: int) -> None:
            failures: list[Failure] = []
            async with gate:
                await attempt("judge", judge_pair(index), failures)
            sample_id, a, b = pairs[index]
            errors.extend({"sample_id": sample_id, "a": a, "b": b, "error": f.error} for f in failures)
            self.tally(bool(failures))

        await run_all(len(pairs), one)
        return [judged[i] for i in sorted(judged)], errors

    def tally(self, failed: bool) -> None:
        """Count one judgement that ended and report the progress."""
        self.progress.errors += failed
        self.progress.done += not failed
        self.progress.model_calls, self.progress.cache_hits = self.judge.stats.calls, self.judge.stats.cache_hits
        if self.on_progress is not None:
            self.on_progress(self.progress)


async def _judge_questions(
    judge_batch: _JudgeBatch,
    common: Sequence[str],
    systems: Sequence[str],
    axes: Sequence[str],
    min_matches: int | None,
    seed: int,
) -> _Judged:
    """Judge every pair of ``systems`` on every question, or, with ``min_matches``, until each pair has that many."""
    if min_matches is None:
        return await judge_batch([(s, a, b) for s in common for a, b in itertools.combinations(systems, 2)])
    return await _until_target(judge_batch, sampled_pairs(common, systems, seed=seed), axes, min_matches)


async def _until_target(
    judge_batch: _JudgeBatch,
    order: dict[tuple[str, str], list[str]],
    axes: Sequence[str],
    target: int,
) -> _Judged:
    """Judge each pair's questions in ``order``, in rounds, until it has ``target`` matches on every axis.

    A judgement that failed is recorded among the errors and its question is not asked again:
    the next round takes the pair's next questions.
    """
    done: dict[tuple[str, str], list[Comparison]] = {pair: [] for pair in order}
    taken = dict.fromkeys(order, 0)
    errors: list[dict[str, str]] = []
    while True:
        batch: list[tuple[str, str, str]] = []
        for pair, questions in order.items():
            chosen = questions[taken[pair] : taken[pair] + max(_short_of(done[pair], axes, target), 0)]
            taken[pair] += len(chosen)
            batch += [(q, *pair) for q in chosen]
        if not batch:
            return [c for pair in order for c in done[pair]], errors
        found, failed = await judge_batch(batch)
        errors += failed
        for comparison in found:
            done[(comparison.a, comparison.b)].append(comparison)
