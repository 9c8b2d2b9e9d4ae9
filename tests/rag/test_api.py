from __future__ import annotations

import subprocess
import sys

import pytest

import ebmeval.rag as rag
from ebmeval._util.errors import ConfigError, UnknownNameError
from ebmeval.rag import Reranker, Retriever, get_retriever, rerankers, retrievers
from ebmeval.rag.rerank import LLMPointwiseReranker
from ebmeval.rag.retrievers import BM25Retriever, DenseRetriever, HybridRetriever
from ebmeval.tasks import Document, RetrievedDocument


def test_public_names() -> None:
    assert rag.__all__ == sorted(rag.__all__, key=lambda name: (name[0].islower(), name))
    assert {"ingest", "build_index", "load_index", "search", "evaluate_retrieval", "Retriever"} <= set(rag.__all__)
    assert rag.Document is Document and rag.RetrievedDocument is RetrievedDocument
    assert all(hasattr(rag, name) for name in rag.__all__)


def test_registered_ids() -> None:
    builtin = ["bm25", "dense", "dense/minilm", "hybrid"]  # plus any an installed package adds (tests/plugin_package)
    assert [name for name in retrievers if retrievers.get(name).__module__.startswith("ebmeval.")] == builtin
    assert retrievers.get("bm25") is BM25Retriever
    assert retrievers.get("dense/minilm") is DenseRetriever and retrievers.get("hybrid") is HybridRetriever
    assert list(rerankers) == ["rerank/cross-encoder", "rerank/llm-pointwise"]


def test_lookup_errors(corpus: list[Document]) -> None:
    with pytest.raises(UnknownNameError, match="Did you mean 'dense/minilm'"):
        get_retriever("dense/minilml", corpus)
    with pytest.raises(ConfigError, match=r"retriever\.kl"):
        get_retriever("bm25", corpus, kl=1.0)


def test_protocols(corpus: list[Document]) -> None:
    assert isinstance(BM25Retriever.build(corpus), Retriever)
    assert isinstance(LLMPointwiseReranker(model=None), Reranker)  # type: ignore[arg-type]
    assert not isinstance(object(), Retriever)


def test_import_loads_no_heavy_dependency() -> None:
    code = (
        "import sys, ebmeval.rag; "
        "print(sorted(m for m in ('torch', 'faiss', 'bm25s', 'sentence_transformers') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
