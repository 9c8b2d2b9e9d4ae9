"""The reranker protocol, its registry, and the reordering shared by rerankers."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from ..._util.errors import ConfigError
from ..._util.registry import Registry
from ...tasks import RetrievedDocument


@runtime_checkable
class Reranker(Protocol):
    """Re-scores the first candidates of a ranked list and returns the best ``k``."""

    async def rerank(self, query: str, candidates: Sequence[RetrievedDocument], k: int) -> list[RetrievedDocument]:
        """The ``k`` best of ``candidates`` (at most the reranker's ``top_n`` are scored), best first."""


RerankerFactory = Callable[..., Reranker]

rerankers: Registry[RerankerFactory] = Registry("reranker")
"""Rerankers by namespaced id (``rerank/cross-encoder``, ``rerank/llm-pointwise``)."""


def reranker(name: str) -> Callable[[RerankerFactory], RerankerFactory]:
    """Register a reranker factory (usually the class) under ``name``."""
    return rerankers.register(name)


def get_reranker(name: str, **options: Any) -> Reranker:
    """Build the registered reranker ``name``; an option it does not take raises :class:`ConfigError`."""
    factory = rerankers.get(name)
    accepted = inspect.signature(factory).parameters
    for key in options:
        if key not in accepted:
            raise ConfigError(
                f"reranker.{key}", f"reranker '{name}' takes no such option (options: {', '.join(accepted)})"
            )
    return factory(**options)


def reorder(candidates: Sequence[RetrievedDocument], scores: Sequence[float], k: int) -> list[RetrievedDocument]:
    """``candidates`` sorted by ``scores`` (descending; ties keep the earlier rank), cut to ``k``, ranked from 1."""
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], candidates[i].rank))
    return [
        candidates[i].model_copy(update={"score": float(scores[i]), "rank": rank})
        for rank, i in enumerate(order[:k], start=1)
    ]
