"""Retriever options: one dataclass per retriever, read by field type, checked, recorded and read back."""

from __future__ import annotations

from pathlib import Path
from typing import Self

import pytest

from ebmeval._util.errors import ConfigError
from ebmeval._util.options import OptionText
from ebmeval.rag.retrievers import (
    BM25Options,
    BM25Retriever,
    DenseOptions,
    DenseRetriever,
    HybridOptions,
    HybridRetriever,
    IndexedRetriever,
    RetrieverOptions,
    retriever,
)
from ebmeval.tasks import Document, RetrievedDocument


def test_command_line_text_is_read_by_the_field_types() -> None:
    bm25 = BM25Options.read("bm25", {"k1": OptionText("1.2"), "stemmer": OptionText("none")})
    assert bm25 == BM25Options(k1=1.2, stemmer=None) and isinstance(bm25.k1, float)
    dense = DenseOptions.read("dense", {"index": OptionText("hnsw"), "keep_shards": OptionText("true")})
    assert dense.index == "hnsw" and dense.keep_shards is True and dense.nlist is None
    hybrid = HybridOptions.read("hybrid", {"components": OptionText('[["bm25", {"k1": 1.0}]]')})
    assert hybrid.components == (("bm25", {"k1": 1.0}),)


def test_an_unknown_option_or_a_wrong_type_names_the_option() -> None:
    with pytest.raises(ConfigError, match=r"retriever\.kl.*retriever 'bm25' takes no such option \(options: k1, b,"):
        BM25Options.read("bm25", {"kl": 1.0})
    with pytest.raises(ConfigError, match=r"retriever\.k1.*expected float"):
        BM25Options.read("bm25", {"k1": OptionText("high")})


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: DenseOptions(index="ivf"), "unknown index type 'ivf'"),  # type: ignore[arg-type]
        (lambda: DenseOptions(rerank=-1), "must be 0"),
        (lambda: BM25Options(method="okapi"), "unknown BM25 variant"),  # type: ignore[arg-type]
        (lambda: HybridOptions(components=[]), "at least one component"),
        (lambda: HybridOptions(weights=[1.0]), "1 weights for 2 components"),
    ],
)
def test_bad_settings_are_refused_when_the_options_are_made(make: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        make()  # type: ignore[operator]


@pytest.mark.parametrize(
    "options",
    [
        BM25Options(k1=1.2, stopwords=["the"], tokenizer="zh", memory_mb=64),
        DenseOptions(model="m", index="ivfpq", nlist=4, pooling="cls", query_model="q", device="cuda"),
        HybridOptions(components=(("bm25", {"k1": 1.0}),), fusion="weighted", weights=[2.0]),
    ],
)
def test_recorded_params_read_back_as_the_options(options: RetrieverOptions) -> None:
    unrecorded = {"memory_mb": 64, "device": "cuda"}
    assert not unrecorded.keys() & options.params().keys()
    back = type(options).from_params(options.params())
    assert back.params() == options.params() and back == type(options).from_params(back.params())


def test_defaults_record_the_parameters_earlier_indexes_recorded(tiny_encoder: Path, corpus: list[Document]) -> None:
    assert list(BM25Retriever.build(corpus).params()) == ["k1", "b", "method", "stemmer", "stopwords"]
    dense = DenseRetriever.build(corpus, DenseOptions(model=str(tiny_encoder), pooling="mean", query_model=None))
    assert list(dense.params()) == [
        "model", "index", "hnsw_m", "ef_construction", "ef_search", "nlist", "pq_m", "pq_bits", "nprobe", "rerank",
        "train_size", "query_prefix", "document_prefix", "encoder", "pooling",
    ]  # fmt: skip
    assert dense.params()["rerank"] == 0 and dense.options.rerank == 0  # re-ranking applies to IVF-PQ only
    hybrid = HybridRetriever.build(corpus, HybridOptions(components=[("bm25", {})]))
    assert hybrid.params() == {
        "components": [["bm25", BM25Retriever.build(corpus).params()]],
        "fusion": "rrf", "rrf_k": 60, "weights": None, "normalization": "minmax", "depth": 100,
    }  # fmt: skip


def test_a_retriever_left_abstract_or_without_options_is_refused_when_registered() -> None:
    class Unfinished(IndexedRetriever):  # type: ignore[type-arg]
        @classmethod
        def build(cls, documents: object, options: object = None, *, progress: object = None) -> Self:
            raise NotImplementedError

        def save(self, folder: Path) -> None:
            raise NotImplementedError

        def retrieve(self, queries: list[str], k: int) -> list[list[RetrievedDocument]]:
            raise NotImplementedError

    message = r"retriever 'test/unfinished' \(.*Unfinished\) does not implement open, options_type \(subclass Indexed"
    with pytest.raises(TypeError, match=message):
        retriever("test/unfinished")(Unfinished)  # type: ignore[type-abstract]
