"""Retrieval benchmarks built from real data, and evaluating a retriever on them."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import chain
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from ..._util.errors import DataError
from ..._util.registry import Registry
from ...tables import Column, Table
from ...tasks import Document, read_jsonl
from ..corpus import (
    bioasq_files,
    bioasq_snippet_id,
    bioasq_snippets,
    builtin_corpus,
    noise_corpus,
    pubmedqa_contexts,
)
from ..retrievers import Retriever
from ._metrics import query_metrics


class Query(BaseModel):
    """A benchmark query with the ids of its relevant documents."""

    id: str
    text: str
    relevant: frozenset[str]


class RetrievalBenchmark(BaseModel):
    """A corpus, queries, and which documents answer each query."""

    name: str
    documents: list[Document]
    queries: list[Query]
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Sizes, seed, number of distractors, source files."""

    def subset(self, n_queries: int, n_distractors: int, *, seed: int = 0) -> RetrievalBenchmark:
        """A smaller benchmark, for when indexing the whole corpus is too slow (dense encoding on a CPU).

        It keeps ``n_queries`` queries drawn with ``seed``, every document relevant to any of
        them, and ``n_distractors`` of the other documents drawn with the same seed.
        """
        rng = random.Random(seed)
        queries = sorted(rng.sample(self.queries, min(n_queries, len(self.queries))), key=lambda q: q.id)
        needed = set().union(*(q.relevant for q in queries))
        gold = [d for d in self.documents if d.id in needed]
        others = [d for d in self.documents if d.id not in needed]
        documents = gold + rng.sample(others, min(n_distractors, len(others)))
        rng.shuffle(documents)
        metadata = {
            **self.metadata,
            "subset_of": {"n_queries": len(self.queries), "n_documents": len(self.documents)},
            "n_queries": len(queries),
            "n_documents": len(documents),
            "subset_seed": seed,
        }
        return RetrievalBenchmark(name=self.name, documents=documents, queries=queries, metadata=metadata)


def _finish(
    name: str,
    gold: list[Document],
    queries: list[Query],
    *,
    noise: Iterable[Document],
    n_noise: int,
    seed: int,
    n_queries: int | None,
    source: Path,
) -> RetrievalBenchmark:
    documents = noise_corpus(gold, noise, n_noise, seed=seed).documents if n_noise else gold
    total = len(queries)
    if n_queries is not None and n_queries < total:
        queries = sorted(random.Random(seed).sample(queries, n_queries), key=lambda q: q.id)
    return RetrievalBenchmark(
        name=name,
        documents=documents,
        queries=queries,
        metadata={
            "source": str(source),
            "n_documents": len(documents),
            "n_gold_corpus": len(gold),
            "n_noise": n_noise,
            "n_queries": len(queries),
            "n_queries_available": total,
            "seed": seed,
        },
    )


def pubmedqa_benchmark(
    path: str | Path,
    *,
    noise: Iterable[Document] = (),
    n_noise: int = 0,
    seed: int = 0,
    n_queries: int | None = None,
) -> RetrievalBenchmark:
    """PubMedQA questions → their own abstract, among all the file's abstracts plus ``n_noise`` distractors.

    ``path`` is ``ori_pqal.json`` (1,000 expert-labelled items) or a file of the same
    schema; distractors are drawn from ``noise`` with ``seed``; ``n_queries`` samples
    that many questions (the corpus keeps every abstract).
    """
    source = Path(path)
    gold = list(pubmedqa_contexts(source))
    records = json.loads(source.read_text(encoding="utf-8"))
    queries = [Query(id=str(pmid), text=r["QUESTION"], relevant=frozenset({str(pmid)})) for pmid, r in records.items()]
    return _finish(
        "pubmedqa", gold, queries, noise=noise, n_noise=n_noise, seed=seed, n_queries=n_queries, source=source
    )


def bioasq_benchmark(
    folder: str | Path,
    *,
    noise: Iterable[Document] = (),
    n_noise: int = 0,
    seed: int = 0,
    n_queries: int | None = None,
) -> RetrievalBenchmark:
    """BioASQ Task B questions → their gold snippets, among the gold snippets of every question.

    ``folder`` holds ``*_golden.json`` files; a question repeated across files counts once
    (first file wins). Documents are the distinct snippets (:func:`bioasq_snippets`).
    """
    gold = list(bioasq_snippets(folder))
    queries: dict[str, Query] = {}
    for file in bioasq_files(folder):
        for question in json.loads(file.read_text(encoding="utf-8"))["questions"]:
            relevant = frozenset(bioasq_snippet_id(s) for s in question.get("snippets") or [] if s["text"].strip())
            if relevant and question["id"] not in queries:
                queries[question["id"]] = Query(id=question["id"], text=question["body"], relevant=relevant)
    return _finish(
        "bioasq",
        gold,
        list(queries.values()),
        noise=noise,
        n_noise=n_noise,
        seed=seed,
        n_queries=n_queries,
        source=Path(folder),
    )


def m3_benchmark(
    path: str | Path,
    *,
    noise: Iterable[Document] = (),
    n_noise: int = 0,
    seed: int = 0,
    n_queries: int | None = None,
) -> RetrievalBenchmark:
    """M3 review conclusions → their included studies (``level2.jsonl``).

    Each query is a review-conclusion sentence (``target_text``); each document is one
    included study (id = its PMID) whose text is its evidence sentences across the file;
    the relevant documents are the studies the conclusion was drawn from.
    """
    source = Path(path)
    sentences: dict[str, list[str]] = {}
    queries: list[Query] = []
    for line_no, record in read_jsonl(source):
        try:
            studies = record["input_studies"]
            for study in studies:
                texts = sentences.setdefault(str(study["source_pmid"]), [])
                if study["source_text"] not in texts:
                    texts.append(study["source_text"])
            relevant = frozenset(str(s["source_pmid"]) for s in studies)
            queries.append(Query(id=record["docid"], text=record["target_text"], relevant=relevant))
        except (KeyError, TypeError) as exc:
            raise DataError(
                source, f"an M3 record needs docid, target_text and input_studies ({exc!r})", line=line_no
            ) from None
    gold = [
        Document(id=pmid, text=" ".join(texts), metadata={"pmid": pmid, "corpus": "m3"})
        for pmid, texts in sentences.items()
    ]
    return _finish("m3", gold, queries, noise=noise, n_noise=n_noise, seed=seed, n_queries=n_queries, source=source)


BenchmarkBuilder = Callable[..., RetrievalBenchmark]

retrieval_benchmarks: Registry[tuple[str, BenchmarkBuilder]] = Registry("retrieval benchmark")
"""Built-in retrieval benchmarks: (path relative to the data root, builder)."""

retrieval_benchmarks.register("pubmedqa")(("pubmedqa/ori_pqal.json", pubmedqa_benchmark))
retrieval_benchmarks.register("bioasq")(("mirage/rawdata/bioasq", bioasq_benchmark))
retrieval_benchmarks.register("m3")(("m3/level2.jsonl", m3_benchmark))

NOISE_CORPORA = ("pubmed-abstracts", "evidence-inference")
"""Built-in corpora the distractors of :func:`load_benchmark` are drawn from."""


def load_benchmark(
    name: str, data_root: str | Path, *, n_noise: int = 0, seed: int = 0, n_queries: int | None = None
) -> RetrievalBenchmark:
    """Build the built-in benchmark ``name`` (``pubmedqa``, ``bioasq``, ``m3``) from ``data_root``.

    Distractors come from the PubMed abstracts and Evidence Inference abstracts under
    the same root (see :data:`NOISE_CORPORA`).
    """
    relative, builder = retrieval_benchmarks.get(name)
    root = Path(data_root)

    def pool() -> Iterator[Document]:
        return chain.from_iterable(builtin_corpus(corpus, root) for corpus in NOISE_CORPORA)

    return builder(root / relative, noise=pool() if n_noise else (), n_noise=n_noise, seed=seed, n_queries=n_queries)


class QueryResult(BaseModel):
    """What a retriever returned for one benchmark query."""

    id: str
    retrieved: list[str]
    """Document ids, best first."""
    relevant_ranks: list[int]
    """1-based ranks of the relevant documents found."""
    metrics: dict[str, float]


class RetrievalReport(BaseModel):
    """Metrics of one retriever on one benchmark."""

    benchmark: str
    retriever: str
    n_queries: int
    n_documents: int
    depth: int
    """Documents retrieved per query; ``mrr`` counts ranks within this depth."""
    metrics: dict[str, float]
    """Means over the queries (``recall@k``, ``precision@k``, ``ndcg@k``, ``mrr``)."""
    seconds: float
    """Wall time of retrieval (not of index building)."""
    queries: list[QueryResult]


def qrels_benchmark(path: str | Path, name: str = "") -> RetrievalBenchmark:
    """The user's own queries and relevance judgments, for a user's own index.

    JSONL, one query a line: ``{"id", "query", "relevant": [document ids]}``, the ids those of the
    index's documents (chunk ids ``<id>#<n>`` for a chunked corpus). Every problem is a
    :class:`DataError` naming the file, line and field. The benchmark holds no documents: the
    retriever is the index.
    """
    queries: list[Query] = []
    seen: set[str] = set()
    for line, record in read_jsonl(path):
        for field in ("id", "query", "relevant"):
            if field not in record:
                raise DataError(path, "missing field", line=line, field=field)
        query_id, text, relevant = str(record["id"]), record["query"], record["relevant"]
        if query_id in seen:
            raise DataError(path, "duplicate id", line=line, field="id", value=query_id)
        if not isinstance(text, str) or not text.strip():
            raise DataError(path, "expected a non-empty string", line=line, field="query", value=text)
        if not isinstance(relevant, list) or not relevant:
            raise DataError(
                path, "expected a non-empty list of document ids", line=line, field="relevant", value=relevant
            )
        seen.add(query_id)
        queries.append(Query(id=query_id, text=text, relevant=frozenset(str(r) for r in relevant)))
    if not queries:
        raise DataError(path, "no queries in the file")
    return RetrievalBenchmark(
        name=name or Path(path).stem, documents=[], queries=queries, metadata={"qrels": str(path)}
    )


def evaluate_retrieval(
    retriever: Retriever,
    benchmark: RetrievalBenchmark,
    *,
    ks: Sequence[int] = (1, 5, 10, 20),
    name: str = "",
    batch_size: int = 256,
) -> RetrievalReport:
    """Run ``benchmark``'s queries through ``retriever`` and score them against the gold ids.

    ``retriever`` must index ``benchmark.documents``. Queries go in batches of
    ``batch_size``; each retrieves ``max(ks)`` documents.
    """
    depth = max(ks)
    texts = [q.text for q in benchmark.queries]
    started = time.perf_counter()
    ranked: list[list[str]] = []
    for start in range(0, len(texts), batch_size):
        found = retriever.retrieve(texts[start : start + batch_size], depth)
        ranked.extend([item.document.id for item in hits] for hits in found)
    seconds = time.perf_counter() - started
    results: list[QueryResult] = []
    totals: dict[str, float] = {}
    for query, ids in zip(benchmark.queries, ranked, strict=True):
        values = query_metrics(ids, query.relevant, ks)
        for key, value in values.items():
            totals[key] = totals.get(key, 0.0) + value
        ranks = [rank for rank, doc_id in enumerate(ids, start=1) if doc_id in query.relevant]
        results.append(QueryResult(id=query.id, retrieved=ids, relevant_ranks=ranks, metrics=values))
    n = max(len(results), 1)
    return RetrievalReport(
        benchmark=benchmark.name,
        retriever=name or type(retriever).__name__,
        n_queries=len(results),
        n_documents=len(benchmark.documents),
        depth=depth,
        metrics={key: total / n for key, total in totals.items()},
        seconds=round(seconds, 3),
        queries=results,
    )


def retrieval_table(
    reports: Sequence[RetrievalReport], metrics: Sequence[str] = ("recall@1", "recall@10", "ndcg@10", "mrr")
) -> Table:
    """One row per report: benchmark, retriever, numbers of queries and documents, and ``metrics``."""
    table = Table(
        "Retrieval",
        [
            "benchmark",
            "retriever",
            Column("queries", "number"),
            Column("documents", "number"),
            *[Column(m, "number") for m in metrics],
        ],
    )
    for report in reports:
        table.add(
            report.benchmark,
            report.retriever,
            report.n_queries,
            report.n_documents,
            *[report.metrics[m] for m in metrics],
        )
    return table
