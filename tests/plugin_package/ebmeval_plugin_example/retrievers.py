"""A retriever ranking documents by how many query words they contain."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Self

from ebmeval.rag.retrievers import IndexedRetriever, index_text, retriever
from ebmeval.tasks import Document, RetrievedDocument


@retriever("example/word-overlap")
class WordOverlap(IndexedRetriever):
    """Score = number of distinct query words in the document (an example plugin retriever)."""

    def __init__(self, documents: Sequence[Document], lowercase: bool) -> None:
        self.documents = documents
        self.lowercase = lowercase
        self._words = [set(self._split(index_text(d))) for d in documents]

    def _split(self, text: str) -> list[str]:
        return (text.lower() if self.lowercase else text).split()

    @classmethod
    def build(cls, documents: Sequence[Document], *, lowercase: bool = True) -> Self:  # type: ignore[override]
        return cls(documents, lowercase)

    def params(self) -> dict[str, Any]:
        return {"lowercase": self.lowercase}

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "word_overlap.json").write_text(json.dumps(self.params()))

    @classmethod
    def load(cls, folder: Path, documents: Sequence[Document], params: dict[str, Any], *, encoder: Any = None) -> Self:
        return cls(documents, bool(params["lowercase"]))

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
