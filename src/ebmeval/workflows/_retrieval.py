"""Retrieval before answering: any workflow, grounded in the top-k documents of an index."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Literal

from ..tasks import Document, RetrievedDocument, Sample, SampleContext, Workflow, WorkflowResult

if TYPE_CHECKING:
    from ..rag import Retriever

QueryMode = Literal["question", "question+options"]


def retrieval_query(sample: Sample, mode: QueryMode) -> str:
    """The text sent to the retriever: the question, or the question followed by its options."""
    if mode == "question+options" and sample.choices:
        return sample.input + "\n" + "\n".join(sample.choices.values())
    return sample.input


def gold_ids(sample: Sample) -> set[str]:
    """Identifiers of the sample's gold documents (``metadata["gold_ids"]`` or ``["pmids"]``)."""
    given = sample.metadata.get("gold_ids", sample.metadata.get("pmids", []))
    return {str(x) for x in given} if isinstance(given, list) else set()


def _is_gold(document: Document, gold: set[str]) -> bool | None:
    if not gold:
        return None
    return document.id in gold or str(document.metadata.get("pmid", "")) in gold


class RetrievalAugmented:
    """Retrieves ``k`` documents for each sample and answers with ``inner`` over them.

    The retrieved ids, scores, texts and gold flags are recorded as the step ``retrieve``
    (so a resumed sample sees the same documents) and returned as ``WorkflowResult.retrieved``.
    With ``oracle=True`` the sample's own documents are used instead of retrieval, the
    upper bound a retriever could reach.
    """

    def __init__(
        self,
        inner: Workflow,
        retriever: Retriever | None,
        *,
        k: int = 8,
        query: QueryMode = "question",
        oracle: bool = False,
        index: str = "",
    ) -> None:
        if retriever is None and not oracle:
            raise ValueError("a retriever is needed unless oracle=True")
        self.inner = inner
        self.retriever = retriever
        self.k = k
        self.query = query
        self.oracle = oracle
        self.index = index
        self.name = f"{inner.name}+{'oracle' if oracle else 'retrieval'}"

    async def __call__(self, sample: Sample, ctx: SampleContext) -> WorkflowResult:
        """Retrieve (or replay the recorded retrieval), then answer over the documents."""
        gold = gold_ids(sample)
        recorded = ctx.replay("retrieve")
        if recorded is not None:
            hits = [RetrievedDocument.model_validate(h) for h in recorded["hits"]]
        else:
            hits = await self._retrieve(sample, gold)
            ctx.record(
                "retrieve", {"query": retrieval_query(sample, self.query), "hits": [h.model_dump() for h in hits]}
            )
        grounded = sample.model_copy(update={"documents": [h.document for h in hits]})
        result = await self.inner(grounded, ctx)
        details = {"index": self.index, "k": self.k, "query": self.query, "oracle": self.oracle}
        return result.model_copy(update={"retrieved": hits, "metadata": {**result.metadata, "retrieval": details}})

    async def _retrieve(self, sample: Sample, gold: set[str]) -> list[RetrievedDocument]:
        if self.oracle:
            documents = sample.documents[: self.k]
            return [
                RetrievedDocument(document=d, score=1.0, rank=i + 1, gold=_is_gold(d, gold) if gold else True)
                for i, d in enumerate(documents)
            ]
        assert self.retriever is not None
        # encoders and index lookups are CPU-bound: keep the event loop free for model calls
        (hits,) = await asyncio.to_thread(self.retriever.retrieve, [retrieval_query(sample, self.query)], self.k)
        return [h.model_copy(update={"gold": _is_gold(h.document, gold)}) for h in hits]
