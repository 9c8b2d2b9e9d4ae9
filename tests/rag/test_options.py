"""Retriever options: one dataclass per retriever, read by field type, checked, recorded and read back."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

import pytest

from ebmeval._util.errors import ConfigError
from ebmeval._util.options import OptionText
from ebmeval.rag import build_index, load_index
from ebmeval.rag.retrievers import (
    BM25Options,
    BM25Retriever,
    DenseOptions,
    DenseRetriever,
    HybridOptions,
    HybridRetriever,
    IndexedRetriever,
    RetrieverOptions,
    get_retriever,
    retriever,
)
from ebmeval.tasks import Document, RetrievedDocument

if TYPE_CHECKING:
    from decimal import Decimal  # only for type checking: the annotation below cannot be resolved at run time


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


def _shards(texts: object, shards: object, size: int) -> None:
    raise AssertionError("an in-memory build never encodes shards")


@pytest.mark.parametrize(
    ("build", "option"),
    [
        (lambda docs: get_retriever("bm25", docs, memory_mb=64), "memory_mb"),
        (lambda docs: BM25Retriever.build(docs, BM25Options(memory_mb=64)), "memory_mb"),
        (lambda docs: get_retriever("dense/minilm", docs, shard_size=2), "shard_size"),
        (lambda docs: DenseRetriever.build(docs, DenseOptions(recall_queries=5)), "recall_queries"),
        (lambda docs: DenseRetriever.build(docs, DenseOptions(keep_shards=True)), "keep_shards"),
        (lambda docs: DenseRetriever.build(docs, DenseOptions(encode=_shards)), "encode"),
        (lambda docs: get_retriever("hybrid", docs, components=[["bm25", {"memory_mb": 64}]]), "memory_mb"),
        (
            lambda docs: HybridRetriever.build(docs, HybridOptions(components=[("bm25", {"memory_mb": 64})])),
            "memory_mb",
        ),
    ],
    ids=[
        "get_retriever-bm25",
        "bm25",
        "get_retriever-dense",
        "dense-recall",
        "dense-keep",
        "dense-encode",
        "get_retriever-hybrid",
        "hybrid",
    ],  # fmt: skip
)
def test_a_build_in_memory_refuses_what_only_disk_builds_apply(corpus: list[Document], build: Any, option: str) -> None:
    with pytest.raises(ConfigError, match=rf"retriever\.{option}': applies to disk builds \(build_index / ebmeval"):
        build(corpus)


def test_disk_builds_take_disk_only_settings_and_defaults_build_in_memory(
    corpus: list[Document], tmp_path: Path
) -> None:
    assert BM25Retriever.build(corpus, BM25Options(memory_mb=BM25Options().memory_mb)).documents == corpus
    manifest = build_index(corpus, tmp_path / "ix", "hybrid", components=[["bm25", {"memory_mb": 64}]])
    assert manifest.params["components"][0][1] == BM25Retriever.build(corpus).params()  # memory_mb is not recorded
    assert [d.document.id for d in load_index(tmp_path / "ix").retrieve(["metformin"], 1)[0]] == ["d3"]


def test_a_retriever_written_for_the_older_api_is_told_what_changed() -> None:
    class OldStyle(IndexedRetriever):  # type: ignore[type-arg]
        @classmethod
        def build(cls, documents: object, *, lowercase: bool = True) -> Self:  # type: ignore[override]
            raise NotImplementedError

        def save(self, folder: Path) -> None:
            raise NotImplementedError

        @classmethod
        def load(cls, folder: Path, documents: object, params: object, *, encoder: object = None) -> Self:
            raise NotImplementedError

        def retrieve(self, queries: list[str], k: int) -> list[list[RetrievedDocument]]:
            raise NotImplementedError

    with pytest.raises(TypeError) as refused:
        retriever("test/old-style")(OldStyle)  # type: ignore[type-abstract]
    message = str(refused.value)
    assert (
        "does not implement open, options_type (subclass IndexedRetriever[YourOptions]), build(documents, options"
        in message
    )
    assert "IndexedRetriever[Options] subclass" in message and "open(saved)" in message
    assert message.endswith("See docs/extending.md.")


SNIPPET = """
from dataclasses import dataclass

from ebmeval.rag.retrievers import RetrieverOptions, setting


@dataclass(frozen=True)
class Options(RetrieverOptions):
    size: int = setting("x")
    fine: int = setting(3, recorded=False, disk_only=True)
"""


@pytest.mark.slow
def test_mypy_checks_a_setting_default_against_the_field_type(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mypy import api

    (tmp_path / "snippet.py").write_text(SNIPPET, encoding="utf-8")
    monkeypatch.chdir(Path(__file__).parent.parent.parent)  # the configuration's mypy_path is relative to it
    report, _, status = api.run(["--config-file", "pyproject.toml", str(tmp_path / "snippet.py")])
    errors = [line.split(": error: ")[1] for line in report.splitlines() if ": error: " in line]
    assert status == 1 and errors == [
        'Incompatible types in assignment (expression has type "str", variable has type "int")  [assignment]'
    ], report


def test_options_whose_annotations_cannot_be_resolved_are_refused_in_one_line() -> None:
    @dataclass(frozen=True)
    class Priced(RetrieverOptions):
        price: Decimal | None = None

    assert Priced.read("test/priced", {}) == Priced()
    with pytest.raises(ConfigError, match=r"retriever 'test/priced': the field types of .*Priced cannot be resolved"):
        Priced.read("test/priced", {"price": OptionText("1.5")})


def test_params_are_copies_that_leave_the_retriever_unchanged(corpus: list[Document]) -> None:
    hybrid = HybridRetriever.build(corpus, HybridOptions(components=[("bm25", {})], weights=[1.0]))
    params = hybrid.params()
    params["components"][0][1]["k1"] = 9.0
    params["weights"].append(2.0)
    assert (
        hybrid.params()
        == HybridRetriever.build(corpus, HybridOptions(components=[("bm25", {})], weights=[1.0])).params()
    )
    assert hybrid.options.components[0][1]["k1"] == 1.5 and hybrid.options.weights == [1.0]
    bm25 = BM25Retriever.build(corpus, BM25Options(stopwords=["the"]))
    bm25.params()["stopwords"].append("and")
    assert bm25.options.stopwords == ["the"]


@pytest.mark.parametrize("text", ["off", "false", "None", "null", ""])
def test_stemming_and_stop_words_are_switched_off_from_the_command_line(text: str) -> None:
    read = BM25Options.read("bm25", {"stemmer": OptionText(text), "stopwords": OptionText(text)})
    assert read.stemmer is None and read.stopwords is None
