"""The streaming BM25 build equals bm25s' in-memory build, term by term and query by query."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ebmeval.rag import build_index, load_index
from ebmeval.rag.retrievers import BM25Retriever
from ebmeval.rag.retrievers._bm25_disk import build_bm25_arrays
from ebmeval.tasks import Document

pytest.importorskip("bm25s")


def zipf_corpus(n: int, seed: int = 0) -> list[Document]:
    """``n`` documents of 1–120 words drawn from a Zipf-distributed vocabulary of 3,000 words (some empty)."""
    rng = np.random.default_rng(seed)
    words = [f"w{i}x{'abcdefghij'[i % 10]}" for i in range(3000)]
    docs = []
    for i in range(n):
        length = int(rng.integers(0, 120)) if i % 97 else 0
        ids = np.minimum(rng.zipf(1.3, size=length), len(words)) - 1
        text = " ".join(words[j] for j in ids) + (" the and of" if i % 5 == 0 else "")
        docs.append(Document(id=f"d{i}", title=f"t{i % 7}" if i % 3 else None, text=text))
    return docs


def columns(folder: Path) -> dict[str, tuple[list[int], list[float]]]:
    """Each vocabulary term's (documents, scores) from bm25s' saved CSC arrays."""
    vocab = json.loads((folder / "vocab.index.json").read_text())
    data = np.load(folder / "data.csc.index.npy")
    indices = np.load(folder / "indices.csc.index.npy")
    indptr = np.load(folder / "indptr.csc.index.npy")
    out = {}
    for term, t in vocab.items():
        if t < len(indptr) - 1:
            start, stop = int(indptr[t]), int(indptr[t + 1])
            out[term] = (indices[start:stop].tolist(), data[start:stop].tolist())
    return out


@pytest.mark.parametrize("method", ["lucene", "robertson", "atire", "bm25l", "bm25+"])
def test_streamed_arrays_equal_in_memory_arrays(method: str, tmp_path: Path) -> None:
    docs = zipf_corpus(3000)
    memory = BM25Retriever.build(docs, method=method, k1=1.2, b=0.7)
    memory.save(tmp_path / "memory")
    streamed = build_bm25_arrays(
        (f"{d.title}\n{d.text}" if d.title else d.text for d in docs),
        tmp_path / "stream",
        k1=1.2,
        b=0.7,
        method=method,
        stopwords="en",
        stem=memory._stem,
        memory_mb=1,
        batch_size=250,
    )
    assert streamed.n_segments > 3 and streamed.n_ranges > 3  # the budget really cut the work
    expected, found = columns(tmp_path / "memory"), columns(tmp_path / "stream")
    assert found == expected  # same terms, same documents per term, bit-identical float32 scores
    params = json.loads((tmp_path / "stream" / "params.index.json").read_text())
    assert params["num_docs"] == 3000 and params["method"] == method
    if method in ("bm25l", "bm25+"):
        vocab_m = json.loads((tmp_path / "memory" / "vocab.index.json").read_text())
        vocab_s = json.loads((tmp_path / "stream" / "vocab.index.json").read_text())
        nn_m = np.load(tmp_path / "memory" / "nonoccurrence_array.index.npy")
        nn_s = np.load(tmp_path / "stream" / "nonoccurrence_array.index.npy")
        assert {t: nn_s[i] for t, i in vocab_s.items() if i < len(nn_s)} == {
            t: nn_m[i] for t, i in vocab_m.items() if i < len(nn_m)
        }


@pytest.mark.parametrize("method", ["lucene", "bm25+"])
def test_streamed_index_answers_like_the_in_memory_one(method: str, tmp_path: Path) -> None:
    docs = zipf_corpus(2000, seed=1)
    memory = BM25Retriever.build(docs, method=method)
    build_index(docs, tmp_path / "ix", "bm25", method=method, memory_mb=1)
    streamed = load_index(tmp_path / "ix")
    rng = np.random.default_rng(2)
    queries = [" ".join(f"w{int(i)}x{'abcdefghij'[int(i) % 10]}" for i in rng.zipf(1.5, size=4) - 1) for _ in range(60)]
    queries += ["the and", "nothing known here", ""]
    for k in (1, 10, 2000):
        expected = memory.retrieve(queries, k)
        found = streamed.retrieve(queries, k)
        assert [[(h.document.id, h.score, h.rank) for h in q] for q in found] == [
            [(h.document.id, h.score, h.rank) for h in q] for q in expected
        ]
    assert sum(len(q) for q in memory.retrieve(queries, 10)) > 300


def test_memory_setting_is_an_option_not_a_parameter(tmp_path: Path) -> None:
    docs = zipf_corpus(50)
    small = build_index(docs, tmp_path / "a", "bm25", memory_mb=1)
    large = build_index(docs, tmp_path / "b", "bm25", memory_mb=4096)
    assert small.params == large.params and "memory_mb" not in small.params
