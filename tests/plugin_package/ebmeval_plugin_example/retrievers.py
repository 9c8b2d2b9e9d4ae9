"""A retriever ranking documents by how many query words they contain."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Self

from ebmeval.rag.retrievers import IndexedRetriever, RetrieverOptions, SavedIndex, index_text, retriever
from ebmeval.tasks import Document, RetrievedDocument


@dataclass(frozen=True)
class WordOverlapOptions(RetrieverOptions):
    """Settings of a word-overlap index (``--option lowercase=false``)."""

    lowercase: bool = True
    """Compare words lower-cased."""


@retriever("example/word-overlap")
class WordOverlap(IndexedRetriever[WordOverlapOptions]):
    """Score = number of distinct query words in the document (an example plugin retriever)."""

    def __init__(self, documents: Sequence[Document], options: WordOverlapOptions) -> None:
        self.documents = documents
        self.options = options
        self._words = [set(self._split(index_text(d))) for d in documents]

    def _split(self, text: str) -> list[str]:
        return (text.lower() if self.options.lowercase else text).split()

    @classmethod
    def build(
        cls,
        documents: Sequence[Document],
        options: WordOverlapOptions | None = None,
        *,
        progress: Callable[[int, int], None] | None = None,
    ) -> Self:
        return cls(documents, options or WordOverlapOptions())

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "word_overlap.json").write_text(json.dumps(self.params()))

    @classmethod
    def open(cls, saved: SavedIndex[WordOverlapOptions]) -> Self:
        return cls(saved.documents, saved.options)

    def retrieve(self, queries: list[str], k: int) -> list[list[RetrievedDocument]]:
        results = []
        for query in queries:
            words = set(self._split(query))
            scored = sorted(((len(words & w), i) for i, w in enumerate(self._words)), key=lambda x: (-x[0], x[1]))
            hits = [(s, i) for s, i in scored if s > 0][:k]
            results.append(
                [
                    RetrievedDocument(document=self.documents[i], score=float(s), rank=r)
                    for r, (s, i) in enumerate(hits, start=1)
                ]
            )
        return results
