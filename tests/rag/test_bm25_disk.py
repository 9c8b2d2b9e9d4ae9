"""The streaming BM25 build equals bm25s' in-memory build, term by term and query by query."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from ebmeval.rag import build_index, load_index
from ebmeval.rag.retrievers import BM25Options, BM25Retriever
from ebmeval.rag.retrievers._bm25_disk import TermTable, _TermWriter, build_bm25_arrays
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
    saved = folder / "vocab.index.json"
    vocab = json.loads(saved.read_text()) if saved.exists() else dict(TermTable(folder).items())
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
    memory = BM25Retriever.build(docs, BM25Options(method=method, k1=1.2, b=0.7))
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
        vocab_s = dict(TermTable(tmp_path / "stream").items())
        nn_m = np.load(tmp_path / "memory" / "nonoccurrence_array.index.npy")
        nn_s = np.load(tmp_path / "stream" / "nonoccurrence_array.index.npy")
        assert {t: nn_s[i] for t, i in vocab_s.items() if i < len(nn_s)} == {
            t: nn_m[i] for t, i in vocab_m.items() if i < len(nn_m)
        }


@pytest.mark.parametrize("method", ["lucene", "bm25+"])
def test_streamed_index_answers_like_the_in_memory_one(method: str, tmp_path: Path) -> None:
    docs = zipf_corpus(2000, seed=1)
    memory = BM25Retriever.build(docs, BM25Options(method=method))
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


def many_terms(n: int) -> Iterator[str]:
    """``n`` texts of 12 words each: 10 occur in no other text, 2 are common (``10 n + 8`` distinct terms)."""
    for i in range(n):
        yield " ".join([f"u{i}x{j}" for j in range(10)] + ["common", f"shared{i % 7}"])


def traced_peak_mb(run: Callable[[], object]) -> float:
    """Peak memory Python and numpy allocated while ``run`` ran (tracemalloc), in MiB."""
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def test_build_memory_does_not_grow_with_the_vocabulary(tmp_path: Path) -> None:
    def build(n: int) -> Callable[[], object]:
        return lambda: build_bm25_arrays(
            many_terms(n),
            tmp_path / str(n),
            k1=1.5,
            b=0.75,
            method="lucene",
            stopwords=None,
            stem=None,
            memory_mb=1,
            batch_size=500,
        )

    small, large = traced_peak_mb(build(2_000)), traced_peak_mb(build(30_000))  # 20,000 and 300,000 terms
    # a vocabulary held whole (a dict entry and a string per term) costs over 30 MiB at 300,000 terms
    assert large < small + 4, (small, large)
    assert len(TermTable(tmp_path / "30000")) == 300_008


def test_query_start_up_reads_only_the_terms_it_looks_up(tmp_path: Path) -> None:
    texts = many_terms(30_000)
    docs = [Document(id=f"d{i}", text=t) for i, t in enumerate(texts)]
    build_index(docs, tmp_path / "ix", "bm25", stemmer=None, stopwords=None, memory_mb=8)
    found: list[list[str]] = []
    peak = traced_peak_mb(
        lambda: found.append([h.document.id for h in load_index(tmp_path / "ix").retrieve(["u123x4"], 3)[0]])
    )
    assert found == [["d123"]]
    assert peak < 8, peak  # bm25s' vocab.index.json of 300,008 terms loads as a dict of over 30 MiB
    assert isinstance(load_index(tmp_path / "ix").model.vocab_dict, TermTable)


def test_term_table_finds_every_term_and_only_those(tmp_path: Path) -> None:
    terms = sorted({"", "a", "ab", "b", "二甲双胍", "éclair", "z" * 300, "zz"}, key=lambda t: t.encode())
    writer = _TermWriter(tmp_path, "t")
    for term in terms:
        writer.add(term.encode("utf-8"))
    writer.close()
    table = TermTable(tmp_path, "t")
    assert list(table) == terms and [table[t] for t in terms] == list(range(len(terms)))
    for missing in ("aa", "0", "zzz", "二甲", "éclairs"):
        assert missing not in table


def test_index_with_a_bm25s_vocabulary_file_still_loads(tmp_path: Path) -> None:
    """An index from an earlier build (vocabulary in bm25s' ``vocab.index.json``) answers as before."""
    docs = zipf_corpus(400, seed=3)
    build_index(docs, tmp_path / "ix", "bm25", memory_mb=1)
    queries = ["w1xb w7xh", "w2xc", "w40xa w3xd w5xf"]
    expected = load_index(tmp_path / "ix").retrieve(queries, 5)
    folder = tmp_path / "ix"
    (folder / "vocab.index.json").write_text(json.dumps(dict(TermTable(folder).items())))
    manifest = json.loads((folder / "manifest.json").read_text())
    for name in ("vocab.terms.npy", "vocab.offsets.npy"):
        (folder / name).unlink()
        del manifest["arrays"][name]
    (folder / "manifest.json").write_text(json.dumps(manifest))
    found = load_index(folder).retrieve(queries, 5)
    assert [[(h.document.id, h.score) for h in q] for q in found] == [
        [(h.document.id, h.score) for h in q] for q in expected
    ]
    assert sum(map(len, found)) == 15


def test_manifest_records_disk_usage(tmp_path: Path) -> None:
    manifest = build_index(zipf_corpus(100), tmp_path / "ix", "bm25")
    files = [f for f in (tmp_path / "ix").rglob("*") if f.is_file() and f.name != "manifest.json"]
    assert manifest.disk_bytes == sum(f.stat().st_size for f in files) > 0
