"""Retrieval before answering: any workflow, grounded in the top-k documents of an index."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from .._util.errors import ConfigError, require_at_least_one
from ..models import ChatMessage
from ..prompts import RERANK_POINTWISE, PromptTemplate
from ..tasks import (
    Call,
    Document,
    RetrievedDocument,
    Sample,
    SampleContext,
    Task,
    Workflow,
    WorkflowResult,
    identified_by_content,
    task_layer,
)

if TYPE_CHECKING:
    from ..rag import Reranker, Retriever

LLM_RERANKER = "llm"
"""The ``rerank`` value naming the LLM pointwise reranker (the model in role ``reranker``, else the model)."""
LLM_RERANK_ROLE = "reranker"
"""The role that plays the LLM pointwise reranker (the model under evaluation unless the run names another)."""

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


@dataclasses.dataclass(eq=False)
class RetrievalAugmented:
    """Retrieves ``k`` documents for each sample and answers with ``inner`` over them.

    The retrieved ids, scores, texts and gold flags are recorded as the step ``retrieve``
    (so a resumed sample sees the same documents) and returned as ``WorkflowResult.retrieved``.
    The inner workflow sees the sample's own documents (the sentence of a relation question,
    say) followed by the retrieved ones. With a ``reranker`` (a cross-encoder, say) or
    ``llm_rerank`` (the LLM pointwise reranker, its calls made through the sample's context in
    role ``reranker``, which defaults to the model), ``depth`` candidates are retrieved and the
    best ``k`` of them by the reranker are kept. With ``oracle=True`` the sample's own documents are
    used instead of retrieval, the upper bound a retriever could reach.
    """

    inner: Workflow
    retriever: Retriever | None
    _: dataclasses.KW_ONLY
    k: int = 8
    query: QueryMode = "question"
    oracle: bool = False
    index: str = ""
    reranker: Reranker | None = None
    llm_rerank: bool = False
    depth: int | None = None
    """Candidates retrieved for the reranker (``None`` without one: ``k``)."""
    name: str = dataclasses.field(init=False)
    calls: tuple[tuple[str, Call], ...] = dataclasses.field(init=False)
    """The inner workflow's kinds of call beyond the answer's, and the reranker's (see
    :func:`~ebmeval.tasks.task_calls`)."""
    call_templates: dict[str, tuple[PromptTemplate, ...]] = dataclasses.field(init=False)
    """The inner workflow's templates by call name, and the reranker's (see :func:`~ebmeval.tasks.call_rows`)."""

    def __post_init__(self) -> None:
        if self.retriever is None and not self.oracle:
            raise ValueError("a retriever is needed unless oracle=True")
        if self.reranker is None and not self.llm_rerank:
            self.depth = None
        self.name = f"{self.inner.name}+{'oracle' if self.oracle else 'retrieval'}"
        self.calls = tuple(getattr(self.inner, "calls", ()))
        self.call_templates = dict(getattr(self.inner, "call_templates", {}))
        if self.llm_rerank:
            from ..rag.rerank import RERANK_CALL

            self.calls = (*self.calls, (LLM_RERANK_ROLE, RERANK_CALL))
            self.call_templates[RERANK_CALL.name] = (RERANK_POINTWISE,)

    @property
    def templates(self) -> tuple[PromptTemplate, ...]:
        """The inner workflow's templates: its answer's, which retrieval grounds in other documents."""
        return tuple(getattr(self.inner, "templates", ()))

    async def __call__(self, sample: Sample, ctx: SampleContext) -> WorkflowResult:
        """Retrieve (or replay the recorded retrieval), then answer over the documents."""
        gold = gold_ids(sample)
        recorded = ctx.replay("retrieve")
        if recorded is not None:
            hits = [RetrievedDocument.model_validate(h) for h in recorded["hits"]]
        else:
            hits = await self._retrieve(sample, gold)
            hits = await self._reranked(sample, hits, ctx)
            ctx.record(
                "retrieve", {"query": retrieval_query(sample, self.query), "hits": [h.model_dump() for h in hits]}
            )
        result = await self.inner(self._grounded(sample, hits), ctx)
        details = {"index": self.index, "k": self.k, "query": self.query, "oracle": self.oracle}
        if self.depth is not None:
            details["rerank_depth"] = self.depth
        return result.model_copy(update={"retrieved": hits, "metadata": {**result.metadata, "retrieval": details}})

    def _grounded(self, sample: Sample, hits: list[RetrievedDocument]) -> Sample:
        own = [] if self.oracle else sample.documents
        return sample.model_copy(update={"documents": [*own, *(h.document for h in hits)]})

    async def _retrieve(self, sample: Sample, gold: set[str]) -> list[RetrievedDocument]:
        # encoders and index lookups are CPU-bound: keep the event loop free for model calls
        return await asyncio.to_thread(self._retrieve_now, sample, gold)

    def _retrieve_now(self, sample: Sample, gold: set[str]) -> list[RetrievedDocument]:
        if self.oracle:
            documents = sample.documents[: self.k]
            return [
                RetrievedDocument(document=d, score=1.0, rank=i + 1, gold=_is_gold(d, gold) if gold else True)
                for i, d in enumerate(documents)
            ]
        assert self.retriever is not None
        (hits,) = self.retriever.retrieve([retrieval_query(sample, self.query)], self.depth or self.k)
        return [h.model_copy(update={"gold": _is_gold(h.document, gold)}) for h in hits]

    async def _reranked(
        self, sample: Sample, hits: list[RetrievedDocument], ctx: SampleContext
    ) -> list[RetrievedDocument]:
        """The best ``k`` of ``hits`` by the reranker (``hits`` as they are without one)."""
        reranker = self.reranker
        if self.llm_rerank:
            from ..rag import LLMPointwiseReranker

            role = LLM_RERANK_ROLE if LLM_RERANK_ROLE in ctx.models else "model"
            reranker = LLMPointwiseReranker(ctx, top_n=len(hits), role=role)
        if reranker is None:
            return hits
        return await reranker.rerank(retrieval_query(sample, self.query), hits, self.k)

    def render_prompts(self, sample: Sample) -> dict[str, list[ChatMessage]]:
        """The inner workflow's prompts over the documents retrieved for ``sample`` now."""
        from ._qa import PromptRenderer

        if not isinstance(self.inner, PromptRenderer):
            raise ConfigError("workflow", f"workflow '{self.inner.name}' does not render its prompts")
        hits = self._retrieve_now(sample, gold_ids(sample))[: self.k]  # before reranking: no model is called
        return self.inner.render_prompts(self._grounded(sample, hits))


@task_layer
def with_retrieval(
    task: Task,
    retrieval: str | None = None,
    k: int = 8,
    query: QueryMode = "question",
    rerank: str | None = None,
    rerank_depth: int = 50,
) -> Task:
    """``task`` answered over retrieved documents: every task type takes these options.

    A hash of the index's identity (retriever, its parameters and encoders, the corpus hash)
    joins the task version, so answers over another index are another run.

    Args:
        task: the task whose workflow answers over the documents.
        retrieval: folder of an index (``ebmeval index build``); each sample is answered over
            its own documents (if any) followed by the top ``k`` retrieved ones.
        k: documents retrieved per sample.
        query: ``question`` or ``question+options``, the text sent to the retriever.
        rerank: reorder ``rerank_depth`` retrieved candidates and keep the best ``k``: the folder of a
            local cross-encoder, or ``llm`` (the LLM pointwise reranker, played by the model in role
            ``reranker``, else the model under evaluation).
        rerank_depth: candidates retrieved for the reranker.
    """
    if retrieval is None:
        raise ConfigError("task_args.retrieval", "k, query and rerank need retrieval=INDEX_FOLDER")
    if rerank_depth < k:
        raise ConfigError("task_args.rerank_depth", f"must be at least k ({k}), not {rerank_depth}")
    if query not in ("question", "question+options"):
        raise ConfigError("task_args.query", f"must be 'question' or 'question+options', not {query!r}")
    require_at_least_one("task_args.k", k)
    from ..rag import load_index

    # one query at a time: a batch pads dense queries to its longest text, so batching by
    # arrival time could move a near-tied document and make retrieval depend on timing
    reranker = None
    if rerank is not None and rerank != LLM_RERANKER:
        from ..rag import CrossEncoderReranker

        reranker = CrossEncoderReranker(rerank, top_n=rerank_depth)
    workflow = RetrievalAugmented(
        task.workflow,
        load_index(retrieval),
        k=k,
        query=query,
        index=retrieval,
        reranker=reranker,
        llm_rerank=rerank == LLM_RERANKER,
        depth=rerank_depth,
    )
    metadata = {**task.metadata, "retrieval": {"index": retrieval, "k": k, "query": query, "rerank": rerank}}
    roles = task.roles if rerank != LLM_RERANKER or LLM_RERANK_ROLE in task.roles else (*task.roles, LLM_RERANK_ROLE)
    retrieving = dataclasses.replace(task, workflow=workflow, metadata=metadata, roles=roles)
    return identified_by_content(retrieving, {"retrieval": index_hash(retrieval), "rerank": reranker_identity(rerank)})


def index_hash(index: str) -> str:
    """The index in folder ``index`` by its content (retriever, parameters, encoders, corpus), not its path."""
    from ..rag import index_identity

    return str(index_identity(index)["hash"][:12])


def reranker_identity(rerank: str | None) -> str | None:
    """A reranker as the task version holds it: the LLM one by its template, a cross-encoder by its files.

    ``rerank/llm-pointwise@v1`` (the template's id), or ``rerank-<hash>`` of a cross-encoder folder's
    fingerprint; ``None`` for no reranker.
    """
    if rerank is None or rerank == LLM_RERANKER:
        return None if rerank is None else RERANK_POINTWISE.id
    from ..rag.retrievers import model_fingerprint

    return f"rerank-{model_fingerprint(Path(rerank))[:12]}"
