"""Dense retrieval with separate query and document encoders and declared pooling (MedCPT's layout)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ebmeval.rag import build_index, load_index
from ebmeval.rag.corpus import write_store
from ebmeval.rag.retrievers import DenseOptions, DenseRetriever, Encoder, IndexMismatchError
from ebmeval.tasks import Document

pytest.importorskip("faiss")


def _ranking(query_encoder: Encoder, document_encoder: Encoder, corpus: list[Document], query: str) -> list[str]:
    documents = document_encoder.encode([(f"{d.title}\n{d.text}" if d.title else d.text) for d in corpus])
    scores = documents @ query_encoder.encode([query])[0]
    return [corpus[i].id for i in np.argsort(-scores, kind="stable")]


def test_cls_pooling_differs_from_mean(plain_berts: tuple[Path, Path]) -> None:
    query, _article = plain_berts
    cls_vectors = Encoder(query, pooling="cls").encode(["metformin for diabetes"])
    mean_vectors = Encoder(query, pooling="mean").encode(["metformin for diabetes"])
    assert cls_vectors.shape == mean_vectors.shape and not np.allclose(cls_vectors, mean_vectors)


def test_dual_encoder_index_built_and_searched_with_two_encoders(
    plain_berts: tuple[Path, Path], corpus: list[Document], tmp_path: Path
) -> None:
    query, article = plain_berts
    write_store(corpus, tmp_path / "corpus").close()
    options = {"model": str(article), "query_model": str(query), "pooling": "cls"}
    manifest = build_index(tmp_path / "corpus", tmp_path / "ix", "dense", **options)
    assert [e.path for e in manifest.encoders] == [str(article.resolve()), str(query.resolve())]
    assert manifest.params["pooling"] == "cls" and manifest.params["query_model"] == str(query)
    loaded = load_index(tmp_path / "ix")
    assert isinstance(loaded, DenseRetriever) and loaded.query_encoder is not loaded.encoder
    question = "Which drug treats type 2 diabetes?"
    expected = _ranking(Encoder(query, pooling="cls"), Encoder(article, pooling="cls"), corpus, question)
    ((*hits,),) = loaded.retrieve([question], len(corpus))
    assert [h.document.id for h in hits] == expected
    single = _ranking(Encoder(article, pooling="cls"), Encoder(article, pooling="cls"), corpus, question)
    assert single != expected or len(set(single)) == 1  # the query side really is the other encoder


def test_changed_query_encoder_is_refused(
    plain_berts: tuple[Path, Path], corpus: list[Document], tmp_path: Path
) -> None:
    query, article = plain_berts
    write_store(corpus, tmp_path / "corpus").close()
    build_index(
        tmp_path / "corpus", tmp_path / "ix", "dense", model=str(article), query_model=str(query), pooling="cls"
    )
    config = json.loads((query / "config.json").read_text())
    (query / "extra.txt").write_text("changed")
    try:
        with pytest.raises(IndexMismatchError, match="fingerprint"):
            load_index(tmp_path / "ix")
    finally:
        (query / "extra.txt").unlink()
    assert json.loads((query / "config.json").read_text()) == config


def test_single_encoder_index_keeps_its_parameters(tiny_encoder: Path, corpus: list[Document]) -> None:
    params = DenseRetriever.build(corpus, DenseOptions(model=str(tiny_encoder))).params()
    assert "pooling" not in params and "query_model" not in params and "query_encoder" not in params


def test_ivfpq_on_a_small_corpus_is_a_usage_error(tiny_encoder: Path, corpus: list[Document], tmp_path: Path) -> None:
    from tests.helpers.cli import ebmeval

    write_store(corpus, tmp_path / "corpus").close()
    options = ["--option", f"model={tiny_encoder}", "--option", "index=ivfpq"]
    done = ebmeval("index", "build", "corpus", "--out", "ix", "--retriever", "dense", *options, cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "at least 256 training vectors" in done.stderr and "5 documents" in done.stderr


def test_retrieval_eval_over_your_own_index_and_qrels(corpus: list[Document], tmp_path: Path) -> None:
    from tests.helpers.cli import ebmeval

    write_store(corpus, tmp_path / "corpus").close()
    build_index(tmp_path / "corpus", tmp_path / "ix", "bm25")
    lines = [
        {"id": "q1", "query": "metformin type 2 diabetes", "relevant": ["d3"]},
        {"id": "q2", "query": "influenza vaccination older adults", "relevant": ["d5", "d4"]},
    ]
    (tmp_path / "qrels.jsonl").write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    done = ebmeval("retrieval-eval", "--index", "ix", "--qrels", "qrels.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    row = next(line for line in done.stdout.splitlines() if line.startswith("| qrels"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "ix" and cells[2] == "2"  # benchmark, retriever, queries
    (tmp_path / "bad.jsonl").write_text(json.dumps({"id": "q1", "query": "x", "relevant": []}) + "\n")
    bad = ebmeval("retrieval-eval", "--index", "ix", "--qrels", "bad.jsonl", cwd=tmp_path)
    assert bad.returncode == 2 and "bad.jsonl:1: field 'relevant'" in bad.stderr


def test_cross_encoder_rerank_as_a_task_option_and_in_search(
    tiny_cross_encoder: Path, corpus: list[Document], tmp_path: Path
) -> None:
    from tests.helpers.cli import ebmeval

    from ebmeval.rag import CrossEncoderReranker
    from ebmeval.tasks import create_task
    from ebmeval.workflows import RetrievalAugmented

    write_store(corpus, tmp_path / "corpus").close()
    build_index(tmp_path / "corpus", tmp_path / "ix", "bm25", stopwords=None)
    plain = create_task("lfqa/liveqa", retrieval=str(tmp_path / "ix"), k=2)
    task = create_task("lfqa/liveqa", retrieval=str(tmp_path / "ix"), k=2, rerank=str(tiny_cross_encoder))
    assert isinstance(task.workflow, RetrievalAugmented) and isinstance(task.workflow.reranker, CrossEncoderReranker)
    assert task.version.startswith(plain.version + ".rerank-") and task.workflow.depth == 50
    query = "the treatment of diabetes and of myocardial infarction"
    options = ["--index", "ix", "--k", "2", "--rerank", str(tiny_cross_encoder), "--json"]
    done = ebmeval("search", query, *options, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    hits = json.loads(done.stdout)
    scorer = CrossEncoderReranker(tiny_cross_encoder)
    texts = {d.id: (f"{d.title}\n{d.text}" if d.title else d.text) for d in corpus}
    scores = [float(s) for s in scorer.scores(query, [texts[h["document"]["id"]] for h in hits])]
    assert len(hits) == 2 and scores == sorted(scores, reverse=True)


async def test_llm_rerank_goes_through_the_samples_context(corpus: list[Document], tmp_path: Path) -> None:
    from ebmeval.models import Model
    from ebmeval.models.providers.scripted import ScriptedModel
    from ebmeval.tasks import Sample, SampleContext, create_task

    write_store(corpus, tmp_path / "corpus").close()
    build_index(tmp_path / "corpus", tmp_path / "ix", "bm25")

    def reply(messages, config):  # type: ignore[no-untyped-def]
        content = messages[-1].content
        if content.startswith("You judge whether a document is relevant"):
            return "yes" if "Aspirin" in content else "no"
        return "an answer"

    task = create_task("lfqa/liveqa", retrieval=str(tmp_path / "ix"), k=1, rerank="llm", rerank_depth=5)
    assert "reranker" in task.roles
    sample = Sample(id="s", input="statins aspirin prevention cholesterol")
    model = Model(ScriptedModel(reply))
    ctx = SampleContext({"model": model, "reranker": model})
    result = await task.workflow(sample, ctx)
    assert [h.document.id for h in result.retrieved] == ["d2"]
    assert any(step.startswith("rerank/llm-pointwise/") for step in ctx.steps)
