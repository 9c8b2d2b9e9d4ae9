"""Run a task: generate what is missing, score what is unscored, record everything."""

from __future__ import annotations

import asyncio
import hashlib
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._util.blocking import synchronous
from .._util.errors import ConfigError, EndpointError, UsageError
from .._util.hashing import stable_hash
from .._util.sqlite import SQLiteError
from ..models import GenerateConfig, Model, ResponseCache, Usage, get_model
from ..store import RunRecord, RunStore, ScoreSet, collect_provenance
from ..tasks import (
    Generation,
    Sample,
    SampleContext,
    Scorer,
    Task,
    create_task,
    model_identity,
    sample_seed,
    scorer_label,
    scorer_spec,
    task_calls,
    with_scorer_args,
)
from ._config import RunConfig, parse_shard
from ._engine import Failure, attempt, run_all, score_sample


@dataclass
class Progress:
    """Where a run stands; passed to the progress callback after every sample."""

    total: int
    """Sample × epoch pairs selected for this run."""
    done: int = 0
    """Of those, finished (generated, scored and committed to the store), this invocation or before."""
    resumed: int = 0
    """Finished in an earlier invocation."""
    errors: int = 0
    """Failed this invocation (logged in the store; a re-run retries them)."""
    truncated: int = 0
    """Generated this invocation with a model call stopped at its token limit."""
    model_calls: int = 0
    """Model calls requested this invocation."""
    cache_hits: int = 0
    """Of those, answered from the response cache."""


ProgressCallback = Callable[[Progress], None]


@dataclass
class RunResult:
    """The outcome of one invocation of :func:`run`."""

    run: RunRecord
    resumed: bool
    progress: Progress
    usage: Usage
    elapsed: float
    interrupted: bool = False
    sample_ids: set[str] | None = None
    """The samples this invocation asked for (a ``limit`` subset of the run's, perhaps)."""
    score_sets: list[ScoreSet] = field(default_factory=list)
    """The score sets of the task's scorers in this invocation (those its summary should be read from)."""
    notes: list[str] = field(default_factory=list)
    """What the user should know about how the run was made: a role played by the model under
    evaluation because none was given, a server answering as another model."""
    next_step: str | None = None
    """What to run next when the task computes no metric itself (``next_step``), else ``None``."""


def build_models(config: RunConfig, task: Task) -> dict[str, Model]:
    """The model under evaluation plus one per role the task needs.

    The run's own settings (``--max-tokens``, ``--seed`` …) apply to every model; the task's
    generation defaults only to the model under evaluation (its thinking-model defaults when
    the model thinks, ``reasoning=true``). A role without a model of its own is played by the
    task's default for it (``Task.role_defaults``; ``role:<other>``: the model of that earlier
    role), else by the model under evaluation.
    """
    cache = ResponseCache() if config.cache else None
    defaults = task.generate_config.merge(config.generate)
    options = dict(config.model_args)  # --model-arg max_concurrency=N, unless --concurrency says otherwise
    if config.concurrency is not None:
        options["max_concurrency"] = config.concurrency
    models = {"model": get_model(config.model, config=defaults, cache=cache, **options)}
    if models["model"].api.reasoning:  # a thinking model: budgets that leave room for the trace
        models["model"].config = task.thinking_config().merge(config.generate)
    for role in task.roles:
        chosen = config.roles.get(role)
        default = task.role_defaults.get(role)
        if chosen is not None:
            models[role] = get_model(chosen.model, config=config.generate, cache=cache, **chosen.args)
        elif default is not None and default.startswith("role:"):
            models[role] = models[default.removeprefix("role:")]
        elif default is not None:
            models[role] = get_model(default, config=config.generate, cache=cache)
        else:
            models[role] = models["model"]
    for model in models.values():  # a setting a server does not take is refused before any sample runs
        model.api.check_config(model.config)
    unknown = set(config.roles) - set(task.roles)
    if unknown:
        raise UsageError(
            f"roles {sorted(unknown)} are not used by task '{task.name}' (it uses: {list(task.roles) or 'none'})"
        )
    return models


def check_steps(config: RunConfig, task: Task) -> None:
    """Refuse a ``steps:`` entry for a kind of call ``task`` does not make (it would be recorded, never sent)."""
    calls = {call.name for _role, call in task_calls(task)}
    for name in config.steps:
        if name not in calls:
            known = ", ".join(sorted(calls))
            raise ConfigError(f"steps.{name}", f"task '{task.name}' makes no such call (its calls: {known})")


def default_roles(config: RunConfig, task: Task) -> list[str]:
    """A note for each role of ``task`` that the config gives no model, saying which model plays it."""
    notes = []
    for role in task.roles:
        if role in config.roles:
            continue
        default = task.role_defaults.get(role)
        if default is None:
            player = f"the model under evaluation ({config.model})"
        elif default.startswith("role:"):
            player = f"the model of role '{default.removeprefix('role:')}'"
        else:
            player = f"the task's default model ({default})"
        notes.append(f"role '{role}' is played by {player}; give --role {role}=SPEC for another")
    return notes


def served_models(models: dict[str, Model]) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """What the servers answered as, by role (as :meth:`RunStore.record_served` takes it), and a note per mismatch."""
    served: dict[str, dict[str, Any]] = {}
    notes = []
    for role, model in sorted(models.items()):
        if model.stats.served:
            replies, mismatched = dict(model.stats.served), sorted(model.stats.mismatched)
            served[role] = {"asked": model.name, "replies": replies, "mismatched": mismatched}
        for name, count in sorted(model.stats.mismatched.items()):
            notes.append(f"role '{role}': {count} replies came from '{name}', not the model asked for ({model.name})")
    return served, notes


def run_identity(config: RunConfig, task: Task, models: dict[str, Model]) -> dict[str, Any]:
    """What decides a run's results; equal identities resume the same run.

    The task with its checked options (but those its version identifies by content, a
    retrieval index, and those its workflow does not use) and version (data, prompt
    templates, the index's content identity), the order samples are taken in, the model
    specs asked for and each role's model identity and generation settings, the seed and the
    epochs. Transport and speed settings (timeouts, retries, concurrency, threads, API key
    variables) are not part of it: changing them resumes the same run. The run's own generation
    settings (``generate``, sent with every answer call) are part of it where the model under
    evaluation does not already carry them (a model built elsewhere and passed in).
    """
    carrier = models["model"].config if "model" in models else GenerateConfig()
    carried = carrier.merge(config.generate).cache_fields() == carrier.cache_fields()
    return {
        "task": task.name,
        "task_args": {k: v for k, v in task.args.items() if k not in task.content_args | task.inapplicable_args},
        "task_version": task.version,
        "shuffle": config.shuffle,
        "specs": {
            "model": _same_replicas(config.model),
            **{role: _same_replicas(chosen.model) for role, chosen in sorted(config.roles.items())},
        },
        "models": {role: model_identity(model) for role, model in sorted(models.items())},
        "seed": config.seed,
        "epochs": config.epochs,
        **({"steps": {name: s.cache_fields() for name, s in sorted(config.steps.items())}} if config.steps else {}),
        **({} if carried else {"generate": config.generate.cache_fields()}),
    }


def _same_replicas(spec: str) -> str:
    """``spec`` with the URLs of ``openai-compatible:M@URL1,URL2`` as the provider reads them.

    Each without a trailing ``/``, sorted: any order of replicas names one model.
    """
    found = re.match(r"^(openai-compatible:.*?)@(https?://.*)$", spec)
    if found is None:
        return spec
    return f"{found[1]}@{','.join(sorted(url.strip().rstrip('/') for url in found[2].split(',')))}"


def register_scorers(
    store: RunStore, run_id: str, scorers: Sequence[Scorer], models: dict[str, Model]
) -> list[ScoreSet]:
    """The score set of each scorer in the run, registered by its spec (see ``ebmeval.tasks.scorer_spec``)."""
    sets = []
    for scorer in scorers:
        spec = scorer_spec(scorer, models)
        sets.append(store.register_score_set(run_id, spec, scorer_label(spec)))
    return sets


def select_samples(task: Task, limit: int | None, *, shuffle: bool = False, shard: str | None = None) -> list[Sample]:
    """``limit`` samples of the task (of them, shard ``I`` of ``N`` with ``shard="I/N"``), refusing duplicate ids.

    With ``shuffle`` the samples are ordered by sha256(sample id): a fixed pseudo-random order
    in which a sample's place does not depend on the others, so every run of the task with the
    same limit (whatever its seed or model) answers the same samples and can be compared
    pairwise, and the subset stays the same when the dataset grows.
    """
    samples = list(task.dataset)
    seen: set[str] = set()
    for sample in samples:
        if sample.id in seen:
            raise UsageError(f"task '{task.name}' has two samples with id '{sample.id}'")
        seen.add(sample.id)
    if shuffle:
        samples.sort(key=lambda s: stable_hash(s.id))
    chosen = samples[:limit] if limit is not None else samples
    if shard is None:
        return chosen
    index, count = parse_shard(shard)
    return [s for s in chosen if in_shard(s.id, index, count)]


def in_shard(sample_id: str, index: int, count: int) -> bool:
    """Whether a sample belongs to shard ``index`` of ``count``: ``int(sha256(id)) % count == index - 1``.

    A sample's shard depends on its id alone, so it stays put when the dataset grows and the
    shards of any subset partition it.
    """
    return int(hashlib.sha256(sample_id.encode("utf-8")).hexdigest(), 16) % count == index - 1


async def arun(
    config: RunConfig,
    *,
    task: Task | None = None,
    models: dict[str, Model] | None = None,
    on_progress: ProgressCallback | None = None,
) -> RunResult:
    """Run ``config`` to completion, resuming whatever an earlier run left unfinished.

    ``task`` and ``models`` may be given to use objects built elsewhere (tests,
    notebooks); otherwise they are built from the config.
    """
    task = task or create_task(config.task, **config.task_args)
    if config.scorer_args:
        task = with_scorer_args(task, config.scorer_args)
    check_steps(config, task)
    given = models is not None
    notes = [] if given else default_roles(config, task)
    models = models or build_models(config, task)
    in_progress = _samples_in_progress(config, models["model"], given=given)
    store = RunStore(config.store)
    run_record, resumed = _begin_run(store, config, task, models)
    run_id = run_record.run_id
    store.acquire(run_id)
    samples = select_samples(task, config.limit, shuffle=config.shuffle, shard=config.shard)
    progress = Progress(total=len(samples) * config.epochs)
    requested = len(select_samples(task, config.limit, shuffle=config.shuffle)) * config.epochs  # every shard
    score_sets: list[ScoreSet] = []
    started = time.perf_counter()
    status = "interrupted"
    try:
        score_sets = await _execute(
            task, models, store, run_id, samples, config, progress, on_progress or (lambda _p: None), in_progress
        )
        status = "errors" if progress.errors else "complete"
        notes += _record_served(store, run_id, models)
    finally:
        # the models built here are closed here, in the loop their connections belong to
        closing = [] if given else unique(models)
        final = await _finish(store, run_record, status, requested, sys.exc_info()[1], closing)
    return RunResult(
        run=final,
        resumed=resumed,
        progress=progress,
        usage=sum((model.stats.usage for model in unique(models)), Usage()),
        elapsed=time.perf_counter() - started,
        interrupted=status == "interrupted",
        sample_ids={s.id for s in samples},
        score_sets=score_sets,
        notes=notes,
        next_step=None if task.scorers else next_step(task, run_id),
    )


run = synchronous(arun, "ebmeval.run", "await ebmeval.arun(…)")


def _begin_run(store: RunStore, config: RunConfig, task: Task, models: dict[str, Model]) -> tuple[RunRecord, bool]:
    """Begin the run that ``config`` identifies (:func:`run_identity`), or resume it; whether it was resumed."""
    config_hash = stable_hash(run_identity(config, task, models))
    return store.begin_run(
        run_id=config_hash[:12],
        config_hash=config_hash,
        config={
            **config.model_dump(),
            "task_args": task.args,
            "task_version": task.version,
            "ignored_args": sorted(set(config.task_args) & task.inapplicable_args),
            "model_settings": models["model"].config.cache_fields(),
        },
        task=task.name,
        model=models["model"].name,
        seed=config.seed,
        provenance=collect_provenance(
            {role: {**m.api.describe(), "settings": m.api.provenance()} for role, m in models.items()}
        ),
    )


def _record_served(store: RunStore, run_id: str, models: dict[str, Model]) -> list[str]:
    """Record what the servers answered as (:func:`served_models`); a note per mismatch."""
    served, mismatches = served_models(models)
    store.record_served(run_id, served)
    return mismatches


async def _finish(
    store: RunStore,
    run_record: RunRecord,
    status: str,
    requested: int,
    in_flight: BaseException | None,
    closing: Sequence[Model],
) -> RunRecord:
    """Record the run's ``status``, then close the store and the models in ``closing``; the run as stored.

    The store records it as partial when samples of the ``requested`` set are not answered (a
    shard), and as interrupted, raising, when a write in flight failed. With an error
    ``in_flight`` (it says why the store cannot be written) a failing store raises nothing here
    and ``run_record`` is returned.
    """
    try:
        store.finish(run_record.run_id, status, requested=requested)
        return store.get_run(run_record.run_id)
    except SQLiteError:
        if in_flight is None:
            raise
        return run_record
    finally:
        store.close()
        for model in closing:
            await model.aclose()


def next_step(task: Task, run_id: str) -> str:
    """The command to run after a run of ``task``, which has no scorer: its own, else a rescore."""
    command = task.next_step or "ebmeval rescore {run} --scorer SCORER (ebmeval list scorers names them)"
    return command.format(run=run_id, task=task.name)


async def preflight(models: dict[str, Model]) -> None:
    """One small request to each distinct model before any sample; ``EndpointError`` naming its roles if one fails.

    A run against a server it cannot use (unreachable, a model it does not serve, a refused key)
    so stops with one error instead of recording every sample as failed.
    """
    roles: dict[int, list[str]] = {}
    for role, model in models.items():
        roles.setdefault(id(model), []).append(role)
    for model in {id(m): m for m in models.values()}.values():
        try:
            await model.api.preflight(model.config)
        except EndpointError as exc:
            playing = ", ".join(roles[id(model)])
            raise EndpointError(f"{model.name} (role {playing}): {exc}; nothing was run or recorded") from None


async def _execute(
    task: Task,
    models: dict[str, Model],
    store: RunStore,
    run_id: str,
    samples: Sequence[Sample],
    config: RunConfig,
    progress: Progress,
    on_progress: ProgressCallback,
    in_progress: int,
) -> list[ScoreSet]:
    """Generate and score what is missing; the score sets of the task's scorers."""
    score_sets = register_scorers(store, run_id, task.scorers, models)
    held = _Held.read(store, run_id, score_sets)
    todo = held.pending(samples, config.epochs)
    resumed = len(samples) * config.epochs - len(todo)  # finished before this invocation
    progress.done += resumed
    progress.resumed += resumed
    on_progress(progress)
    if todo:
        await _prepare(models)
    work = _SampleWork(task, models, store, run_id, config, progress, score_sets, held)
    limit = asyncio.Semaphore(in_progress)
    unique_models = unique(models)

    async def one(index: int) -> None:
        sample, epoch = todo[index]
        async with limit:
            failures = await work.sample(sample, epoch)
        await count_sample(store, run_id, sample.id, epoch, failures, progress, unique_models)  # its slot is free
        on_progress(progress)

    await run_all(len(todo), one)
    store.flush()  # a write that failed on the store's writer thread fails the run here
    return score_sets


async def _prepare(models: dict[str, Model]) -> None:
    """Check that each model answers (:func:`preflight`), then let each prepare for the run."""
    await preflight(models)
    for model in unique(models):
        await model.api.prepare()


@dataclass
class _Held:
    """What the store held of a run when this invocation began, by (sample id, epoch)."""

    generated: set[tuple[str, int]]
    stepped: set[tuple[str, int]]
    """Samples with at least one recorded step."""
    scored: dict[str, set[tuple[str, int]]]
    """Per score set id, the samples it has scored."""

    @classmethod
    def read(cls, store: RunStore, run_id: str, score_sets: Sequence[ScoreSet]) -> _Held:
        """Read it from ``store``."""
        generated, stepped = store.done_generations(run_id), store.stepped(run_id)
        return cls(generated, stepped, {score_set.id: store.scored(run_id, score_set.id) for score_set in score_sets})

    def finished(self, key: tuple[str, int]) -> bool:
        """Whether the (sample id, epoch) ``key`` was generated and scored by every score set."""
        return key in self.generated and all(key in done for done in self.scored.values())

    def pending(self, samples: Sequence[Sample], epochs: int) -> list[tuple[Sample, int]]:
        """The (sample, epoch) pairs still to generate or score, epoch by epoch."""
        pairs = [(sample, epoch) for epoch in range(epochs) for sample in samples]
        return [(sample, epoch) for sample, epoch in pairs if not self.finished((sample.id, epoch))]


@dataclass
class _SampleWork:
    """Generates and scores a sample of the run per call (calls run concurrently), writing each result to the store."""

    task: Task
    models: dict[str, Model]
    store: RunStore
    run_id: str
    config: RunConfig
    progress: Progress
    score_sets: list[ScoreSet]
    held: _Held

    async def sample(self, sample: Sample, epoch: int) -> list[Failure]:
        """Generate the answer unless stored, then apply the scorers that have not scored it; the failures."""
        failures: list[Failure] = []
        ctx = self._context(sample, epoch)
        generation = await self._generation(sample, epoch, ctx, failures)
        if generation is not None:
            key = (sample.id, epoch)
            pending = [
                (scorer, s)
                for scorer, s in zip(self.task.scorers, self.score_sets, strict=True)
                if key not in self.held.scored[s.id]
            ]
            failures += await score_into(self.store, self.run_id, sample, generation, ctx, pending)
        return failures

    def _context(self, sample: Sample, epoch: int) -> SampleContext:
        """The sample's context: the run's models and settings, its step memo and its seed."""
        memo = self.store.memo(self.run_id, sample.id, epoch, fresh=(sample.id, epoch) not in self.held.stepped)
        return SampleContext(
            self.models,
            memo,
            seed=sample_seed(self.config.seed, epoch, sample.id),
            run_settings=self.config.generate,
            overrides=self.config.steps,
        )

    async def _generation(
        self, sample: Sample, epoch: int, ctx: SampleContext, failures: list[Failure]
    ) -> Generation | None:
        """The stored generation, else a new one, stored and counted if truncated; None if generating failed."""
        if (sample.id, epoch) in self.held.generated:
            found = self.store.get_generation(self.run_id, sample.id, epoch)
            if found is not None:
                return found[1]
        made: list[Generation] = []
        if not await attempt("generate", _generate_into(made, self.task, sample, epoch, ctx), failures):
            return None
        self.store.put_generation(self.run_id, sample, made[0])
        self.progress.truncated += made[0].truncated
        return made[0]


async def score_into(
    store: RunStore,
    run_id: str,
    sample: Sample,
    generation: Generation,
    ctx: SampleContext,
    scorers: Sequence[tuple[Scorer, ScoreSet]],
) -> list[Failure]:
    """Apply each scorer to ``generation``, storing its score in its score set (:func:`score_sample`); the failures."""
    return await score_sample(
        sample,
        generation,
        ctx,
        [(scorer, score_set.label) for scorer, score_set in scorers],
        lambda i, score: store.put_score(run_id, sample.id, generation.epoch, scorers[i][1].id, score),
    )


async def count_sample(
    store: RunStore,
    run_id: str,
    sample_id: str,
    epoch: int,
    failures: Sequence[Failure],
    progress: Progress,
    models: Sequence[Model],
) -> None:
    """Record the sample's failures and, once its writes are committed to the store, count it in ``progress``."""
    for failure in failures:
        store.put_error(run_id, sample_id, epoch, failure.stage, failure.error)
    await store.committed()
    if failures:
        progress.errors += 1
    else:
        progress.done += 1
    progress.model_calls = sum(m.stats.calls for m in models)
    progress.cache_hits = sum(m.stats.cache_hits for m in models)


def unique(models: dict[str, Model]) -> list[Model]:
    """Each model of ``models`` once (one model may play several roles)."""
    return list({id(m): m for m in models.values()}.values())


def _samples_in_progress(config: RunConfig, model: Model, *, given: bool) -> int:
    """How many samples a run works on at once.

    Twice the calls the model takes at once (``--concurrency``, per replica), so a sample with its
    request ready waits at the model's bound and is sent the moment a call returns. A model built
    elsewhere (``given``) that takes more calls at once than ``concurrency`` asks for gets only
    ``concurrency`` samples at a time.
    """
    bound = model.max_concurrency
    if given and config.concurrency is not None and config.concurrency < bound:
        return config.concurrency
    return 2 * bound


async def _generate_into(made: list[Generation], task: Task, sample: Sample, epoch: int, ctx: SampleContext) -> None:
    made.append(await _generate(task, sample, epoch, ctx))


async def _generate(task: Task, sample: Sample, epoch: int, ctx: SampleContext) -> Generation:
    started = time.perf_counter()
    result = await task.workflow(sample, ctx)
    usage = Usage()
    for output in ctx.outputs:
        usage = usage + output.usage
    last = ctx.outputs[-1] if ctx.outputs else None
    return Generation(
        sample_id=sample.id,
        epoch=epoch,
        output=result.output,
        answer=task.parser(result.output, sample),
        retrieved=result.retrieved,
        steps=ctx.steps,
        usage=usage,
        latency=time.perf_counter() - started,
        metadata=result.metadata,
        truncated=any(output.truncated for output in ctx.outputs),
        answer_truncated=last is not None and last.truncated and result.from_reply,
        reasoning=last.reasoning if last is not None else None,
    )
