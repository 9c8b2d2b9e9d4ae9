"""Score a stored run again with other scorers, never calling the generator."""

from __future__ import annotations

import asyncio
import traceback
from collections.abc import Sequence

from .._util.errors import EbmevalError
from ..models import Model
from ..store import RunStore
from ..tasks import SampleContext, Scorer
from ._runner import Progress, ProgressCallback


def rescore(
    store_path: str,
    run_id: str,
    scorers: Sequence[Scorer],
    models: dict[str, Model],
    *,
    concurrency: int = 4,
    on_progress: ProgressCallback | None = None,
) -> Progress:
    """Apply ``scorers`` to every stored generation they have not scored yet.

    Judges call the models in ``models`` by role (usually ``judge``); their calls are
    recorded as steps of the sample, so an interrupted rescore resumes like a run.
    """
    store = RunStore(store_path)
    run_id = store.get_run(run_id).run_id
    store.acquire(run_id)
    try:
        return asyncio.run(_rescore(store, run_id, scorers, models, concurrency, on_progress or (lambda _p: None)))
    finally:
        store.release(run_id)
        store.close()


async def _rescore(
    store: RunStore,
    run_id: str,
    scorers: Sequence[Scorer],
    models: dict[str, Model],
    concurrency: int,
    on_progress: ProgressCallback,
) -> Progress:
    done = {scorer.name: store.scored(run_id, scorer.name) for scorer in scorers}
    stored = list(store.generations(run_id))
    progress = Progress(total=len(stored))
    limit = asyncio.Semaphore(concurrency)
    run_seed = store.get_run(run_id).seed

    async def one(index: int) -> None:
        sample, generation = stored[index]
        key = (sample.id, generation.epoch)
        async with limit:
            ctx = SampleContext(
                models, store.memo(run_id, sample.id, generation.epoch), seed=run_seed + generation.epoch
            )
            failed = False
            for scorer in scorers:
                if key in done[scorer.name]:
                    continue
                try:
                    score = await scorer(sample, generation, ctx)
                except EbmevalError as exc:
                    failed = True
                    store.put_error(run_id, sample.id, generation.epoch, f"score:{scorer.name}", f"{exc}")
                except Exception:  # one scorer's bug must not lose the other samples' scores
                    failed = True
                    store.put_error(run_id, sample.id, generation.epoch, f"score:{scorer.name}", traceback.format_exc())
                else:
                    store.put_score(run_id, sample.id, generation.epoch, scorer.name, score)
            if failed:
                progress.errors += 1
            else:
                progress.done += 1
            unique = {id(m): m for m in models.values()}.values()
            progress.model_calls = sum(m.stats.calls for m in unique)
            progress.cache_hits = sum(m.stats.cache_hits for m in unique)
            on_progress(progress)

    on_progress(progress)
    async with asyncio.TaskGroup() as group:
        for index in range(len(stored)):
            group.create_task(one(index))
    return progress
