"""The six conclusion-synthesis workflows.

=====================  ================================================================
``parametric-zero-shot``  the title (and background) only, one call
``parametric-cot``     plan sub-questions → answer each from knowledge → draft →
                       evaluate 0–5 → below the threshold, new sub-questions → revise
``standard-rag``       sub-question queries → hybrid BM25 + dense retrieval over the gold
                       studies plus seeded noise → LLM rerank → top K → synthesise
``golden-rag``         every gold abstract, no retrieval
``negated-rag``        golden-rag on abstracts whose findings were inverted
``feasibility``        rates 0–5 whether the reference conclusion follows from the
                       abstracts, averaged over runs with distinct seeds
=====================  ================================================================

Every model call is a named step of :class:`~ebmeval.tasks.SampleContext`, so an
interrupted sample resumes after its last finished call.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from .._util.errors import ConfigError, UsageError
from ..models import GenerateConfig
from ..tasks import Call, Document, RetrievedDocument, Sample, SampleContext, WorkflowResult
from ._evidence import MAP_CALL, OverflowPolicy, fit_evidence, parse_field, parse_questions, parse_score
from ._negation import NEGATE_CALL, NegationStore, negate_documents
from ._prompts import (
    ANSWER,
    DRAFT,
    EVALUATE,
    FEASIBILITY,
    PLAN,
    PREVIOUS,
    REPLAN,
    SYNTHESISE,
    ZERO_SHOT,
)

WorkflowName = Literal[
    "parametric-zero-shot", "parametric-cot", "standard-rag", "golden-rag", "negated-rag", "feasibility"
]
WORKFLOWS: tuple[WorkflowName, ...] = (
    "parametric-zero-shot",
    "parametric-cot",
    "standard-rag",
    "golden-rag",
    "negated-rag",
    "feasibility",
)
EVIDENCE_WORKFLOWS = frozenset({"standard-rag", "golden-rag", "negated-rag", "feasibility"})
"""Workflows that need the studies' abstracts."""


def _background(sample: Sample) -> str:
    background = sample.metadata.get("background")
    return f"\nBackground: {background}\n" if background else ""


def _require_studies(sample: Sample, workflow: str) -> None:
    if not sample.documents:
        raise UsageError(f"sample '{sample.id}' has no study abstracts, which workflow '{workflow}' needs")


async def synthesise(
    ctx: SampleContext,
    sample: Sample,
    documents: Sequence[Document],
    overflow: OverflowPolicy,
    step: str = "synthesise",
) -> tuple[str, dict[str, Any]]:
    """The conclusion written from ``documents`` (fitted to the context window) and the overflow record."""
    fields = {"title": sample.input, "background": _background(sample)}
    evidence, record = await fit_evidence(
        ctx, documents, SYNTHESISE.render(evidence="", **fields), title=sample.input, policy=overflow
    )
    output = await ctx.generate(step, SYNTHESISE.render(evidence=evidence, **fields))
    return output.text.strip(), record


EVALUATE_CALL = Call(
    "synthesis/evaluate", "verdict", temperature=0.0, max_tokens=512, about="scores a draft 0-5 with feedback"
)
"""The evaluator's call (role ``evaluator``)."""


def overflow_calls(overflow: OverflowPolicy) -> tuple[tuple[str, Call], ...]:
    """The map call that ``map-reduce`` adds, by role."""
    return (("model", MAP_CALL),) if overflow == "map-reduce" else ()


DEFAULT_K = 5
"""Abstracts kept after retrieval and reranking in ``standard-rag`` unless ``k`` is given."""


class ParametricZeroShot:
    """The conclusion from the review title (and background) alone."""

    name = "parametric-zero-shot"

    async def __call__(self, sample: Sample, ctx: SampleContext) -> WorkflowResult:
        """One ``answer`` call."""
        output = await ctx.generate("answer", ZERO_SHOT.render(title=sample.input, background=_background(sample)))
        return WorkflowResult(output=output.text.strip(), metadata={"prompts": [ZERO_SHOT.id]})


class ParametricCoT:
    """Plan, answer from knowledge, draft, evaluate, and revise until good enough or out of iterations.

    Iteration i (from 1) answers its open sub-questions (``answer/i/j``), drafts or revises the
    conclusion (``draft/i``) and scores it 0–5 with feedback (``evaluate/i``, role
    ``evaluator``). The loop stops when the score reaches ``threshold`` or after
    ``max_iterations`` drafts; otherwise ``replan/i`` asks for new sub-questions targeting the
    gaps the feedback names. An unparseable score counts as below the threshold.
    """

    name = "parametric-cot"

    def __init__(self, *, max_iterations: int = 3, threshold: float = 4.0, n_questions: int = 3) -> None:
        if max_iterations < 1:
            raise ConfigError("max_iterations", f"must be at least 1, not {max_iterations}")
        if not 0 <= threshold <= 5:
            raise ConfigError("threshold", f"must be within 0-5, not {threshold}")
        self.max_iterations = max_iterations
        self.threshold = threshold
        self.n_questions = n_questions
        self.calls = (("evaluator", EVALUATE_CALL),)
        """The kinds of call beyond the answer's, by role (see :func:`~ebmeval.tasks.task_calls`)."""

    async def __call__(self, sample: Sample, ctx: SampleContext) -> WorkflowResult:
        """Run the feedback loop; the last draft is the answer."""
        title, background = sample.input, _background(sample)
        plan = await ctx.generate("plan", PLAN.render(title=title, background=background, n=str(self.n_questions)))
        questions = parse_questions(plan.text, self.n_questions) or [title]
        notes: list[str] = []
        draft, feedback = "", ""
        history: list[dict[str, Any]] = []
        stop = "max_iterations"
        for i in range(1, self.max_iterations + 1):
            for j, question in enumerate(questions, start=1):
                answer = await ctx.generate(f"answer/{i}/{j}", ANSWER.render(title=title, question=question))
                notes.append(f"Q: {question}\nA: {answer.text.strip()}")
            previous = PREVIOUS.render(draft=draft, feedback=feedback) if draft else ""
            output = await ctx.generate(
                f"draft/{i}",
                DRAFT.render(title=title, background=background, notes="\n\n".join(notes), previous=previous),
            )
            draft = output.text.strip()
            verdict = await ctx.generate(
                f"evaluate/{i}", EVALUATE.render(title=title, draft=draft), role="evaluator", call=EVALUATE_CALL
            )
            score = parse_score(verdict.text, "Score")
            feedback = parse_field(verdict.text, "Feedback") or verdict.text.strip()
            history.append({"iteration": i, "questions": questions, "score": score})
            if score is not None and score >= self.threshold:
                stop = "threshold"
                break
            if i == self.max_iterations:
                break
            replan = await ctx.generate(
                f"replan/{i}", REPLAN.render(title=title, draft=draft, feedback=feedback, n=str(self.n_questions))
            )
            questions = parse_questions(replan.text, self.n_questions) or questions
        return WorkflowResult(
            output=draft,
            metadata={
                "iterations": len(history),
                "stopped_by": stop,
                "history": history,
                "threshold": self.threshold,
                "prompts": [t.id for t in (PLAN, ANSWER, DRAFT, PREVIOUS, EVALUATE, REPLAN)],
            },
        )


class GoldenRAG:
    """The conclusion synthesised from every gold abstract."""

    name = "golden-rag"

    def __init__(self, *, overflow: OverflowPolicy = "truncate") -> None:
        self.overflow: OverflowPolicy = overflow
        self.calls = overflow_calls(overflow)
        """The kinds of call beyond the answer's, by role (see :func:`~ebmeval.tasks.task_calls`)."""

    async def __call__(self, sample: Sample, ctx: SampleContext) -> WorkflowResult:
        """One ``synthesise`` call (plus ``map/<j>`` calls under map-reduce)."""
        _require_studies(sample, self.name)
        text, record = await synthesise(ctx, sample, sample.documents, self.overflow)
        return WorkflowResult(output=text, metadata={"overflow": record, "prompts": [SYNTHESISE.id]})


class NegatedRAG:
    """golden-rag on abstracts whose findings the ``negator`` model has inverted."""

    name = "negated-rag"

    def __init__(
        self, negations: NegationStore | str | Path | None = None, *, overflow: OverflowPolicy = "truncate"
    ) -> None:
        self._negations = negations if isinstance(negations, NegationStore) else None
        self._path = None if isinstance(negations, NegationStore) else negations
        self.overflow: OverflowPolicy = overflow
        self.calls = (("negator", NEGATE_CALL), *overflow_calls(overflow))
        """The kinds of call beyond the answer's, by role (see :func:`~ebmeval.tasks.task_calls`)."""

    @property
    def negations(self) -> NegationStore:
        """The negation store, opened on first use (``None`` at construction: the default file)."""
        if self._negations is None:
            self._negations = NegationStore(self._path)
        return self._negations

    async def __call__(self, sample: Sample, ctx: SampleContext) -> WorkflowResult:
        """Negate (or reuse the stored negation of) each abstract, then synthesise."""
        _require_studies(sample, self.name)
        documents, records = await negate_documents(ctx, sample.documents, self.negations)
        text, record = await synthesise(ctx, sample, documents, self.overflow)
        return WorkflowResult(
            output=text,
            metadata={
                "overflow": record,
                "negations": records,
                "negation_store": str(self.negations.path),
                "prompts": [SYNTHESISE.id, records[0]["prompt"]],
            },
        )


class StandardRAG:
    """Retrieve the evidence from the gold studies mixed with seeded noise, then synthesise.

    The queries are the title plus the planned sub-questions (``plan``), each prefixed with the
    title; a hybrid retriever
    (BM25 + all-MiniLM-L6-v2, reciprocal rank fusion) returns ``depth`` candidates per query,
    fused across queries; the LLM pointwise reranker (steps ``rerank/llm-pointwise/…``) keeps
    the ``k`` most relevant of the first ``rerank_top_n`` (``rerank_top_n=0`` keeps the fused
    top ``k``). The ranked list is recorded as step ``retrieve`` and returned with gold flags;
    ``metadata["recall"]`` = |gold ∩ top k| / |gold|.
    """

    name = "standard-rag"

    def __init__(
        self,
        pool: Sequence[Document],
        *,
        k: int = DEFAULT_K,
        n_distractors: int = 50,
        depth: int = 20,
        rerank_top_n: int = 10,
        n_questions: int = 3,
        overflow: OverflowPolicy = "truncate",
    ) -> None:
        if k < 1:
            raise ConfigError("k", f"must be at least 1, not {k}")
        self.pool = list(pool)
        self.k = k
        self.n_distractors = n_distractors
        self.depth = depth
        self.rerank_top_n = rerank_top_n
        self.n_questions = n_questions
        self.overflow: OverflowPolicy = overflow
        from ..rag.rerank import RERANK_CALL

        self.calls = (*((("model", RERANK_CALL),) if rerank_top_n > 0 else ()), *overflow_calls(overflow))
        """The kinds of call beyond the answer's, by role (see :func:`~ebmeval.tasks.task_calls`)."""

    async def retrieve(self, sample: Sample, ctx: SampleContext, queries: list[str]) -> list[RetrievedDocument]:
        """The top ``k`` documents for ``queries`` from the sample's noise corpus, gold-flagged."""
        from ..rag import HybridRetriever, LLMPointwiseReranker, multi_query_retrieve, noise_corpus

        gold_ids = {d.id for d in sample.documents}
        pool = [d for d in self.pool if d.id not in gold_ids]
        corpus = noise_corpus(sample.documents, pool, min(self.n_distractors, len(pool)), seed=ctx.seed)
        retriever = HybridRetriever.build(corpus.documents)
        candidates = multi_query_retrieve(retriever, [queries], max(self.depth, self.k))[0]
        if self.rerank_top_n > 0:
            reranker = LLMPointwiseReranker(ctx, top_n=self.rerank_top_n)
            ranked = await reranker.rerank(sample.input, candidates, self.k)
        else:
            ranked = candidates[: self.k]
        return [r.model_copy(update={"gold": corpus.is_gold(r.document.id)}) for r in ranked]

    async def __call__(self, sample: Sample, ctx: SampleContext) -> WorkflowResult:
        """Plan queries, retrieve (or replay the recorded retrieval), synthesise."""
        _require_studies(sample, self.name)
        plan = await ctx.generate(
            "plan", PLAN.render(title=sample.input, background=_background(sample), n=str(self.n_questions))
        )
        # sub-questions alone ("Is it safe?") match any document; anchoring them to the title keeps them on topic
        queries = [sample.input, *(f"{sample.input}: {q}" for q in parse_questions(plan.text, self.n_questions))]
        done = ctx.memo.get_step("retrieve")
        if done is None:
            ranked = await self.retrieve(sample, ctx, queries)
            done = ctx.record(
                "retrieve",
                {"queries": queries, "k": self.k, "documents": [r.model_dump() for r in ranked]},
            )
        else:
            ctx.record("retrieve", done)
        retrieved = [RetrievedDocument.model_validate(r) for r in done["documents"]]
        found = sum(1 for r in retrieved if r.gold)
        text, record = await synthesise(ctx, sample, [r.document for r in retrieved], self.overflow)
        return WorkflowResult(
            output=text,
            retrieved=retrieved,
            metadata={
                "overflow": record,
                "queries": queries,
                "k": self.k,
                "recall": found / len(sample.documents),
                "gold_retrieved": found,
                "gold_total": len(sample.documents),
                "n_distractors": self.n_distractors,
                "rerank_top_n": self.rerank_top_n,
                "prompts": [PLAN.id, SYNTHESISE.id],
            },
        )


class Feasibility:
    """Rates 0–5 whether the reference conclusion can be reached from the abstracts.

    Runs ``runs`` ratings (``rate/<r>``) with seeds ``ctx.seed + r`` at ``temperature`` (the
    run's ``--temperature`` when given: the ratings are the answer under evaluation) and
    reports their mean over the parsed ones: feasibility = (1/m) Σ_r s_r. The output is the
    mean as text; ``metadata["feasibility"]`` holds it (``None`` when no rating parsed).
    """

    name = "feasibility"

    def __init__(self, *, runs: int = 3, temperature: float = 0.7, overflow: OverflowPolicy = "truncate") -> None:
        if runs < 1:
            raise ConfigError("feasibility_runs", f"must be at least 1, not {runs}")
        self.runs = runs
        self.temperature = temperature
        self.overflow: OverflowPolicy = overflow
        self.call = Call(
            "synthesis/feasibility", "answer", temperature=temperature, about="rates 0-5 whether the conclusion follows"
        )
        """The rating call; the run's settings override its temperature."""
        self.calls = (("model", self.call), *overflow_calls(overflow))
        """The kinds of call beyond the answer's, by role (see :func:`~ebmeval.tasks.task_calls`)."""

    async def __call__(self, sample: Sample, ctx: SampleContext) -> WorkflowResult:
        """Rate ``runs`` times and average."""
        _require_studies(sample, self.name)
        fields = {"title": sample.input, "conclusion": str(sample.target)}
        evidence, record = await fit_evidence(
            ctx, sample.documents, FEASIBILITY.render(evidence="", **fields), title=sample.input, policy=self.overflow
        )
        scores: list[float | None] = []
        for r in range(self.runs):
            config = GenerateConfig(seed=ctx.seed + r)
            prompt = FEASIBILITY.render(evidence=evidence, **fields)
            output = await ctx.generate(f"rate/{r + 1}", prompt, config, call=self.call)
            scores.append(parse_score(output.text, "Score"))
        parsed = [s for s in scores if s is not None]
        mean = statistics.fmean(parsed) if parsed else None
        return WorkflowResult(
            output="" if mean is None else f"{mean:.2f}",
            metadata={"feasibility": mean, "ratings": scores, "overflow": record, "prompts": [FEASIBILITY.id]},
        )
