"""BM25 built in a stream: postings spilled to disk in segments, merged into bm25s' on-disk arrays.

Pass 1 tokenises the corpus in batches (bm25s' tokenizer, so tokens equal the in-memory
build's), counts each document's term frequencies and writes them as segments of
``(term, document, tf)`` postings sorted by term, together with document frequencies and
document lengths. Pass 2 walks the vocabulary in ranges whose postings fit the memory
budget, reads each range's slice from every segment, computes
``score = IDF(t) · tfc(tf, |d|)`` with bm25s' own formulas and dtypes, and appends it to the
CSC arrays (``data``, ``indices``, ``indptr``) that ``bm25s.BM25.load(mmap=True)`` opens.

Memory held at once: one batch of tokens, one segment buffer, one vocabulary range, the
vocabulary itself (a dict entry and 8 bytes per distinct term) and 4 bytes per document
(its length). Everything else is on disk.
"""

from __future__ import annotations

import itertools
import json
import shutil
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from ..._util.errors import ConfigError, MissingDependencyError

DEFAULT_MEMORY_MB = 2048
"""Default budget of a streaming BM25 build, in MiB."""

_SEGMENT_BYTES_PER_POSTING = 48
"""Bytes a buffered posting costs while a segment is collected and sorted."""
_MERGE_BYTES_PER_POSTING = 96
"""Bytes a posting costs while its vocabulary range is merged and scored."""

_BUILD_DIR = "_bm25_build"


@dataclass(frozen=True)
class StreamStats:
    """Counts of a streaming build."""

    n_documents: int
    n_terms: int
    n_postings: int
    n_segments: int
    n_ranges: int


def _float_dtype() -> np.dtype[Any]:
    """The dtype numpy gives ``float32 array ⊕ float64 scalar`` (float32 before NumPy 2, float64 after)."""
    return (np.ones(1, dtype=np.float32) + np.float64(0.5)).dtype


def _tfc(
    method: str,
    tf: npt.NDArray[np.float32],
    length: npt.NDArray[np.float64],
    avgdl: np.float64,
    k1: float,
    b: float,
    delta: float,
) -> npt.NDArray[Any]:
    """bm25s' term-frequency component, vectorised over postings with the same operations and dtypes.

    bm25s scores one document at a time, so its document-level factor is a float64 scalar that
    numpy combines with the float32 ``tf`` array; here that factor is an array, cast to the dtype
    the scalar would have been combined in, so every score is bit-identical.
    """
    dtype = _float_dtype()
    result: npt.NDArray[Any]
    if method in ("robertson", "lucene"):
        result = tf / ((k1 * ((1 - b) + b * length / avgdl)).astype(dtype) + tf)
    elif method == "atire":
        result = (tf * (k1 + 1)) / (tf + (k1 * (1 - b + b * length / avgdl)).astype(dtype))
    elif method == "bm25l":
        c = tf / (1 - b + b * length / avgdl).astype(dtype)
        result = ((k1 + 1) * (c + delta)) / (k1 + c + delta)
    else:  # bm25+
        result = ((k1 + 1) * tf) / ((k1 * (1 - b + b * length / avgdl)).astype(dtype) + tf) + delta
    return result


def _read_slice(path: Path, start: int, stop: int) -> npt.NDArray[Any]:
    """Items ``start:stop`` of a 1-D ``.npy`` file, read (not mapped) into memory."""
    mapped = np.load(path, mmap_mode="r")  # for the header only: no page of data is touched
    dtype, offset = mapped.dtype, int(mapped.offset)
    del mapped
    return np.fromfile(path, dtype=dtype, count=stop - start, offset=offset + start * dtype.itemsize)


class _ArrayWriter:
    """Appends chunks to a 1-D ``.npy`` file whose length is known in advance."""

    def __init__(self, path: Path, dtype: type[np.generic], length: int) -> None:
        self.handle = open(path, "wb")
        self.dtype = np.dtype(dtype)
        self.length = length
        self.written = 0
        header = {"descr": np.lib.format.dtype_to_descr(self.dtype), "fortran_order": False, "shape": (length,)}
        np.lib.format.write_array_header_1_0(self.handle, header)

    def write(self, chunk: npt.NDArray[Any]) -> None:
        np.ascontiguousarray(chunk, dtype=self.dtype).tofile(self.handle)
        self.written += len(chunk)

    def close(self) -> None:
        self.handle.close()
        if self.written != self.length:
            raise RuntimeError(f"wrote {self.written} items, expected {self.length}")


class _Segments:
    """Pass 1: postings buffered per batch, flushed to disk sorted by (term, document)."""

    def __init__(self, folder: Path, limit: int) -> None:
        self.folder = folder
        self.limit = limit
        self.parts: list[tuple[npt.NDArray[np.int32], npt.NDArray[np.int32], npt.NDArray[np.int32]]] = []
        self.buffered = 0
        self.count = 0

    def add(self, terms: npt.NDArray[np.int32], docs: npt.NDArray[np.int32], tf: npt.NDArray[np.int32]) -> None:
        self.parts.append((terms, docs, tf))
        self.buffered += len(terms)
        if self.buffered >= self.limit:
            self.flush()

    def flush(self) -> None:
        if not self.parts:
            return
        terms = np.concatenate([p[0] for p in self.parts])
        docs = np.concatenate([p[1] for p in self.parts])
        tf = np.concatenate([p[2] for p in self.parts])
        self.parts, self.buffered = [], 0
        order = np.argsort(terms, kind="stable")  # documents stay ascending within a term
        for name, array in (("terms", terms), ("docs", docs), ("tf", tf)):
            np.save(self.folder / f"seg-{self.count:05d}-{name}.npy", array[order])
        self.count += 1

    def files(self, index: int, name: str) -> Path:
        return self.folder / f"seg-{index:05d}-{name}.npy"


Tokenizer = Literal["word", "zh"]
"""How BM25 cuts text into tokens: ``word`` (``\\w\\w+`` runs) or ``zh`` (Chinese word segmentation)."""

_TOKEN_PATTERNS = {"word": r"(?u)\b\w\w+\b", "zh": r"(?u)\b\w+\b"}


def _segmenter() -> Callable[[str], Iterable[str]]:
    try:
        import rjieba
    except ImportError:
        raise MissingDependencyError("Chinese BM25 tokens (tokenizer=zh)", "rjieba", "rag") from None
    cut: Callable[[str], Iterable[str]] = rjieba.cut
    return cut


def bm25_tokenize(
    texts: list[str],
    tokenizer: Tokenizer,
    *,
    stopwords: str | list[str] | None,
    stem: Callable[[list[str]], list[str]] | None,
    return_ids: bool = True,
) -> Any:
    """``texts`` as bm25s tokens: lower-cased, without ``stopwords``, stemmed by ``stem``.

    ``word`` keeps runs of two or more word characters (bm25s' default). ``zh`` first cuts the
    text into words with jieba's dictionary and HMM (``rjieba``, the Rust port: the same words
    as ``jieba``, about 25 times faster, see ``benchmarks/chinese_segmenters.py``) and keeps every
    word, one character long included, so ``二甲双胍`` inside a longer run of characters is
    found as its words; Latin-script words in the same text are kept as words.
    """
    import bm25s

    if tokenizer not in _TOKEN_PATTERNS:
        raise ConfigError("tokenizer", f"must be 'word' or 'zh', not {tokenizer!r}")
    if tokenizer == "zh":
        cut = _segmenter()
        texts = [" ".join(cut(text)) for text in texts]
    return bm25s.tokenize(
        texts,
        token_pattern=_TOKEN_PATTERNS[tokenizer],
        stopwords=stopwords or [],
        stemmer=stem,
        return_ids=return_ids,
        show_progress=False,
    )


def _batches(texts: Iterable[str], size: int) -> Iterator[list[str]]:
    iterator = iter(texts)
    while batch := list(itertools.islice(iterator, size)):
        yield batch


def build_bm25_arrays(
    texts: Iterable[str],
    folder: Path,
    *,
    k1: float,
    b: float,
    method: str,
    stopwords: str | list[str] | None,
    stem: Callable[[list[str]], list[str]] | None,
    tokenizer: Tokenizer = "word",
    memory_mb: int = DEFAULT_MEMORY_MB,
    batch_size: int = 5000,
) -> StreamStats:
    """Index ``texts`` (streamed once) into bm25s' array files in ``folder``, holding about ``memory_mb`` MiB.

    The files are those ``bm25s.BM25.save`` writes (``data``/``indices``/``indptr.csc.index.npy``,
    ``vocab.index.json``, ``params.index.json`` and, for BM25L/BM25+, the non-occurrence array);
    their scores equal those of ``bm25s.BM25(k1, b, method).index(bm25s.tokenize(texts))``.
    """
    import bm25s
    from bm25s.scoring import _select_idf_scorer, _select_tfc_scorer

    work = folder / _BUILD_DIR
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    budget = max(memory_mb, 1) * 2**20
    segments = _Segments(work, budget // 2 // _SEGMENT_BYTES_PER_POSTING)
    vocab: dict[str, int] = {}
    df = np.zeros(1024, dtype=np.int64)
    n_docs = 0
    total_length = 0
    with open(work / "lengths.bin", "wb") as lengths_file:
        for batch in _batches(texts, batch_size):
            tokens = bm25_tokenize(batch, tokenizer, stopwords=stopwords, stem=stem)
            names = [""] * len(tokens.vocab)
            for token, local in tokens.vocab.items():
                names[local] = token
            to_global = np.fromiter((vocab.setdefault(t, len(vocab)) for t in names), np.int64, len(names))
            lengths = np.fromiter(map(len, tokens.ids), np.int64, len(tokens.ids))
            flat = np.fromiter(itertools.chain.from_iterable(tokens.ids), np.int64, int(lengths.sum()))
            docs = np.repeat(np.arange(n_docs, n_docs + len(batch), dtype=np.int64), lengths)
            keys, tf = np.unique((docs << 32) | to_global[flat], return_counts=True)
            terms = (keys & 0xFFFFFFFF).astype(np.int32)
            if len(vocab) > len(df):
                df = np.concatenate([df, np.zeros(max(len(vocab), 2 * len(df)) - len(df), dtype=np.int64)])
            df += np.bincount(terms, minlength=len(df))
            segments.add(terms, (keys >> 32).astype(np.int32), tf.astype(np.int32))
            lengths.astype(np.int32).tofile(lengths_file)
            n_docs += len(batch)
            total_length += int(lengths.sum())
    segments.flush()
    if n_docs == 0:
        shutil.rmtree(work)
        raise ValueError("cannot index an empty corpus")
    n_terms = len(vocab)
    df = df[:n_terms]
    # bm25s: avg_doc_len = np.array(lengths).mean(); an integer sum below 2**53 is exact, so this is equal
    avgdl = np.float64(total_length) / n_docs
    model = bm25s.BM25(k1=k1, b=b, method=method)
    compute_idf = _select_idf_scorer(model.idf_method)
    idf = np.zeros(n_terms, dtype=np.float32)
    for term, count in enumerate(df.tolist()):
        if count:
            idf[term] = compute_idf(count, N=n_docs)
    nonoccurrence = None
    if method in model.methods_requiring_nonoccurrence:
        tfc0 = _select_tfc_scorer(method)(tf_array=0, l_d=avgdl, l_avg=avgdl, k1=k1, b=b, delta=model.delta)
        nonoccurrence = np.zeros(n_terms, dtype=np.float32)
        for term, count in enumerate(df.tolist()):
            if count:
                nonoccurrence[term] = compute_idf(count, N=n_docs) * tfc0
        np.save(folder / "nonoccurrence_array.index.npy", nonoccurrence)
    doc_lengths = np.fromfile(work / "lengths.bin", dtype=np.int32)
    indptr = np.zeros(n_terms + 1, dtype=np.int64)
    np.cumsum(df, out=indptr[1:])
    n_postings = int(indptr[-1])
    np.save(folder / "indptr.csc.index.npy", indptr)
    data_out = _ArrayWriter(folder / "data.csc.index.npy", np.float32, n_postings)
    indices_out = _ArrayWriter(folder / "indices.csc.index.npy", np.int32, n_postings)
    per_range = budget // _MERGE_BYTES_PER_POSTING
    seg_terms = [segments.files(s, "terms") for s in range(segments.count)]
    n_ranges = 0
    start_term = 0
    while start_term < n_terms:
        # the largest range of terms whose postings fit, at least one term
        stop_term = int(np.searchsorted(indptr, indptr[start_term] + per_range, side="right")) - 1
        stop_term = min(max(stop_term, start_term + 1), n_terms)
        chunks: list[tuple[npt.NDArray[Any], ...]] = []
        for s, path in enumerate(seg_terms):
            mapped = np.load(path, mmap_mode="r")
            lo, hi = (int(x) for x in np.searchsorted(mapped, [start_term, stop_term]))
            del mapped
            if hi > lo:
                chunks.append(tuple(_read_slice(segments.files(s, n), lo, hi) for n in ("terms", "docs", "tf")))
        terms = np.concatenate([c[0] for c in chunks])
        docs = np.concatenate([c[1] for c in chunks])
        tf = np.concatenate([c[2] for c in chunks])
        del chunks
        order = np.argsort(terms, kind="stable")  # segments are in document order, so documents stay ascending
        terms, docs, tf = terms[order], docs[order], tf[order].astype(np.float32)
        del order
        scores = idf[terms] * _tfc(method, tf, doc_lengths[docs].astype(np.float64), avgdl, k1, b, model.delta)
        if nonoccurrence is not None:
            scores -= nonoccurrence[terms]
        data_out.write(scores.astype(np.float32))
        indices_out.write(docs)
        n_ranges += 1
        start_term = stop_term
    data_out.close()
    indices_out.close()
    (folder / "vocab.index.json").write_text(
        json.dumps({**vocab, "": n_terms} if "" not in vocab else vocab, ensure_ascii=False), encoding="utf-8"
    )
    params = {
        "k1": k1,
        "b": b,
        "delta": model.delta,
        "method": method,
        "idf_method": model.idf_method,
        "dtype": model.dtype,
        "int_dtype": model.int_dtype,
        "num_docs": n_docs,
        "version": bm25s.__version__,
        "backend": model.backend,
    }
    (folder / "params.index.json").write_text(json.dumps(params, indent=4), encoding="utf-8")
    shutil.rmtree(work)
    return StreamStats(n_docs, n_terms, n_postings, segments.count, n_ranges)
