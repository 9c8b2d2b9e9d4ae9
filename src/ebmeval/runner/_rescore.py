"""Score a stored run again with other scorers, never calling the generator."""

from __future__ import annotations

import asyncio
import traceback
from collections.abc import Sequence

from .._util.errors import EbmevalError
from .._util.sqlite import SQLiteError
from ..models import Model
from ..store import RunStore
from ..tasks import SampleContext, Scorer, sample_seed
from ._runner import Progress, ProgressCallback, _leaves, register_scorers


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

    Each scorer's scores form the score set of its spec (name, arguments, prompt versions,
    each role's model and settings): a scorer with another judge, prompt or argument adds a
    new set beside the existing ones, and the same spec again scores only what it has not
    (``Progress.resumed`` counts the rest). Judges call the models in ``models`` by role
    (usually ``judge``); their calls are recorded as steps of the sample under the request
    they sent, so an interrupted rescore resumes like a run and never replays another
    model's replies.
    """
    store = RunStore(store_path)
    run_id = store.get_run(run_id).run_id
    store.acquire(run_id)
    try:
        return asyncio.run(_rescore(store, run_id, scorers, models, concurrency, on_progress or (lambda _p: None)))
    except BaseExceptionGroup as group:
        failed, _rest = group.split(SQLiteError)
        if failed is None:
            raise
        raise _leaves(failed)[0] from None
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
    score_sets = register_scorers(store, run_id, scorers, models)
    done = [store.scored(run_id, score_set.id) for score_set in score_sets]
    stored = list(store.generations(run_id))
    progress = Progress(total=len(stored))
    limit = asyncio.Semaphore(concurrency)
    run_seed = store.get_run(run_id).seed
    unique = list({id(m): m for m in models.values()}.values())
    for model in unique:
        await model.api.prepare()

    async def one(index: int) -> None:
        sample, generation = stored[index]
        key = (sample.id, generation.epoch)
        if all(key in scored for scored in done):
            progress.done += 1
            progress.resumed += 1
            on_progress(progress)
            return
        async with limit:
            memo = store.memo(run_id, sample.id, generation.epoch)
            ctx = SampleContext(models, memo, seed=sample_seed(run_seed, generation.epoch, sample.id))
            failed = False
            for scorer, score_set, scored in zip(scorers, score_sets, done, strict=True):
                if key in scored:
                    continue
                stage = f"score:{score_set.label}"
                try:
                    score = await scorer(sample, generation, ctx)
                except SQLiteError:
                    raise  # the store cannot be written: no other score can be recorded either
                except EbmevalError as exc:
                    failed = True
                    store.put_error(run_id, sample.id, generation.epoch, stage, f"{exc}")
                except Exception:  # one scorer's bug must not lose the other samples' scores
                    failed = True
                    store.put_error(run_id, sample.id, generation.epoch, stage, traceback.format_exc())
                else:
                    store.put_score(run_id, sample.id, generation.epoch, score_set.id, score)
            if failed:
                progress.errors += 1
            else:
                progress.done += 1
            progress.model_calls = sum(m.stats.calls for m in unique)
            progress.cache_hits = sum(m.stats.cache_hits for m in unique)
            on_progress(progress)

    on_progress(progress)
    async with asyncio.TaskGroup() as group:
        for index in range(len(stored)):
            group.create_task(one(index))
    return progress
