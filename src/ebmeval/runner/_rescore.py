"""Score a stored run again with other scorers, never calling the generator."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from .._util.blocking import synchronous
from ..models import Model
from ..store import RunStore
from ..tasks import SampleContext, Scorer, sample_seed
from ._engine import run_all
from ._runner import Progress, ProgressCallback, count_sample, register_scorers, score_into, unique


async def arescore(
    store_path: str,
    run_id: str,
    scorers: Sequence[Scorer],
    models: dict[str, Model],
    *,
    concurrency: int = 4,
    on_progress: ProgressCallback | None = None,
) -> Progress:
    """Apply ``scorers`` to every stored generation they have not scored yet.

    Each scorer's scores form the score set of its spec (name, arguments, prompt versions,
    each declared role's model and settings): a scorer with another judge, prompt or argument
    adds a new set beside the existing ones, and the same spec again scores only what it has
    not (``Progress.resumed`` counts the rest). Judges call the models in ``models`` by role
    (usually ``judge``); their calls are recorded as steps of the sample under the request
    they sent, so an interrupted rescore resumes like a run and never replays another
    model's replies.
    """
    store = RunStore(store_path)
    run_id = store.get_run(run_id).run_id
    store.acquire(run_id)
    try:
        return await _rescore(store, run_id, scorers, models, concurrency, on_progress or (lambda _p: None))
    finally:
        store.release(run_id)
        store.close()


rescore = synchronous(arescore, "ebmeval.rescore", "await arescore(…)")


async def _rescore(
    store: RunStore,
    run_id: str,
    scorers: Sequence[Scorer],
    models: dict[str, Model],
    concurrency: int,
    on_progress: ProgressCallback,
) -> Progress:
    score_sets = register_scorers(store, run_id, scorers, models)
    done = [store.scored(run_id, score_set.id) for score_set in score_sets]
    stored = list(store.generations(run_id))
    progress = Progress(total=len(stored))
    limit = asyncio.Semaphore(concurrency)
    run_seed = store.get_run(run_id).seed
    models_once = unique(models)
    for model in models_once:
        await model.api.prepare()

    async def one(index: int) -> None:
        sample, generation = stored[index]
        key = (sample.id, generation.epoch)
        if all(key in scored for scored in done):
            progress.done += 1
            progress.resumed += 1
            on_progress(progress)
            return
        failures = []
        async with limit:
            memo = store.memo(run_id, sample.id, generation.epoch)
            ctx = SampleContext(models, memo, seed=sample_seed(run_seed, generation.epoch, sample.id))
            pending = [
                (scorer, s) for scorer, s, scored in zip(scorers, score_sets, done, strict=True) if key not in scored
            ]
            failures = await score_into(store, run_id, sample, generation, ctx, pending)
        await count_sample(store, run_id, sample.id, generation.epoch, failures, progress, models_once)
        on_progress(progress)

    on_progress(progress)
    await run_all(len(stored), one)
    return progress
