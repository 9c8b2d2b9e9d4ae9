"""The execution engine: how a sample is scored, its failures recorded and samples scheduled.

``run``, ``rescore`` and the scoring of predictions made elsewhere all go through it.
"""

from __future__ import annotations

import asyncio
import traceback
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any

from .._util.errors import EbmevalError
from .._util.sqlite import SQLiteError
from ..tasks import Generation, Sample, SampleContext, Score, Scorer, scorer_roles


@dataclass
class Failure:
    """One failed stage of one sample: ``generate`` or ``score:<label>``, and the error's text."""

    stage: str
    error: str


def error_text(exc: BaseException) -> str:
    """The one record of a failure: ``Type: message`` for an expected error, the traceback for a bug."""
    if isinstance(exc, EbmevalError):
        return f"{type(exc).__name__}: {exc}"
    return "".join(traceback.format_exception(exc))


async def attempt(stage: str, work: Awaitable[object], failures: list[Failure]) -> bool:
    """Await ``work``, recording in ``failures`` what it raised; whether it succeeded.

    A store that cannot be written (``SQLiteError``) is raised: no other sample can be recorded
    either. Any other error, a bug in a workflow or scorer included, fails this stage alone.
    """
    try:
        await work
    except SQLiteError:
        raise
    except Exception as exc:  # noqa: BLE001  a bug in one scorer must not lose the other samples
        failures.append(Failure(stage, error_text(exc)))
        return False
    return True


async def score_sample(
    sample: Sample,
    generation: Generation,
    ctx: SampleContext,
    scorers: Sequence[tuple[Scorer, str]],
    record: Callable[[int, Score], None],
) -> list[Failure]:
    """Apply every scorer (with its label) to ``generation``, each in a context limited to the roles it declares.

    Every scorer is tried, whatever the others do: ``record(index, score)`` receives each score,
    and the failures come back, one per failing scorer. An answer whose reply was cut at its
    token limit (``Generation.answer_truncated``) is graded by none: each scorer records
    :data:`CUT_SCORE`, which summaries count as a truncation beside each of its metrics.
    """
    failures: list[Failure] = []
    if generation.answer_truncated:
        for index in range(len(scorers)):
            record(index, CUT_SCORE)
        return failures
    for index, (scorer, label) in enumerate(scorers):

        async def one(index: int = index, scorer: Scorer = scorer) -> None:
            view = ctx.for_scorer(str(getattr(scorer, "name", type(scorer).__name__)), scorer_roles(scorer))
            record(index, await scorer(sample, generation, view))

        await attempt(f"score:{label}", one(), failures)
    return failures


CUT_SCORE = Score(
    values={},
    explanation="not scored: the answer's reply stopped at its token limit",
    metadata={"answer_truncated": True},
)
"""The score of an answer cut at its token limit: no value, so nothing incomplete is averaged."""


def is_cut(score: Score) -> bool:
    """Whether ``score`` is :data:`CUT_SCORE`'s record of an answer cut at its token limit."""
    return score.metadata.get("answer_truncated") is True


async def run_all(count: int, one: Callable[[int], Coroutine[Any, Any, None]]) -> None:
    """Run ``one(i)`` for ``i`` in ``range(count)`` concurrently; a store that cannot be written stops them all.

    Its error is raised once, not as a group.
    """
    try:
        async with asyncio.TaskGroup() as group:
            for index in range(count):
                group.create_task(one(index))
    except BaseExceptionGroup as exc:
        failed, _rest = exc.split(SQLiteError)
        if failed is None:
            raise
        raise _leaves(failed)[0] from None


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    """The exceptions of ``group`` and of every group nested in it."""
    found: list[BaseException] = []
    for exc in group.exceptions:
        found.extend(_leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc])
    return found
