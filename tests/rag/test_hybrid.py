from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ebmeval._util.errors import ConfigError
from ebmeval.rag import build_index, load_index, multi_query_retrieve, reciprocal_rank_fusion
from ebmeval.rag.fusion import fusion
from ebmeval.rag.retrievers import BM25Retriever, HybridOptions, HybridRetriever
from ebmeval.tasks import Document, RetrievedDocument


class Listed:
    """A retriever returning fixed ids per query, recording the batches it receives."""

    def __init__(self, answers: dict[str, list[str]]) -> None:
        self.answers = answers
        self.batches: list[list[str]] = []

    def retrieve(self, queries: list[str], k: int) -> list[list[RetrievedDocument]]:
        self.batches.append(list(queries))
        return [
            [
                RetrievedDocument(document=Document(id=i, text=i), score=1.0 / rank, rank=rank)
                for rank, i in enumerate(self.answers[q][:k], start=1)
            ]
            for q in queries
        ]


def test_multi_query_fuses_each_group_in_one_batch() -> None:
    retriever = Listed({"q1": ["a", "b", "c"], "q2": ["c", "d"], "q3": ["e"]})
    merged = multi_query_retrieve(retriever, [["q1", "q2"], ["q3"]], k=2, depth=3)
    assert retriever.batches == [["q1", "q2", "q3"]]
    expected = reciprocal_rank_fusion([retriever.retrieve(["q1"], 3)[0], retriever.retrieve(["q2"], 3)[0]], limit=2)
    assert [[h.document.id for h in hits] for hits in merged] == [[h.document.id for h in expected], ["e"]]
    assert [h.document.id for h in merged[0]] == ["c", "a"]
    weighted = multi_query_retrieve(retriever, [["q1", "q2"]], k=1, fuse=fusion("weighted"))
    assert len(weighted[0]) == 1


def test_hybrid_fuses_components(tiny_encoder: Path, corpus: list[Document]) -> None:
    components: list[tuple[str, dict[str, Any]]] = [("bm25", {}), ("dense", {"model": str(tiny_encoder)})]
    hybrid = HybridRetriever.build(corpus, HybridOptions(components=components, depth=5))
    query = "aspirin bleeding"
    lexical = hybrid.components[0][1].retrieve([query], 5)[0]
    dense = hybrid.components[1][1].retrieve([query], 5)[0]
    expected = reciprocal_rank_fusion([lexical, dense], k=60, limit=3)
    assert hybrid.retrieve([query], 3)[0] == expected
    assert [e.id for e in hybrid.encoders()] == [tiny_encoder.name]


def test_hybrid_index_roundtrip(tiny_encoder: Path, corpus: list[Document], tmp_path: Path) -> None:
    components: list[tuple[str, dict[str, Any]]] = [
        ("bm25", {"k1": 1.2}),
        ("dense", {"model": str(tiny_encoder), "index": "hnsw"}),
    ]
    manifest = build_index(
        corpus, tmp_path / "ix", "hybrid", components=components, fusion="weighted", weights=[0.3, 0.7]
    )
    assert {"0-bm25/data.csc.index.npy", "1-dense/embeddings.npy", "1-dense/hnsw.faiss.npy"} <= set(manifest.arrays)
    assert len(manifest.encoders) == 1
    loaded = load_index(tmp_path / "ix", corpus=corpus)
    assert isinstance(loaded, HybridRetriever)
    assert loaded.params()["components"][0] == ["bm25", manifest.params["components"][0][1]]
    built = HybridRetriever.build(corpus, HybridOptions(components=components, fusion="weighted", weights=[0.3, 0.7]))
    query = ["statin therapy"]
    assert [h.document.id for h in loaded.retrieve(query, 4)[0]] == [h.document.id for h in built.retrieve(query, 4)[0]]


def test_hybrid_bad_configuration(corpus: list[Document]) -> None:
    bm25 = BM25Retriever.build(corpus)
    with pytest.raises(ConfigError, match="2 weights for 1"):
        HybridRetriever([("bm25", bm25)], corpus, HybridOptions(weights=[1.0, 2.0]))
    with pytest.raises(ConfigError, match="another hybrid"):
        HybridRetriever.build(corpus, HybridOptions(components=[("hybrid", {})]))
    with pytest.raises(ConfigError, match="retriever 'bm25' takes no such option"):
        HybridRetriever.build(corpus, HybridOptions(components=[("bm25", {"model": "x"})]))


def test_hybrid_on_disk_refuses_a_hybrid_component(corpus: list[Document], tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="field 'components': a hybrid retriever cannot contain another hybrid"):
        HybridRetriever.build_on_disk(corpus, tmp_path, HybridOptions(components=[("hybrid", {})]))
