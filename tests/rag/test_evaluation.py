from __future__ import annotations

from pathlib import Path

import pytest

from ebmeval.rag.evaluation import (
    Query,
    RetrievalBenchmark,
    bioasq_benchmark,
    evaluate_retrieval,
    load_benchmark,
    m3_benchmark,
    pubmedqa_benchmark,
    retrieval_table,
)
from ebmeval.rag.retrievers import BM25Retriever
from ebmeval.tasks import Document

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
needs_data = pytest.mark.skipif(not DATA.exists(), reason="needs the project's shared data folder")


def tiny_benchmark(corpus: list[Document]) -> RetrievalBenchmark:
    return RetrievalBenchmark(
        name="tiny",
        documents=corpus,
        queries=[
            Query(id="q1", text="statins cholesterol", relevant=frozenset({"d1"})),
            Query(id="q2", text="aspirin prevention bleeding", relevant=frozenset({"d2", "d5"})),
        ],
    )


def test_evaluate_retrieval(corpus: list[Document]) -> None:
    bench = tiny_benchmark(corpus)
    report = evaluate_retrieval(BM25Retriever.build(corpus), bench, ks=(1, 2), name="bm25", batch_size=1)
    assert (report.benchmark, report.retriever, report.n_queries, report.n_documents, report.depth) == (
        "tiny",
        "bm25",
        2,
        5,
        2,
    )
    assert [q.retrieved for q in report.queries] == [["d1"], ["d2"]]
    assert [q.relevant_ranks for q in report.queries] == [[1], [1]]
    assert report.metrics["recall@1"] == pytest.approx((1 + 0.5) / 2)
    assert report.metrics["precision@2"] == pytest.approx((0.5 + 0.5) / 2)
    assert report.metrics["mrr"] == 1.0
    table = retrieval_table([report], ("recall@1", "mrr")).markdown(title=False)
    assert table.splitlines()[0] == "| benchmark | retriever | queries | documents | recall@1 | mrr |"
    assert table.splitlines()[2] == "| tiny | bm25 | 2 | 5 | 0.750 | 1.000 |"


def test_subset_keeps_the_gold_of_sampled_queries(corpus: list[Document]) -> None:
    small = tiny_benchmark(corpus).subset(1, 1, seed=3)
    [query] = small.queries
    assert query.relevant <= {d.id for d in small.documents}
    assert len(small.documents) == len(query.relevant) + 1
    assert small.metadata["subset_of"] == {"n_queries": 2, "n_documents": 5}
    assert tiny_benchmark(corpus).subset(1, 1, seed=3) == small


@needs_data
def test_pubmedqa_benchmark_from_real_data() -> None:
    pool = [Document(id=f"n{i}", text=f"noise {i}") for i in range(50)]
    bench = pubmedqa_benchmark(DATA / "pubmedqa" / "ori_pqal.json", noise=pool, n_noise=20, seed=1, n_queries=10)
    assert len(bench.queries) == 10 and len(bench.documents) == 1020
    ids = {d.id for d in bench.documents}
    assert all(len(q.relevant) == 1 and q.id in q.relevant and q.id in ids for q in bench.queries)
    first = next(d for d in bench.documents if d.id == "21645374")
    assert first.text.startswith("BACKGROUND: Programmed cell death (PCD) is the regulated death")
    assert "lace plant" not in (first.title or "")
    assert bench.metadata["n_noise"] == 20 and bench.metadata["n_queries_available"] == 1000


@needs_data
def test_m3_and_bioasq_benchmarks_from_real_data() -> None:
    m3 = m3_benchmark(DATA / "m3" / "level2.jsonl")
    assert (len(m3.queries), len(m3.documents)) == (315, 1245)
    ids = {d.id for d in m3.documents}
    assert all(q.relevant <= ids for q in m3.queries)
    bioasq = bioasq_benchmark(DATA / "mirage" / "rawdata" / "bioasq")
    assert len(bioasq.queries) == 2310
    snippet_ids = {d.id for d in bioasq.documents}
    assert len(snippet_ids) == len(bioasq.documents)
    assert all(q.relevant <= snippet_ids for q in bioasq.queries)


@needs_data
def test_load_benchmark_draws_noise_from_abstracts() -> None:
    bench = load_benchmark("m3", DATA, n_noise=30, seed=0)
    corpora = {d.metadata.get("corpus") for d in bench.documents}
    assert (
        "m3" in corpora
        and {"pubmed", "evidence-inference"} & corpora
        and corpora <= {"m3", "pubmed", "evidence-inference"}
    )
    assert len(bench.documents) == 1245 + 30
