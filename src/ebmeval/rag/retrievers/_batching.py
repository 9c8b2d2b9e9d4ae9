"""Query batching for callers that retrieve one query at a time from several threads."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from ...tasks import RetrievedDocument
from ._base import Retriever


@dataclass
class _Request:
    queries: list[str]
    k: int
    done: threading.Event = field(default_factory=threading.Event)
    result: list[list[RetrievedDocument]] | None = None
    error: BaseException | None = None


class BatchingRetriever:
    """A :class:`Retriever` that gathers concurrent ``retrieve`` calls into one batch call of ``inner``.

    Tasks answer samples concurrently and each retrieves for its own question (e.g. through
    ``asyncio.to_thread(retriever.retrieve, [query], k)``). Wrapped in this class, the
    calls with the same ``k`` that arrive within ``max_wait`` seconds of each other, up to
    ``max_batch`` queries, are sent to ``inner`` as one batch (queries embedded together,
    one search) and each caller gets its own lists. Every retriever here ranks each query
    of a batch independently of the others, so the results are those of calling ``inner``
    directly (dense scores up to float rounding: the encoder pads a batch to its longest text).
    """

    def __init__(self, inner: Retriever, *, max_batch: int = 64, max_wait: float = 0.005) -> None:
        self.inner = inner
        self.max_batch = max_batch
        self.max_wait = max_wait
        self._lock = threading.Lock()
        self._pending: list[_Request] = []
        self._leading = False
        self.batches = 0
        """Number of batch calls made to ``inner`` (for tests and monitoring)."""

    def __getattr__(self, name: str) -> object:
        # documents, params() … of the wrapped retriever
        return getattr(self.inner, name)

    def retrieve(self, queries: list[str], k: int) -> list[list[RetrievedDocument]]:
        """The top ``k`` documents for each query, computed in a batch with concurrent callers' queries."""
        if not queries:
            return []
        request = _Request(list(queries), k)
        with self._lock:
            self._pending.append(request)
            lead = not self._leading
            if lead:
                self._leading = True
        if lead:
            self._lead()
        request.done.wait()
        if request.error is not None:
            raise request.error
        assert request.result is not None
        return request.result

    def _lead(self) -> None:
        """Run batches until no request is pending, then hand leadership back."""
        time.sleep(self.max_wait)
        while True:
            with self._lock:
                batch: list[_Request] = []
                size = 0
                for request in list(self._pending):
                    if batch and (request.k != batch[0].k or size + len(request.queries) > self.max_batch):
                        continue
                    size += len(request.queries)
                    batch.append(request)
                    self._pending.remove(request)
                if not batch:
                    self._leading = False
                    return
            self._run(batch)

    def _run(self, batch: list[_Request]) -> None:
        flat = [q for request in batch for q in request.queries]
        try:
            found = self.inner.retrieve(flat, batch[0].k)
            self.batches += 1
        except BaseException as exc:
            if len(batch) > 1:  # one caller's bad query must not fail the others: answer each alone
                for request in batch:
                    self._run([request])
                return
            batch[0].error = exc
            batch[0].done.set()
            return
        start = 0
        for request in batch:
            request.result = found[start : start + len(request.queries)]
            start += len(request.queries)
            request.done.set()
