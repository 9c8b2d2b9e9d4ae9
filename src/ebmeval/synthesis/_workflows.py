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

import asyncio
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .._util.errors import ConfigError, UsageError, require_at_least_one
from ..judges import parse_field, parse_score
from ..models import ChatMessage, GenerateConfig
from ..prompts import RERANK_POINTWISE, PromptTemplate
from ..tasks import Call, Document, RetrievedDocument, Sample, SampleContext, WorkflowResult
from ._evidence import (
    MAP_CALL,
    OverflowPolicy,
    fit_evidence,
    format_evidence,
    parse_questions,
)
from ._negation import CHECK_CALL, NEGATE_CALL, NegationStore, check_counts, negate_documents
from ._prompts import EBMEVAL, MAP, NEGATION_CHECK, PromptSet

if TYPE_CHECKING:
    from ..rag import CrossEncoderReranker, Retriever

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


def _reply(step: str) -> str:
    """What a rendered prompt shows in place of the model's reply to ``step``."""
    return f"<the reply to {step}>"


def _user(**steps: str) -> dict[str, list[ChatMessage]]:
    return {step.replace("__", "/"): [ChatMessage(role="user", content=text)] for step, text in steps.items()}


def _require_studies(sample: Sample, workflow: str) -> None:
    if not sample.documents:
        raise UsageError(f"sample '{sample.id}' has no study abstracts, which workflow '{workflow}' needs")


def _synthesis_prompt(prompts: PromptSet, sample: Sample, evidence: str) -> str:
    return prompts.synthesise.render(title=sample.input, background=_background(sample), evidence=evidence)


async def synthesise(
    ctx: SampleContext,
    sample: Sample,
    documents: Sequence[Document],
    overflow: OverflowPolicy,
    step: str = "synthesise",
    prompts: PromptSet = EBMEVAL,
) -> tuple[str, dict[str, Any]]:
    """The conclusion written from ``documents`` (fitted to the context window) and the overflow record."""
    fields = {"title": sample.input, "background": _background(sample)}
    template = prompts.synthesise
    evidence, record = await fit_evidence(
        ctx, documents, template.render(evidence="", **fields), title=sample.input, policy=overflow
    )
    output = await ctx.generate(step, template.render(evidence=evidence, **fields))
    return output.text.strip(), record


EVALUATE_CALL = Call(
    "synthesis/evaluate", "verdict", temperature=0.0, max_tokens=512, about="scores a draft 0-5 with feedback"
)
"""The evaluator's call (role ``evaluator``)."""


def overflow_calls(overflow: OverflowPolicy) -> tuple[tuple[str, Call], ...]:
    """The map call that ``map-reduce`` adds, by role."""
    return (("model", MAP_CALL),) if overflow == "map-reduce" else ()


def overflow_templates(overflow: OverflowPolicy) -> dict[str, tuple[PromptTemplate, ...]]:
    """The template of the map call that ``map-reduce`` adds, by call name."""
    return {MAP_CALL.name: (MAP,)} if overflow == "map-reduce" else {}


class _EvidenceWorkflow:
    """A workflow that fits study abstracts to the context window under an overflow policy, in a prompt set's words."""

    def __init__(
        self,
        overflow: OverflowPolicy,
        prompts: PromptSet,
        templates: Mapping[str, tuple[PromptTemplate, ...]],
        calls: tuple[tuple[str, Call], ...] = (),
    ) -> None:
        self.overflow: OverflowPolicy = overflow
        self.prompts = prompts
        self.calls = (*calls, *overflow_calls(overflow))
        """The kinds of call beyond the answer's, by role (see :func:`~ebmeval.tasks.task_calls`): ``calls``,
        then the map call of ``map-reduce``."""
        self.call_templates = {**templates, **overflow_templates(overflow)}
        """The templates of each kind of call, by call name (see :func:`~ebmeval.tasks.call_rows`): ``templates``,
        then the map call's under ``map-reduce``."""
        in_set = set(prompts.templates)
        beyond = (t for named in self.call_templates.values() for t in named if t not in in_set)
        self.templates = tuple(dict.fromkeys(beyond))
        """The templates it asks with beyond its prompt set's (the synthesis task version holds them)."""


DEFAULT_K = 5
"""Abstracts kept after retrieval and reranking in ``standard-rag`` unless ``k`` is given."""

PAPER_QUESTIONS = 5
"""Sub-questions per plan and replan, as MedMeta's prompts ask (Appendix C.1 and C.3: "5 key research questions")."""

FEASIBILITY_TEMPERATURE = 0.5
"""Temperature of each feasibility rating, as MedMeta's three independent runs (Section 3.1)."""

FEASIBILITY_ABOVE = 4.0
"""MedMeta keeps the items whose mean feasibility rating is over 4 (Section 3.1): strictly above."""


class ParametricZeroShot:
    """The conclusion from the review title (and background) alone."""

    name = "parametric-zero-shot"

    def __init__(self, *, prompts: PromptSet = EBMEVAL) -> None:
        self.prompts = prompts
        self.call_templates = {"answer": (prompts.zero_shot,)}
        """The templates of each kind of call, by call name (see :func:`~ebmeval.tasks.call_rows`)."""

    async def __call__(self, sample: Sample, ctx: SampleContext) -> WorkflowResult:
        """One ``answer`` call."""
        template = self.prompts.zero_shot
        output = await ctx.generate("answer", template.render(title=sample.input, background=_background(sample)))
        return WorkflowResult(output=output.text.strip(), metadata={"prompts": [template.id]})

    def render_prompts(self, sample: Sample) -> dict[str, list[ChatMessage]]:
        """The one prompt (``show-prompt``)."""
        return _user(answer=self.prompts.zero_shot.render(title=sample.input, background=_background(sample)))


class ParametricCoT:
    """Plan, answer from knowledge, draft, evaluate, and revise until good enough or out of iterations.

    Iteration i (from 1) answers its open sub-questions (``answer/i/j``), drafts or revises the
    conclusion (``draft/i``) and scores it 0–5 with feedback (``evaluate/i``, role
    ``evaluator``). The loop stops when the score reaches ``threshold`` or after
    ``max_iterations`` drafts; otherwise ``replan/i`` asks for new sub-questions targeting the
    gaps the feedback names. An unparseable score counts as below the threshold.
    """

    name = "parametric-cot"

    def __init__(
        self,
        *,
        max_iterations: int = 3,
        threshold: float = 4.0,
        n_questions: int = PAPER_QUESTIONS,
        prompts: PromptSet = EBMEVAL,
    ) -> None:
        require_at_least_one("max_iterations", max_iterations)
        if not 0 <= threshold <= 5:
            raise ConfigError("threshold", f"must be within 0-5, not {threshold}")
        self.max_iterations = max_iterations
        self.threshold = threshold
        self.n_questions = n_questions
        self.prompts = prompts
        self.calls = (("evaluator", EVALUATE_CALL),)
        """The kinds of call beyond the answer's, by role (see :func:`~ebmeval.tasks.task_calls`)."""
        answer = (prompts.plan, prompts.answer, prompts.draft, prompts.previous, prompts.replan)
        self.call_templates = {"answer": answer, EVALUATE_CALL.name: (prompts.evaluate,)}
        """The templates of each kind of call, by call name (see :func:`~ebmeval.tasks.call_rows`)."""

    async def __call__(self, sample: Sample, ctx: SampleContext) -> WorkflowResult:
        """Run the feedback loop; the last draft is the answer."""
        title, background, p = sample.input, _background(sample), self.prompts
        plan = await ctx.generate("plan", p.plan.render(title=title, background=background, n=str(self.n_questions)))
        questions = parse_questions(plan.text, self.n_questions) or [title]
        notes: list[str] = []
        draft, feedback = "", ""
        history: list[dict[str, Any]] = []
        stop = "max_iterations"
        for i in range(1, self.max_iterations + 1):
            for j, question in enumerate(questions, start=1):
                answer = await ctx.generate(f"answer/{i}/{j}", p.answer.render(title=title, question=question))
                notes.append(f"Q: {question}\nA: {answer.text.strip()}")
            previous = p.previous.render(draft=draft, feedback=feedback) if draft else ""
            output = await ctx.generate(
                f"draft/{i}",
                p.draft.render(title=title, background=background, notes="\n\n".join(notes), previous=previous),
            )
            draft = output.text.strip()
            verdict = await ctx.generate(
                f"evaluate/{i}",
                p.evaluate.render(title=title, plan=plan.text, draft=draft),
                role="evaluator",
                call=EVALUATE_CALL,
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
                f"replan/{i}",
                p.replan.render(
                    title=title, draft=draft, feedback=feedback, questions="\n".join(questions), n=str(self.n_questions)
                ),
            )
            questions = parse_questions(replan.text, self.n_questions) or questions
        return WorkflowResult(
            output=draft,
            metadata={
                "iterations": len(history),
                "stopped_by": stop,
                "history": history,
                "threshold": self.threshold,
                "prompts": [t.id for t in (p.plan, p.answer, p.draft, p.previous, p.evaluate, p.replan)],
            },
        )

    def render_prompts(self, sample: Sample) -> dict[str, list[ChatMessage]]:
        """The prompts of the first iteration and of a revision, replies shown as placeholders."""
        p, title, background, n = self.prompts, sample.input, _background(sample), str(self.n_questions)
        notes = "Q: <sub-question 1>\nA: <the reply to answer/1/1>"
        first = p.draft.render(title=title, background=background, notes=notes, previous="")
        previous = p.previous.render(draft=_reply("draft/1"), feedback=_reply("evaluate/1"))
        return _user(
            plan=p.plan.render(title=title, background=background, n=n),
            answer__1__1=p.answer.render(title=title, question="<sub-question 1 of the plan>"),
            draft__1=first,
            evaluate__1=p.evaluate.render(title=title, plan=_reply("plan"), draft=_reply("draft/1")),
            replan__1=p.replan.render(
                title=title, draft=_reply("draft/1"), feedback=_reply("evaluate/1"), questions=_reply("plan"), n=n
            ),
            draft__2=p.draft.render(title=title, background=background, notes=notes + "\n\n…", previous=previous),
        )


class GoldenRAG(_EvidenceWorkflow):
    """The conclusion synthesised from every gold abstract."""

    name = "golden-rag"

    def __init__(self, *, overflow: OverflowPolicy = "truncate", prompts: PromptSet = EBMEVAL) -> None:
        super().__init__(overflow, prompts, {"answer": (prompts.synthesise,)})

    async def __call__(self, sample: Sample, ctx: SampleContext) -> WorkflowResult:
        """One ``synthesise`` call (plus ``map/<j>`` calls under map-reduce)."""
        _require_studies(sample, self.name)
        text, record = await synthesise(ctx, sample, sample.documents, self.overflow, prompts=self.prompts)
        return WorkflowResult(output=text, metadata={"overflow": record, "prompts": [self.prompts.synthesise.id]})

    def render_prompts(self, sample: Sample) -> dict[str, list[ChatMessage]]:
        """The synthesis prompt over every gold abstract, uncut."""
        return _user(synthesise=_synthesis_prompt(self.prompts, sample, format_evidence(sample.documents)))


class NegatedRAG(_EvidenceWorkflow):
    """golden-rag on abstracts whose findings the ``negator`` model has inverted."""

    name = "negated-rag"

    def __init__(
        self,
        negations: NegationStore | str | Path | None = None,
        *,
        overflow: OverflowPolicy = "truncate",
        prompts: PromptSet = EBMEVAL,
    ) -> None:
        self._negations = negations if isinstance(negations, NegationStore) else None
        self._path = None if isinstance(negations, NegationStore) else negations
        templates = {
            "answer": (prompts.synthesise,),
            NEGATE_CALL.name: (prompts.negate,),
            CHECK_CALL.name: (NEGATION_CHECK,),
        }
        super().__init__(overflow, prompts, templates, (("negator", NEGATE_CALL), ("negation_checker", CHECK_CALL)))

    @property
    def negations(self) -> NegationStore:
        """The negation store, opened on first use (``None`` at construction: the default file)."""
        if self._negations is None:
            self._negations = NegationStore(self._path)
        return self._negations

    async def __call__(self, sample: Sample, ctx: SampleContext) -> WorkflowResult:
        """Negate (or reuse the stored negation of) each abstract, then synthesise."""
        _require_studies(sample, self.name)
        documents, records = await negate_documents(ctx, sample.documents, self.negations, prompt=self.prompts.negate)
        text, record = await synthesise(ctx, sample, documents, self.overflow, prompts=self.prompts)
        return WorkflowResult(
            output=text,
            metadata={
                "overflow": record,
                "negations": records,
                "negation_checks": check_counts(records),
                "negation_store": str(self.negations.path),
                "prompts": [self.prompts.synthesise.id, records[0]["prompt"]],
            },
        )

    def render_prompts(self, sample: Sample) -> dict[str, list[ChatMessage]]:
        """One negation prompt per abstract, then the synthesis over the negated abstracts."""
        steps = {f"negate/{d.id}": self.prompts.negate.render(abstract=d.text) for d in sample.documents}
        steps["synthesise"] = _synthesis_prompt(self.prompts, sample, "<the negated abstracts, numbered as studies>")
        return {step: [ChatMessage(role="user", content=text)] for step, text in steps.items()}


class StandardRAG(_EvidenceWorkflow):
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
    design = "per-item"
    """``per-item``: each item's gold studies plus seeded noise (``index``: :class:`IndexRAG`)."""

    def __init__(
        self,
        pool: Sequence[Document],
        *,
        k: int = DEFAULT_K,
        n_distractors: int = 50,
        depth: int = 20,
        rerank_top_n: int = 10,
        n_questions: int = PAPER_QUESTIONS,
        overflow: OverflowPolicy = "truncate",
        prompts: PromptSet = EBMEVAL,
    ) -> None:
        require_at_least_one("k", k)
        from ..rag.rerank import RERANK_CALL

        reranks = rerank_top_n > 0
        templates: dict[str, tuple[PromptTemplate, ...]] = {"answer": (prompts.plan, prompts.synthesise)}
        if reranks:
            templates[RERANK_CALL.name] = (RERANK_POINTWISE,)
        super().__init__(overflow, prompts, templates, (("model", RERANK_CALL),) if reranks else ())
        self.pool = list(pool)
        self.k = k
        self.n_distractors = n_distractors
        self.depth = depth
        self.rerank_top_n = rerank_top_n
        self.n_questions = n_questions

    def gold_total(self, sample: Sample) -> int:
        """The gold studies recall divides by: the item's studies."""
        return len(sample.documents)

    def found(self, retrieved: Sequence[RetrievedDocument]) -> int:
        """Gold documents among the retrieved ones."""
        return sum(1 for r in retrieved if r.gold)

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
        if self.design == "per-item":
            _require_studies(sample, self.name)
        plan = await ctx.generate(
            "plan",
            self.prompts.plan.render(title=sample.input, background=_background(sample), n=str(self.n_questions)),
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
        found, total = self.found(retrieved), self.gold_total(sample)
        text, record = await synthesise(
            ctx, sample, [r.document for r in retrieved], self.overflow, prompts=self.prompts
        )
        return WorkflowResult(
            output=text,
            retrieved=retrieved,
            metadata={
                "overflow": record,
                "queries": queries,
                "k": self.k,
                "recall": found / total if total else None,
                "gold_retrieved": found,
                "gold_total": total,
                "design": self.design,
                "n_distractors": self.n_distractors,
                "rerank_top_n": self.rerank_top_n,
                "prompts": [self.prompts.plan.id, self.prompts.synthesise.id],
            },
        )

    def render_prompts(self, sample: Sample) -> dict[str, list[ChatMessage]]:
        """The plan, then the synthesis over the retrieved abstracts (shown as a placeholder)."""
        plan = self.prompts.plan.render(title=sample.input, background=_background(sample), n=str(self.n_questions))
        evidence = f"<the top {self.k} retrieved abstracts, numbered as studies>"
        return _user(plan=plan, synthesise=_synthesis_prompt(self.prompts, sample, evidence))


def gold_studies(sample: Sample) -> set[str]:
    """The PMIDs of an item's primary studies: ``metadata["study_pmids"]``, else its documents' ids."""
    listed = sample.metadata.get("study_pmids")
    return {str(p) for p in listed} if isinstance(listed, list) and listed else {d.id for d in sample.documents}


class IndexRAG(StandardRAG):
    """MedMeta's S-RAG: retrieval over one shared index, ``k`` documents per query, an optional cross-encoder.

    The index is any folder built with ``ebmeval index build`` (BM25, dense, or ``hybrid``: BM25
    and dense fused by reciprocal rank). Each query (the title and each planned sub-question,
    anchored to the title) retrieves ``depth`` candidates; the cross-encoder at ``reranker`` (a
    local model folder), when given, reorders them; the top ``k`` of each query are kept, and the
    union over queries, first seen first, is the evidence (so up to ``k`` × queries documents).
    A document is gold when its id or PMID is one of the item's primary studies
    (:func:`gold_studies`); ``metadata["recall"]`` = gold studies retrieved / gold studies.
    """

    design = "index"

    def __init__(
        self,
        retriever: Retriever,
        *,
        index: str = "",
        reranker: CrossEncoderReranker | None = None,
        k: int = DEFAULT_K,
        depth: int = 20,
        n_questions: int = PAPER_QUESTIONS,
        overflow: OverflowPolicy = "truncate",
        prompts: PromptSet = EBMEVAL,
    ) -> None:
        super().__init__(
            [], k=k, depth=depth, rerank_top_n=0, n_questions=n_questions, overflow=overflow, prompts=prompts
        )
        self.retriever = retriever
        self.index = index
        self.reranker = reranker

    async def retrieve(self, sample: Sample, ctx: SampleContext, queries: list[str]) -> list[RetrievedDocument]:
        """The top ``k`` of each query from the index (reranked when a cross-encoder is given), gold-flagged."""
        gold = gold_studies(sample)
        found = await asyncio.to_thread(self.retriever.retrieve, queries, max(self.depth, self.k))
        kept: dict[str, RetrievedDocument] = {}
        for query, candidates in zip(queries, found, strict=True):
            top = await self.reranker.rerank(query, candidates, self.k) if self.reranker else candidates[: self.k]
            for hit in top:
                kept.setdefault(hit.document.id, hit)
        ranked = list(kept.values())
        return [
            hit.model_copy(update={"rank": i, "gold": _source(hit.document) in gold or hit.document.id in gold})
            for i, hit in enumerate(ranked, start=1)
        ]

    def gold_total(self, sample: Sample) -> int:
        """The item's primary studies, retrieved or not."""
        return len(gold_studies(sample))

    def found(self, retrieved: Sequence[RetrievedDocument]) -> int:
        """Distinct gold studies among the retrieved documents (several chunks of one study count once)."""
        return len({_source(r.document) for r in retrieved if r.gold})


def _source(document: Document) -> str:
    return str(document.metadata.get("pmid", document.id))


class Feasibility(_EvidenceWorkflow):
    """Rates 0–5 whether the reference conclusion can be reached from the abstracts.

    Runs ``runs`` ratings (``rate/<r>``) with seeds ``ctx.seed + r`` at ``temperature`` (the
    run's ``--temperature`` when given: the ratings are the answer under evaluation) and
    reports their mean over the parsed ones: feasibility = (1/m) Σ_r s_r. The output is the
    mean as text; ``metadata["feasibility"]`` holds it (``None`` when no rating parsed).
    """

    name = "feasibility"

    def __init__(
        self,
        *,
        runs: int = 3,
        temperature: float = FEASIBILITY_TEMPERATURE,
        overflow: OverflowPolicy = "truncate",
        prompts: PromptSet = EBMEVAL,
    ) -> None:
        require_at_least_one("feasibility_runs", runs)
        self.call = Call(
            "synthesis/feasibility", "answer", temperature=temperature, about="rates 0-5 whether the conclusion follows"
        )
        """The rating call; the run's settings override its temperature."""
        super().__init__(overflow, prompts, {self.call.name: (prompts.feasibility,)}, (("model", self.call),))
        self.runs = runs
        self.temperature = temperature

    async def __call__(self, sample: Sample, ctx: SampleContext) -> WorkflowResult:
        """Rate ``runs`` times and average."""
        _require_studies(sample, self.name)
        fields, template = {"title": sample.input, "conclusion": str(sample.target)}, self.prompts.feasibility
        evidence, record = await fit_evidence(
            ctx, sample.documents, template.render(evidence="", **fields), title=sample.input, policy=self.overflow
        )
        scores: list[float | None] = []
        for r in range(self.runs):
            config = GenerateConfig(seed=ctx.seed + r)
            prompt = template.render(evidence=evidence, **fields)
            output = await ctx.generate(f"rate/{r + 1}", prompt, config, call=self.call)
            scores.append(parse_score(output.text, "Score"))
        parsed = [s for s in scores if s is not None]
        mean = statistics.fmean(parsed) if parsed else None
        return WorkflowResult(
            output="" if mean is None else f"{mean:.2f}",
            metadata={"feasibility": mean, "ratings": scores, "overflow": record, "prompts": [template.id]},
        )

    def render_prompts(self, sample: Sample) -> dict[str, list[ChatMessage]]:
        """The rating prompt over every abstract, uncut (the same for each of the ``runs`` ratings)."""
        evidence = format_evidence(sample.documents)
        prompt = self.prompts.feasibility.render(title=sample.input, conclusion=str(sample.target), evidence=evidence)
        return _user(rate__1=prompt)
