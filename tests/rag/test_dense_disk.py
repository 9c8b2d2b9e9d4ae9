"""Dense indexes built through disk: shards, resuming a killed build, IVF-PQ with measured recall, batched queries."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from ebmeval._util.errors import ConfigError
from ebmeval.rag import build_index, load_index
from ebmeval.rag.corpus import write_store
from ebmeval.rag.index import read_manifest
from ebmeval.rag.retrievers import DenseOptions, DenseRetriever
from ebmeval.rag.retrievers._dense_disk import recall_at_k, rerank_exact
from ebmeval.tasks import Document

pytest.importorskip("sentence_transformers")
pytest.importorskip("faiss")


def varied_corpus(n: int) -> list[Document]:
    rng = np.random.default_rng(0)
    words = "statin aspirin insulin fracture sepsis asthma stroke dementia vaccine cancer trial cohort".split()
    words += [f"term{i}" for i in range(400)]
    return [Document(id=f"d{i}", text=" ".join(rng.choice(words, size=int(rng.integers(3, 12))))) for i in range(n)]


def test_flat_built_through_shards_equals_the_in_memory_build(tiny_encoder: Path, tmp_path: Path) -> None:
    docs = varied_corpus(230)
    memory = DenseRetriever.build(docs, DenseOptions(model=str(tiny_encoder)))
    manifest = build_index(docs, tmp_path / "ix", "dense", model=str(tiny_encoder), shard_size=50)
    assert manifest.params["index"] == "flat" and manifest.report == {}
    assert not (tmp_path / "ix" / "shards").exists()  # shards are removed once the matrix is written
    loaded = load_index(tmp_path / "ix")
    assert isinstance(loaded, DenseRetriever) and isinstance(loaded.embeddings, np.memmap)
    assert memory.embeddings is not None
    np.testing.assert_allclose(np.asarray(loaded.embeddings), memory.embeddings, atol=1e-6)
    queries = ["statin trial", "sepsis in the elderly", "vaccine cohort"] * 3
    ids = [[h.document.id for h in q] for q in loaded.retrieve(queries, 5)]
    assert ids == [[h.document.id for h in q] for q in memory.retrieve(queries, 5)]
    # the batch path answers like one query at a time (the per-sample path of a task)
    assert ids == [[h.document.id for h in loaded.retrieve([q], 5)[0]] for q in queries]


def test_ivfpq_records_recall_against_exact_search(tiny_encoder: Path, tmp_path: Path) -> None:
    docs = varied_corpus(3000)
    manifest = build_index(
        docs, tmp_path / "ix", "dense", model=str(tiny_encoder), index="ivfpq", nlist=16, pq_m=32, pq_bits=8,
        nprobe=16, rerank=0, train_size=2000, shard_size=700, recall_queries=100,
    )  # fmt: skip
    assert manifest.params["nlist"] == 16 and manifest.params["pq_m"] == 32
    assert "embeddings.npy" not in manifest.arrays and "ivfpq.faiss.npy" in manifest.arrays
    recall = manifest.report["recall_at_10"]
    assert manifest.report["recall_queries"] == 100 and 0.5 < recall <= 1.0, recall
    assert manifest.report["rerank"] == 0 and manifest.report["recall_at_10_without_rerank"] == recall
    # an index written before re-ranking existed (no "rerank" parameter) loads as not re-ranked
    raw = json.loads((tmp_path / "ix" / "manifest.json").read_text())
    del raw["params"]["rerank"]
    (tmp_path / "ix" / "manifest.json").write_text(json.dumps(raw))
    loaded = load_index(tmp_path / "ix")
    assert isinstance(loaded, DenseRetriever) and loaded.options.rerank == 0 and loaded.embeddings is None
    assert isinstance(loaded, DenseRetriever) and loaded.graph.nprobe == 16
    # the recorded recall is what the loaded index achieves on those queries
    exact = DenseRetriever.build(docs, DenseOptions(model=str(tiny_encoder)))
    assert exact.embeddings is not None
    sample = np.sort(np.random.default_rng(1).choice(3000, 100, False))
    queries = exact.embeddings[sample]
    _, truth = exact.search(queries, 10)
    _, found = loaded.search(queries, 10)
    assert recall_at_k(found, truth) == pytest.approx(recall, abs=0.02)
    hits = loaded.retrieve(["statin trial"], 3)[0]
    assert [h.rank for h in hits] == [1, 2, 3]


def test_reranked_ivfpq_returns_the_exact_top_k(tiny_encoder: Path, tmp_path: Path) -> None:
    docs = varied_corpus(3000)
    manifest = build_index(
        docs, tmp_path / "ix", "dense", model=str(tiny_encoder), index="ivfpq", nlist=16, pq_m=32, pq_bits=8,
        nprobe=16, rerank=20, train_size=2000, shard_size=700, recall_queries=100,
    )  # fmt: skip
    assert "embeddings.npy" in manifest.arrays and not (tmp_path / "ix" / "shards").exists()
    report = manifest.report
    assert report["rerank"] == 20 and report["recall_queries"] == 100
    # PQ scores alone miss neighbours; re-scoring 200 candidates exactly finds all of them
    assert report["recall_at_10_without_rerank"] < 0.95 and report["recall_at_10"] == 1.0, report
    loaded = load_index(tmp_path / "ix")
    assert (
        isinstance(loaded, DenseRetriever) and loaded.options.rerank == 20 and isinstance(loaded.embeddings, np.memmap)
    )
    exact = DenseRetriever.build(docs, DenseOptions(model=str(tiny_encoder)))
    assert exact.embeddings is not None
    queries = exact.embeddings[np.random.default_rng(2).choice(3000, 50, False)]
    truth_scores, truth = exact.search(queries, 10)
    scores, found = loaded.search(queries, 10)
    np.testing.assert_allclose(scores, truth_scores, atol=1e-5)  # exact scores, not PQ estimates
    assert recall_at_k(found, truth) == 1.0
    texts = ["statin trial", "sepsis in the elderly", "vaccine cohort"]
    hits = [[(h.document.id, round(h.score, 4)) for h in q] for q in loaded.retrieve(texts, 5)]
    assert hits == [[(h.document.id, round(h.score, 4)) for h in q] for q in exact.retrieve(texts, 5)]


def test_rerank_exact_orders_the_candidates_by_exact_score() -> None:
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((300, 8)).astype(np.float32)
    queries = rng.standard_normal((4, 8)).astype(np.float32)
    candidates = np.stack([rng.permutation(300)[:40] for _ in range(4)])
    candidates[:, 5] = -1
    candidates[3, 2:] = -1  # a query with fewer valid candidates than k
    scores, ids = rerank_exact(vectors, queries, candidates, 5)
    for q in range(4):
        valid = candidates[q][candidates[q] >= 0]
        exact = vectors[valid] @ queries[q]
        order = np.argsort(-exact)[:5]
        assert ids[q][: len(order)].tolist() == valid[order].tolist()
        np.testing.assert_allclose(scores[q][: len(order)], exact[order], rtol=1e-6)
    assert ids[3].tolist()[2:] == [-1, -1, -1] and np.isneginf(scores[3][2:]).all()


def test_rerank_must_not_be_negative(tiny_encoder: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="rerank"):
        build_index(varied_corpus(20), tmp_path / "ix", "dense", model=str(tiny_encoder), index="ivfpq", rerank=-1)


def test_recall_at_k() -> None:
    found = np.array([[1, 2, 3], [4, 5, -1]])
    exact = np.array([[1, 2, 9], [5, 4, 7]])
    assert recall_at_k(found, exact) == pytest.approx((2 / 3 + 2 / 3) / 2)


def test_a_killed_build_continues_from_its_last_shard(tiny_encoder: Path, tmp_path: Path) -> None:
    docs = varied_corpus(400)
    write_store(docs, tmp_path / "corpus").close()
    script = textwrap.dedent(
        f"""
        import time
        from ebmeval.rag import build_index
        build_index({str(tmp_path / "corpus")!r}, {str(tmp_path / "ix")!r}, "dense", model={str(tiny_encoder)!r},
                    shard_size=40, progress=lambda done, total: time.sleep(0.4))
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen([sys.executable, "-c", script], env=env)
    shards = tmp_path / "ix" / "shards"
    deadline = time.monotonic() + 120
    while len(list(shards.glob("0*.npy"))) < 3 and time.monotonic() < deadline and child.poll() is None:
        time.sleep(0.05)
    child.send_signal(signal.SIGKILL)
    child.wait()
    finished = sorted(shards.glob("0*.npy"))
    assert 3 <= len(finished) < 10 and not (tmp_path / "ix" / "manifest.json").exists()
    before = {f.name: f.stat().st_mtime_ns for f in finished}
    encoded: list[int] = []
    build_index(
        tmp_path / "corpus", tmp_path / "ix", "dense", model=str(tiny_encoder), shard_size=40,
        keep_shards=True, progress=lambda done, total: encoded.append(done),
    )  # fmt: skip
    # the finished shards were kept, not encoded again; only the rest was
    assert {f.name: f.stat().st_mtime_ns for f in finished} == before
    # first the documents of the kept shards, then each shard encoded after them
    assert encoded[:2] == [len(finished) * 40, (len(finished) + 1) * 40] and encoded[-1] == 400
    resumed = load_index(tmp_path / "ix")
    build_index(tmp_path / "corpus", tmp_path / "whole", "dense", model=str(tiny_encoder), shard_size=40)
    whole = load_index(tmp_path / "whole")
    assert isinstance(resumed, DenseRetriever) and isinstance(whole, DenseRetriever)
    assert resumed.embeddings is not None and whole.embeddings is not None
    np.testing.assert_allclose(np.asarray(resumed.embeddings), np.asarray(whole.embeddings), atol=1e-6)


def test_unfinished_build_of_other_options_is_not_resumed(tiny_encoder: Path, tmp_path: Path) -> None:
    docs = varied_corpus(120)
    write_store(docs, tmp_path / "corpus").close()
    folder = tmp_path / "ix"
    (folder / "shards").mkdir(parents=True)
    np.save(folder / "shards" / "00000.npy", np.ones((40, 32), np.float32))
    (folder / "shards.json").write_text('{"encoder": "other", "document_prefix": "", "corpus": "x", "shard_size": 40}')
    build_index(tmp_path / "corpus", folder, "dense", model=str(tiny_encoder), shard_size=40)
    loaded = load_index(folder)
    assert isinstance(loaded, DenseRetriever) and loaded.embeddings is not None
    assert not np.allclose(np.asarray(loaded.embeddings[:40]), 1.0)
    assert read_manifest(folder).corpus.n_documents == 120
