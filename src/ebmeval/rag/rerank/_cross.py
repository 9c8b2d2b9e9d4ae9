"""Reranking with a cross-encoder loaded from a local folder."""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ..._util.errors import ConfigError, MissingDependencyError
from ...tasks import RetrievedDocument
from ..retrievers import index_text
from ._base import reorder, reranker


@reranker("rerank/cross-encoder")
class CrossEncoderReranker:
    """Scores each (query, document) pair jointly with a sentence-transformers ``CrossEncoder``.

    The model is read from a local folder only (``model``), never from a hub; its
    output for the pair (after the model's own activation) is the new score.
    """

    def __init__(
        self,
        model: str | Path,
        *,
        top_n: int = 50,
        batch_size: int = 32,
        device: str = "cpu",
        max_length: int | None = None,
    ) -> None:
        path = Path(model)
        if not (path / "config.json").exists():
            raise ConfigError("model", f"{path} is not a local cross-encoder model folder (no config.json)")
        try:
            st: Any = importlib.import_module("sentence_transformers")
        except ImportError:
            raise MissingDependencyError("Cross-encoder reranking", "sentence-transformers", "rag") from None
        self.path = path
        self.top_n = top_n
        self.batch_size = batch_size
        self.model = st.CrossEncoder(str(path), device=device, max_length=max_length, local_files_only=True)

    def scores(self, query: str, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """The model's score of each (query, text) pair."""
        if not texts:
            return np.zeros(0, dtype=np.float32)
        pairs = [(query, text) for text in texts]
        scores: npt.NDArray[np.float32] = self.model.predict(pairs, batch_size=self.batch_size, show_progress_bar=False)
        return np.asarray(scores, dtype=np.float32).reshape(len(texts))

    async def rerank(self, query: str, candidates: Sequence[RetrievedDocument], k: int) -> list[RetrievedDocument]:
        """The ``k`` best of the first ``top_n`` candidates by cross-encoder score (run off the event loop)."""
        pool = list(candidates[: self.top_n])
        scores = await asyncio.to_thread(self.scores, query, [index_text(c.document) for c in pool])
        return reorder(pool, scores.tolist(), k)
