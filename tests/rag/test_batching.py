"""Concurrent one-query retrievals are answered in batches, with the results of direct calls."""

from __future__ import annotations

import asyncio
import threading

import pytest

from ebmeval.rag import BatchingRetriever
from ebmeval.rag.retrievers import BM25Retriever
from ebmeval.tasks import Document, RetrievedDocument


class Recording:
    """A retriever double that records the batches it receives (unit test of the batching logic)."""

    def __init__(self, inner: BM25Retriever, fail_on: str | None = None) -> None:
        self.inner = inner
        self.calls: list[tuple[list[str], int]] = []
        self.fail_on = fail_on
        self.lock = threading.Lock()

    def retrieve(self, queries: list[str], k: int) -> list[list[RetrievedDocument]]:
        with self.lock:
            self.calls.append((list(queries), k))
        if self.fail_on in queries:
            raise ValueError("index unavailable")
        return self.inner.retrieve(queries, k)


def test_concurrent_single_queries_are_batched_with_equal_results(corpus: list[Document]) -> None:
    pytest.importorskip("bm25s")
    bm25 = BM25Retriever.build(corpus)
    recording = Recording(bm25)
    batching = BatchingRetriever(recording, max_batch=8, max_wait=0.05)
    queries = ["statins", "aspirin bleeding", "metformin", "reperfusion", "influenza vaccination"] * 4

    async def answer_all() -> list[list[RetrievedDocument]]:
        calls = [asyncio.to_thread(batching.retrieve, [q], 2) for q in queries]
        return [hits for (hits,) in await asyncio.gather(*calls)]

    found = asyncio.run(answer_all())
    assert found == [bm25.retrieve([q], 2)[0] for q in queries]
    assert len(recording.calls) < len(queries) and all(len(q) <= 8 for q, _ in recording.calls)
    assert sorted(q for batch, _ in recording.calls for q in batch) == sorted(queries)
    assert batching.batches == len(recording.calls)
    assert BatchingRetriever(bm25).documents is bm25.documents  # attributes of the wrapped retriever


def test_different_k_are_not_mixed_and_errors_reach_their_callers(corpus: list[Document]) -> None:
    pytest.importorskip("bm25s")
    recording = Recording(BM25Retriever.build(corpus), fail_on="broken")
    batching = BatchingRetriever(recording, max_wait=0.05)
    results: dict[str, object] = {}

    def call(query: str, k: int) -> None:
        try:
            results[query] = batching.retrieve([query], k)
        except ValueError as exc:
            results[query] = exc

    threads = [threading.Thread(target=call, args=(q, k)) for q, k in [("statins", 1), ("aspirin", 3), ("broken", 3)]]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # batches never mix k; a failed batch is answered query by query, so only the bad query fails
    assert {k for _, k in recording.calls} == {1, 3}
    assert all(batch == ["statins"] for batch, k in recording.calls if k == 1)
    assert isinstance(results["aspirin"], list) and len(results["aspirin"][0]) == 1  # type: ignore[index]
    assert isinstance(results["broken"], ValueError)
    assert isinstance(results["statins"], list) and len(results["statins"][0]) == 1  # type: ignore[index]
    assert batching.retrieve([], 3) == []
