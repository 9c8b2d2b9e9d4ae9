"""Meta-analysis conclusion synthesis (the MedMeta study design) over M3, MS² and MedMeta reviews.

Data card: ``docs/tasks/synthesis.md``; guide: ``docs/synthesis.md``.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Literal

from .._util.errors import ConfigError, UnknownNameError
from .._util.hashing import stable_hash
from ..models import GenerateConfig
from ..synthesis import (
    DEFAULT_K,
    EVIDENCE_WORKFLOWS,
    FEASIBILITY_ABOVE,
    PAPER_QUESTIONS,
    WORKFLOWS,
    Feasibility,
    FeasibilityScore,
    GoldenRAG,
    IndexRAG,
    NegatedRAG,
    OverflowPolicy,
    ParametricCoT,
    ParametricZeroShot,
    PromptSet,
    RetrievalRecall,
    RubricJudge,
    RubricPanel,
    StandardRAG,
    SynthesisItem,
    WorkflowName,
    default_negation_path,
    load_jsonl,
    prompt_set,
    prompt_versions,
    read_feasibility,
    to_sample,
)
from ..tasks import Document, Sample, Scorer, Task, Workflow, identified_by_content, task
from ..workflows import index_hash, reranker_identity
from ._data import read_records
from .mcq_file import file_digest

Source = Literal["m3", "ms2", "medmeta", "file"]
FILES = {"m3": "synthesis_m3.jsonl.gz", "ms2": "synthesis_ms2.jsonl.gz", "medmeta": "synthesis_medmeta.jsonl.gz"}
NOISE = "synthesis_noise.jsonl.gz"
DATA_VERSION = "1"
_JUDGE_ROLE = re.compile(r"^judge\d*$")


@cache
def _shipped(source: str) -> tuple[Sample, ...]:
    name = FILES[source]
    return tuple(to_sample(SynthesisItem.model_validate(record)) for record in read_records(name))


@cache
def noise_pool() -> tuple[Document, ...]:
    """Retrieval distractors: every shipped study (all sources) plus the MS² general references."""
    pool = {d.id: d for source in ("m3", "ms2") for sample in _shipped(source) for d in sample.documents}
    for record in read_records(NOISE):
        pool.setdefault(record["id"], Document(id=record["id"], text=record["text"], title=record.get("title")))
    return tuple(pool[k] for k in sorted(pool))


def join_abstracts(samples: list[Sample], path: str) -> list[Sample]:
    """MedMeta samples with their primary studies' abstracts joined by PMID from ``path``.

    ``path`` is anything :func:`ebmeval.rag.corpus.read_documents` reads: PubMed XML (``.xml``,
    ``.xml.gz``), JSONL or CSV with ``id`` (the PMID), ``text`` and ``title`` fields, or a
    folder of text files named by PMID. A document's PMID is its ``metadata["pmid"]``, else its
    id. PMIDs still without an abstract stay listed in ``metadata["missing_pmids"]``.
    """
    from ..rag.corpus import read_documents

    wanted = {str(p) for s in samples for p in s.metadata.get("study_pmids", [])}
    found: dict[str, Document] = {}
    for document in read_documents(path):
        pmid = str(document.metadata.get("pmid", document.id))
        if pmid in wanted:
            found[pmid] = Document(id=pmid, text=document.text, title=document.title)
    joined = []
    for sample in samples:
        pmids = [str(p) for p in sample.metadata.get("study_pmids", [])]
        metadata = {**sample.metadata, "missing_pmids": [p for p in pmids if p not in found]}
        documents = [found[p] for p in pmids if p in found]
        joined.append(sample.model_copy(update={"documents": documents, "metadata": metadata}))
    return joined


def check_coverage(samples: list[Sample], min_coverage: float) -> list[Sample]:
    """Samples whose joined abstracts cover at least ``min_coverage`` of their listed PMIDs.

    Raises ``ConfigError`` naming every sample below it (k of n joined). A sample above it but
    not complete keeps ``metadata["abstract_coverage"]`` = k / n and a ``data_issue`` saying how
    many abstracts are missing, so every summary that includes it names it.
    """
    if not 0 < min_coverage <= 1:
        raise ConfigError("min_coverage", f"must be in (0, 1], not {min_coverage}")
    short, kept = [], []
    for sample in samples:
        listed = len(sample.metadata.get("study_pmids", [])) or len(sample.documents)
        share = len(sample.documents) / listed if listed else 0.0
        if share < min_coverage:
            short.append(f"{sample.id} ({len(sample.documents)} of {listed})")
            continue
        metadata = {**sample.metadata, "abstract_coverage": share}
        if share < 1:
            missing = f"only {len(sample.documents)} of {listed} primary-study abstracts joined"
            metadata["data_issue"] = "; ".join(filter(None, (str(sample.metadata.get("data_issue") or ""), missing)))
        kept.append(sample.model_copy(update={"metadata": metadata}))
    if short:
        raise ConfigError(
            "min_coverage",
            f"{len(short)} items have fewer than {min_coverage:.0%} of their primary-study abstracts joined: "
            f"{', '.join(short[:5])}{' …' if len(short) > 5 else ''}; join the missing abstracts, pick items with "
            "items=[...], or lower min_coverage (partial items are then named in every summary)",
        )
    return kept


def load_synthesis(source: Source = "m3", path: str | None = None) -> list[Sample]:
    """The samples of a shipped source, or of a JSONL file of the item schema (``source="file"``)."""
    if source == "file":
        if path is None:
            raise ConfigError("path", "source 'file' needs the path of a JSONL file of synthesis items")
        return [to_sample(item) for item in load_jsonl(path)]
    if source not in FILES:
        raise ConfigError("source", f"must be one of m3, ms2, medmeta, file; not {source!r}")
    if path is not None:
        raise ConfigError("path", "only source 'file' reads a path")
    return list(_shipped(source))


def _workflow(
    name: str,
    samples: list[Sample],
    *,
    overflow: OverflowPolicy,
    k: int,
    n_distractors: int,
    depth: int,
    rerank_top_n: int,
    n_questions: int,
    max_iterations: int,
    threshold: float,
    feasibility_runs: int,
    negation_store: str | None,
    prompts: PromptSet,
) -> Workflow:
    if name == "parametric-zero-shot":
        return ParametricZeroShot(prompts=prompts)
    if name == "parametric-cot":
        return ParametricCoT(
            max_iterations=max_iterations, threshold=threshold, n_questions=n_questions, prompts=prompts
        )
    if name == "golden-rag":
        return GoldenRAG(overflow=overflow, prompts=prompts)
    if name == "negated-rag":
        return NegatedRAG(negation_store, overflow=overflow, prompts=prompts)
    if name == "feasibility":
        return Feasibility(runs=feasibility_runs, overflow=overflow, prompts=prompts)
    pool = list(noise_pool()) + [d for s in samples for d in s.documents]
    return StandardRAG(
        list({d.id: d for d in pool}.values()),
        k=k,
        n_distractors=n_distractors,
        depth=depth,
        rerank_top_n=rerank_top_n,
        n_questions=n_questions,
        overflow=overflow,
        prompts=prompts,
    )


def _negation_store(path: str | None) -> str | None:
    """The store ``path`` names, however spelled: its resolved absolute path; ``None`` for the default store.

    The default (:func:`~ebmeval.synthesis.default_negation_path`) is ``None`` whether named or not.
    """
    if path is None:
        return None
    resolved = Path(path).resolve()
    return None if resolved == default_negation_path().resolve() else str(resolved)


def _template_versions(prompts: PromptSet, workflow: Workflow) -> dict[str, int]:
    """Template name → version of every template the task asks with, which its version folds in.

    The prompt set's, and those the workflow declares beyond them (``templates``: the LLM reranker's
    where ``standard-rag`` reranks).
    """
    return prompt_versions(prompts) | {t.name: t.version for t in getattr(workflow, "templates", ())}


WORKFLOW_OPTIONS: dict[str, tuple[str, ...]] = {
    "k": ("standard-rag",),
    "n_distractors": ("standard-rag",),
    "depth": ("standard-rag",),
    "rerank_top_n": ("standard-rag",),
    "n_questions": ("parametric-cot", "standard-rag"),
    "max_iterations": ("parametric-cot",),
    "threshold": ("parametric-cot",),
    "feasibility_runs": ("feasibility",),
}
"""Options that only some workflows use, with those workflows; with another they are ignored."""


@task("synthesis")
def synthesis(
    source: Source = "m3",
    workflow: WorkflowName = "golden-rag",
    path: str | None = None,
    items: list[str] | None = None,
    abstracts: str | None = None,
    overflow: OverflowPolicy = "truncate",
    k: int = DEFAULT_K,
    n_distractors: int = 50,
    depth: int = 20,
    rerank_top_n: int = 10,
    n_questions: int = PAPER_QUESTIONS,
    max_iterations: int = 3,
    threshold: float = 4.0,
    feasibility_runs: int = 3,
    feasibility_ratings: str | None = None,
    feasibility_above: float = FEASIBILITY_ABOVE,
    min_coverage: float = 1.0,
    retrieval: str | None = None,
    reranker: str | None = None,
    negation_store: str | None = None,
    panel: list[str] | None = None,
    text_metrics: bool = True,
    prompts: str = "ebmeval",
) -> Task:
    """Write the conclusion of a systematic review; graded against the authors' conclusion.

    Scorers: ``judge/rubric-0-5`` (role ``judge``), ``judge/rubric-panel`` when ``panel`` names
    judges, ``text/rouge-l`` and ``text/bertscore`` with ``text_metrics``,
    ``synthesis/retrieval-recall`` for ``standard-rag``; the ``feasibility`` workflow is scored
    by ``synthesis/feasibility`` only. The files ``path``, ``abstracts`` and ``feasibility_ratings``, a
    ``retrieval`` index and a ``reranker`` are identified by their content, not by the paths naming them.

    Args:
        source: ``m3`` (229 reviews), ``ms2`` (1 review, 20 studies), ``medmeta`` (20 reviews,
            no joined abstracts: parametric workflows only) or ``file`` (``path``).
        workflow: one of the six workflows (see :mod:`ebmeval.synthesis`).
        path: JSONL file of synthesis items, for ``source="file"``.
        items: keep only these item ids, in this order.
        abstracts: for ``medmeta``, a PubMed XML, JSONL, CSV or folder of the primary studies'
            abstracts, joined by PMID (:func:`join_abstracts`).
        overflow: ``truncate`` (each abstract cut evenly) or ``map-reduce`` when the evidence
            exceeds the context window; recorded in the generation's metadata.
        k: documents kept after reranking (``standard-rag``).
        n_distractors: noise documents mixed with the gold studies (``standard-rag``).
        depth: candidates per query before fusion and reranking (``standard-rag``).
        rerank_top_n: candidates the LLM reranker judges; 0 keeps the fused top k.
        n_questions: sub-questions planned per round (``parametric-cot``, ``standard-rag``); 5 as in MedMeta.
        max_iterations: drafts at most (``parametric-cot``).
        threshold: evaluator score (0-5) that ends the loop (``parametric-cot``).
        feasibility_runs: ratings averaged, with distinct seeds, at temperature 0.5 as in MedMeta (``feasibility``).
        feasibility_ratings: JSONL of ``{"id", "feasibility"}`` (``export_feasibility``).
        feasibility_above: with ``feasibility_ratings``, keep only the items whose mean rating is strictly
            above this (MedMeta: over 4).
        min_coverage: with ``abstracts`` and an evidence workflow, the share of an item's listed PMIDs
            whose abstracts must join; an item below it is refused (:func:`check_coverage`).
        retrieval: for ``standard-rag``, an index folder built with ``ebmeval index build`` (e.g.
            ``--retriever hybrid``: BM25 + dense, reciprocal rank fusion) over one shared corpus:
            MedMeta's S-RAG design, ``k`` documents per query (:class:`IndexRAG`). Without it, the
            per-item design: the item's gold studies plus ``n_distractors`` noise documents.
        reranker: with ``retrieval``, a local cross-encoder model folder that reorders each
            query's ``depth`` candidates before the top ``k`` are kept.
        negation_store: for ``negated-rag``, SQLite file of negations (default: next to the response cache);
            the run records it by its resolved absolute path, and the default file named as no file.
        panel: judges of ``judge/rubric-panel``: roles ``judge``, ``judge2`` …, each given a model with ``--role``.
        text_metrics: add ROUGE-L and BERTScore on all-MiniLM-L6-v2 (``ebmeval.scorers.text``).
        prompts: the prompt set of the workflows and the rubric judges: ``ebmeval`` (ebmeval's own) or
            ``medmeta-paper`` (MedMeta's appendix prompts and six-criterion rubric, replies "Score: N").
    """
    chosen_prompts = prompt_set(prompts)
    if workflow not in WORKFLOWS:
        raise ConfigError("workflow", f"must be one of {', '.join(WORKFLOWS)}; not {workflow!r}")
    if overflow not in ("truncate", "map-reduce"):
        raise ConfigError("overflow", f"must be truncate or map-reduce, not {overflow!r}")
    if negation_store is not None and workflow != "negated-rag":
        raise ConfigError("negation_store", f"only workflow 'negated-rag' reads negations; not {workflow!r}")
    samples = _selected_samples(source, path, abstracts, items, feasibility_ratings, feasibility_above)
    samples = _checked_evidence(samples, source, workflow, retrieval, reranker, abstracts, min_coverage)
    store = _negation_store(negation_store)
    chosen = (
        _index_rag(
            retrieval, reranker, k=k, depth=depth, n_questions=n_questions, overflow=overflow, prompts=chosen_prompts
        )
        if retrieval
        else _workflow(
            workflow,
            samples,
            overflow=overflow,
            k=k,
            n_distractors=n_distractors,
            depth=depth,
            rerank_top_n=rerank_top_n,
            n_questions=n_questions,
            max_iterations=max_iterations,
            threshold=threshold,
            feasibility_runs=feasibility_runs,
            negation_store=store,
            prompts=chosen_prompts,
        )
    )
    scorers, roles = _grading(workflow, chosen_prompts, panel, text_metrics)
    templates = _template_versions(chosen_prompts, chosen)
    task = Task(
        name="synthesis",
        dataset=samples,
        workflow=chosen,
        scorers=scorers,
        version=f"{DATA_VERSION}.{stable_hash(templates, 8)}",
        generate_config=GenerateConfig(temperature=0.0, max_tokens=256),
        roles=roles,
        role_defaults={"negator": DEFAULT_NEGATOR, "negation_checker": "role:negator"}
        if workflow == "negated-rag"
        else {},
        normalised_args={"negation_store": store},
        inapplicable_args=frozenset(o for o, used_by in WORKFLOW_OPTIONS.items() if workflow not in used_by),
        metadata={"card": "docs/tasks/synthesis.md", "source": source, "prompts": templates},
    )
    files = {"path": path, "abstracts": abstracts, "feasibility_ratings": feasibility_ratings}
    identities: dict[str, str | None] = {option: file_digest(f) for option, f in files.items() if f is not None}
    if retrieval is not None:
        identities |= {"retrieval": index_hash(retrieval), "reranker": reranker_identity(reranker)}
    return identified_by_content(task, identities)


def _selected_samples(
    source: Source,
    path: str | None,
    abstracts: str | None,
    items: list[str] | None,
    feasibility_ratings: str | None,
    feasibility_above: float,
) -> list[Sample]:
    """The items of ``source`` the options select: abstracts joined, ``items`` in their order, the feasible ones."""
    samples = load_synthesis(source, path)
    if abstracts is not None:
        if source != "medmeta":
            raise ConfigError("abstracts", f"only source 'medmeta' joins abstracts; {source!r} ships its own")
        samples = join_abstracts(samples, abstracts)
    if items is not None:
        by_id = {s.id: s for s in samples}
        unknown = [i for i in items if i not in by_id]
        if unknown:
            raise UnknownNameError(f"{source} synthesis item", unknown[0], by_id)
        samples = [by_id[i] for i in items]
    if feasibility_ratings is not None:
        ratings = read_feasibility(feasibility_ratings)
        samples = [s for s in samples if (ratings.get(s.id) or 0.0) > feasibility_above]
    return samples


def _checked_evidence(
    samples: list[Sample],
    source: Source,
    workflow: WorkflowName,
    retrieval: str | None,
    reranker: str | None,
    abstracts: str | None,
    min_coverage: float,
) -> list[Sample]:
    """``samples``, refused where ``workflow`` cannot read its evidence from them (or from ``retrieval``).

    Retrieval and reranking only with ``standard-rag``; an evidence workflow without an index needs
    every item's abstracts, and joined ``abstracts`` must cover ``min_coverage`` (:func:`check_coverage`).
    """
    if (retrieval is not None or reranker is not None) and workflow != "standard-rag":
        raise ConfigError("retrieval", f"only workflow 'standard-rag' retrieves; not {workflow!r}")
    if reranker is not None and retrieval is None:
        raise ConfigError("reranker", "reranks the candidates of an index: give retrieval=INDEX too")
    if workflow not in EVIDENCE_WORKFLOWS or retrieval is not None:
        return samples
    empty = [s.id for s in samples if not s.documents]
    if empty:
        raise ConfigError(
            "workflow",
            f"'{workflow}' needs study abstracts, which {len(empty)} items of '{source}' lack "
            f"(e.g. {empty[0]}); use a parametric workflow, another source"
            + (", or join abstracts=PATH (PubMed XML, JSONL or CSV keyed by PMID)" if source == "medmeta" else "")
            + ", or keep the items that have them with items=[...]",
        )
    return check_coverage(samples, min_coverage) if abstracts is not None else samples


def _grading(
    workflow: WorkflowName, prompts: PromptSet, panel: list[str] | None, text_metrics: bool
) -> tuple[list[Scorer], list[str]]:
    """The scorers of a ``workflow`` run, and the roles beyond ``model`` that they and the workflow ask."""
    roles: list[str] = []
    scorers: list[Scorer] = []
    if workflow == "feasibility":
        scorers.append(FeasibilityScore())
    else:
        roles.append("judge")
        scorers.append(RubricJudge("judge", prompts=prompts))
        if panel:
            strangers = [j for j in panel if not _JUDGE_ROLE.match(j)]
            if strangers:
                raise ConfigError(
                    "panel", f"panel judges are roles judge, judge2 …, each given a model with --role; not {strangers}"
                )
            scorers.append(RubricPanel(panel, prompts=prompts))
            roles += [j for j in panel if j not in roles]
        if text_metrics:
            scorers += _text_scorers()
        if workflow == "standard-rag":
            scorers.append(RetrievalRecall())
    if workflow == "parametric-cot":
        roles.append("evaluator")
    if workflow == "negated-rag":
        roles += ["negator", "negation_checker"]
    return scorers, roles


def _index_rag(
    retrieval: str,
    reranker: str | None,
    *,
    k: int,
    depth: int,
    n_questions: int,
    overflow: OverflowPolicy,
    prompts: PromptSet,
) -> IndexRAG:
    """S-RAG over the index at ``retrieval``, reranked by the cross-encoder folder ``reranker`` when given."""
    from ..rag import CrossEncoderReranker, load_index

    cross = CrossEncoderReranker(reranker, top_n=max(depth, k)) if reranker else None
    return IndexRAG(
        load_index(retrieval),
        index=retrieval,
        reranker=cross,
        k=k,
        depth=depth,
        n_questions=n_questions,
        overflow=overflow,
        prompts=prompts,
    )


DEFAULT_NEGATOR = "local"
"""The negator when ``--role negator`` names none: one fixed model (the bundled local model), so every model
under evaluation is compared on the same negated evidence; each run's summary says so."""


def _text_scorers() -> list[Scorer]:
    from ..scorers.text import bertscore_scorer, rouge_l

    return [rouge_l(), bertscore_scorer()]
