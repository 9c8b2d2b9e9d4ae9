"""BM25 built in a stream: postings and vocabulary spilled to disk in segments, merged into bm25s' arrays.

Pass 1 tokenises the corpus in batches (bm25s' tokenizer, so tokens equal the in-memory
build's), counts each document's term frequencies and collects them in a segment: its own
small vocabulary, document frequencies and ``(term, document, tf)`` postings. A segment that
reaches its share of the memory budget (postings or terms) is written to disk with its terms
sorted, and postings sorted by term. The segments' sorted term lists are then merged (a
k-way merge, read in chunks) into the index's vocabulary: every distinct term once, in
UTF-8 byte order, its id being its position, with its document frequency summed and, per
segment, the map from segment term to global id. Pass 2 walks the vocabulary in ranges
whose postings fit the budget, reads each range's slice from every segment, computes
``score = IDF(t) · tfc(tf, |d|)`` with bm25s' own formulas and dtypes, and appends it to the
CSC arrays (``data``, ``indices``, ``indptr``) that ``bm25s.BM25.load(mmap=True)`` opens.

Memory held at once: one batch of tokens, one segment (its postings and vocabulary), one
vocabulary range and 4 bytes per document (its length); no structure grows with the number
of distinct terms. The vocabulary is stored as a sorted term table (:class:`TermTable`),
memory-mapped at query time so that a lookup touches only the pages its binary search reads.
"""

from __future__ import annotations

import heapq
import itertools
import json
import shutil
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping
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
_SEGMENT_BYTES_PER_TERM = 400
"""Bytes a segment's term costs (dict entry, string, its UTF-8 copy and rank while sorted)."""
_MERGE_BYTES_PER_TERM = 200
"""Bytes a term read ahead by the vocabulary merge costs (bytes object, tuple, heap entry)."""
_CHUNK = 65536
"""Items per read or write of per-term arrays streamed through memory."""
_TERM_CHUNK = 4096
"""Terms a term table writer buffers (as ``bytes`` objects) before writing them."""

VOCAB_PREFIX = "vocab"
"""The index's term table: ``vocab.terms.npy`` (UTF-8 bytes) and ``vocab.offsets.npy``."""

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
    """Appends chunks to a 1-D ``.npy`` file; a length not given in advance is written into the header on close."""

    def __init__(self, path: Path, dtype: type[np.generic], length: int | None = None) -> None:
        self.handle = open(path, "wb")
        self.dtype = np.dtype(dtype)
        self.length = length
        self.written = 0
        self._header(length or 0)
        self.data_offset = self.handle.tell()

    def _header(self, length: int) -> None:
        header = {"descr": np.lib.format.dtype_to_descr(self.dtype), "fortran_order": False, "shape": (length,)}
        np.lib.format.write_array_header_1_0(self.handle, header)

    def write(self, chunk: npt.ArrayLike) -> None:
        data = np.ascontiguousarray(chunk, dtype=self.dtype)
        data.tofile(self.handle)
        self.written += len(data)

    def close(self) -> None:
        if self.length is None:
            self.handle.seek(0)
            self._header(self.written)  # padded to 64 bytes: the same size as the placeholder's
            if self.handle.tell() != self.data_offset:
                raise RuntimeError(f"header of {self.handle.name} changed size")
        self.handle.close()
        if self.length is not None and self.written != self.length:
            raise RuntimeError(f"wrote {self.written} items, expected {self.length}")


class _TermWriter:
    """Writes a sorted term table: the terms' UTF-8 bytes concatenated, and the ``n + 1`` offsets into them."""

    def __init__(self, folder: Path, prefix: str) -> None:
        self.blob = _ArrayWriter(folder / f"{prefix}.terms.npy", np.uint8)
        self.offsets = _ArrayWriter(folder / f"{prefix}.offsets.npy", np.int64)
        self.offsets.write(np.zeros(1, dtype=np.int64))
        self.pending: list[bytes] = []
        self.end = 0

    def add(self, term: bytes) -> None:
        self.pending.append(term)
        if len(self.pending) >= _TERM_CHUNK:
            self._flush()

    def _flush(self) -> None:
        lengths = np.fromiter(map(len, self.pending), np.int64, len(self.pending))
        self.offsets.write(self.end + np.cumsum(lengths))
        self.end += int(lengths.sum())
        self.blob.write(np.frombuffer(b"".join(self.pending), dtype=np.uint8))
        self.pending = []

    def close(self) -> None:
        self._flush()
        self.blob.close()
        self.offsets.close()


class TermTable(Mapping[str, int]):
    """A sorted term table on disk, memory-mapped: a term's id is its position, found by binary search.

    A lookup reads about ``2 · log2(n)`` offsets and term bytes, so opening and querying an
    index touches only those pages, not the whole vocabulary.
    """

    def __init__(self, folder: Path, prefix: str = VOCAB_PREFIX) -> None:
        # memoryviews of the mapped arrays: indexing them costs a tenth of indexing numpy arrays
        self.offsets = memoryview(np.load(folder / f"{prefix}.offsets.npy", mmap_mode="r")).cast("B").cast("q")
        self.blob = memoryview(np.load(folder / f"{prefix}.terms.npy", mmap_mode="r")).cast("B")

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def term(self, position: int) -> bytes:
        """The UTF-8 bytes of the term at ``position``."""
        return bytes(self.blob[self.offsets[position] : self.offsets[position + 1]])

    def __getitem__(self, term: str) -> int:
        key = term.encode("utf-8")
        lo, hi = 0, len(self)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.term(mid) < key:
                lo = mid + 1
            else:
                hi = mid
        if lo < len(self) and self.term(lo) == key:
            return lo
        raise KeyError(term)

    def __iter__(self) -> Iterator[str]:
        for position in range(len(self)):
            yield self.term(position).decode("utf-8")


class _Segments:
    """Pass 1: postings and their terms collected per segment, written to disk sorted by (term, document)."""

    def __init__(self, folder: Path, max_postings: int, max_terms: int) -> None:
        self.folder = folder
        self.max_postings = max_postings
        self.max_terms = max_terms
        self.parts: list[tuple[npt.NDArray[np.int64], npt.NDArray[np.int32], npt.NDArray[np.int32]]] = []
        self.vocab: dict[str, int] = {}  # this segment's terms only
        self.df = np.zeros(1024, dtype=np.int64)
        self.buffered = 0
        self.count = 0

    def add(self, names: list[str], lengths: npt.NDArray[np.int64], ids: list[list[int]], first_doc: int) -> None:
        """One tokenised batch: ``names`` its local vocabulary, ``ids`` each document's local token ids."""
        to_segment = np.fromiter((self.vocab.setdefault(t, len(self.vocab)) for t in names), np.int64, len(names))
        flat = np.fromiter(itertools.chain.from_iterable(ids), np.int64, int(lengths.sum()))
        docs = np.repeat(np.arange(first_doc, first_doc + len(ids), dtype=np.int64), lengths)
        keys, tf = np.unique((docs << 32) | to_segment[flat], return_counts=True)
        terms = keys & 0xFFFFFFFF
        if len(self.vocab) > len(self.df):
            grown = max(len(self.vocab), 2 * len(self.df))
            self.df = np.concatenate([self.df, np.zeros(grown - len(self.df), dtype=np.int64)])
        self.df += np.bincount(terms, minlength=len(self.df))
        self.parts.append((terms, (keys >> 32).astype(np.int32), tf.astype(np.int32)))
        self.buffered += len(terms)
        if self.buffered >= self.max_postings or len(self.vocab) >= self.max_terms:
            self.flush()

    def flush(self) -> None:
        """Write the segment: its terms in UTF-8 byte order, their dfs, and postings by (term rank, document)."""
        if self.vocab:
            names = [t.encode("utf-8") for t in self.vocab]
            by_name = np.array(sorted(range(len(names)), key=names.__getitem__), dtype=np.int64)
            writer = _TermWriter(self.folder, f"seg-{self.count:05d}")
            for position in by_name.tolist():
                writer.add(names[position])
            writer.close()
            del names
            np.save(self.file(self.count, "df"), self.df[by_name])
            rank = np.empty(len(by_name), dtype=np.int32)
            rank[by_name] = np.arange(len(by_name), dtype=np.int32)
            terms = rank[np.concatenate([p[0] for p in self.parts])]
            order = np.argsort(terms, kind="stable")  # documents stay ascending within a term
            np.save(self.file(self.count, "terms"), terms[order])
            for i, name in ((1, "docs"), (2, "tf")):
                np.save(self.file(self.count, name), np.concatenate([p[i] for p in self.parts])[order])
            self.count += 1
        self.parts, self.buffered, self.vocab = [], 0, {}
        self.df = np.zeros(1024, dtype=np.int64)

    def file(self, index: int, name: str) -> Path:
        return self.folder / f"seg-{index:05d}-{name}.npy"

    def map_file(self, index: int) -> Path:
        """Raw int32 file: the global id of each of segment ``index``'s terms, in its term order."""
        return self.folder / f"seg-{index:05d}-map.bin"

    def sorted_terms(self, index: int, chunk: int) -> Iterator[tuple[bytes, int, int]]:
        """``(term, segment, df)`` of segment ``index`` in term order, read ``chunk`` terms at a time."""
        prefix = self.folder / f"seg-{index:05d}"
        n = len(np.load(self.file(index, "df"), mmap_mode="r"))
        for start in range(0, n, chunk):
            stop = min(start + chunk, n)
            offsets = _read_slice(prefix.with_name(prefix.name + ".offsets.npy"), start, stop + 1)
            blob = _read_slice(prefix.with_name(prefix.name + ".terms.npy"), int(offsets[0]), int(offsets[-1]))
            text, bounds = blob.tobytes(), (offsets - offsets[0]).tolist()
            dfs = _read_slice(self.file(index, "df"), start, stop).tolist()
            for i, df in enumerate(dfs):
                yield text[bounds[i] : bounds[i + 1]], index, df


class _SegmentMaps:
    """Appends each segment's term → global id map to its file, buffering at most ``limit`` ids in all."""

    def __init__(self, segments: _Segments, limit: int) -> None:
        self.segments = segments
        self.limit = limit
        self.buffers = [array("i") for _ in range(segments.count)]
        self.buffered = 0

    def add(self, segment: int, term: int) -> None:
        self.buffers[segment].append(term)
        self.buffered += 1
        if self.buffered >= self.limit:
            self.flush()

    def flush(self) -> None:
        for segment, buffer in enumerate(self.buffers):
            if buffer:
                with open(self.segments.map_file(segment), "ab") as handle:
                    buffer.tofile(handle)
                self.buffers[segment] = array("i")
        self.buffered = 0


def _merge_vocabularies(segments: _Segments, folder: Path, budget: int) -> int:
    """Merge the segments' sorted terms into the index's term table, ``df.npy`` and the segment maps.

    Returns the number of distinct terms.
    """
    chunk = max(64, budget // 4 // _MERGE_BYTES_PER_TERM // max(segments.count, 1))
    merged = heapq.merge(*(segments.sorted_terms(s, chunk) for s in range(segments.count)))
    terms = _TermWriter(folder, VOCAB_PREFIX)
    df_out = _ArrayWriter(segments.folder / "df.npy", np.int64)
    maps = _SegmentMaps(segments, max(_CHUNK, budget // 4 // 8))
    dfs = array("q")
    last: bytes | None = None
    n_terms = count = 0
    for term, segment, df in merged:
        if term != last:
            if last is not None:
                dfs.append(count)
                if len(dfs) >= _CHUNK:
                    df_out.write(np.frombuffer(dfs, dtype=np.int64))
                    dfs = array("q")
            terms.add(term)
            last, count = term, 0
            n_terms += 1
        count += df
        maps.add(segment, n_terms - 1)
    if last is not None:
        dfs.append(count)
    df_out.write(np.frombuffer(dfs, dtype=np.int64))
    df_out.close()
    terms.close()
    maps.flush()
    return n_terms


def _write_indptr(df_file: Path, path: Path, n_terms: int) -> int:
    """``indptr`` (cumulative document frequencies) written in chunks; returns the number of postings."""
    out = _ArrayWriter(path, np.int64, n_terms + 1)
    out.write(np.zeros(1, dtype=np.int64))
    total = 0
    for start in range(0, n_terms, _CHUNK):
        ends = total + np.cumsum(_read_slice(df_file, start, min(start + _CHUNK, n_terms)))
        out.write(ends)
        total = int(ends[-1])
    out.close()
    return total


def _range_postings(
    segments: _Segments, start_term: int, stop_term: int
) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int32], npt.NDArray[np.int32]]:
    """Global term ids, documents and tfs of every posting of terms ``start_term:stop_term``, segment by segment."""
    chunks: list[tuple[npt.NDArray[Any], ...]] = []
    for s in range(segments.count):
        mapping = np.memmap(segments.map_file(s), dtype=np.int32, mode="r")
        lo_rank, hi_rank = (int(x) for x in np.searchsorted(mapping, [start_term, stop_term]))
        if hi_rank == lo_rank:
            continue
        ids = np.array(mapping[lo_rank:hi_rank])
        del mapping
        local = np.load(segments.file(s, "terms"), mmap_mode="r")
        lo, hi = (int(x) for x in np.searchsorted(local, [lo_rank, hi_rank]))
        del local
        terms = ids[_read_slice(segments.file(s, "terms"), lo, hi) - lo_rank]
        chunks.append((terms, *(_read_slice(segments.file(s, n), lo, hi) for n in ("docs", "tf"))))
    if not chunks:
        empty = np.zeros(0, dtype=np.int32)
        return empty, empty, empty
    return tuple(np.concatenate([c[i] for c in chunks]) for i in range(3))  # type: ignore[return-value]


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


def _tokenize_into_segments(
    texts: Iterable[str],
    segments: _Segments,
    lengths_path: Path,
    *,
    tokenizer: Tokenizer,
    stopwords: str | list[str] | None,
    stem: Callable[[list[str]], list[str]] | None,
    batch_size: int,
) -> tuple[int, int]:
    """Pass 1: tokenise ``texts`` in batches into ``segments`` and document lengths (int32) into ``lengths_path``.

    Returns the number of documents and the sum of their lengths.
    """
    n_docs = total_length = 0
    with open(lengths_path, "wb") as lengths_file:
        for batch in _batches(texts, batch_size):
            tokens = bm25_tokenize(batch, tokenizer, stopwords=stopwords, stem=stem)
            names = [""] * len(tokens.vocab)
            for token, local in tokens.vocab.items():
                names[local] = token
            lengths = np.fromiter(map(len, tokens.ids), np.int64, len(tokens.ids))
            segments.add(names, lengths, tokens.ids, n_docs)
            lengths.astype(np.int32).tofile(lengths_file)
            n_docs += len(batch)
            total_length += int(lengths.sum())
    segments.flush()
    return n_docs, total_length


def _term_ranges(indptr_path: Path, n_terms: int, per_range: int) -> list[tuple[int, int]]:
    """Consecutive ranges ``(start, stop)`` of term ids, each the largest whose postings fit ``per_range``.

    A range holds at least one term, however many postings it has.
    """
    indptr = np.load(indptr_path, mmap_mode="r")
    ranges = []
    start_term = 0
    while start_term < n_terms:
        stop_term = int(np.searchsorted(indptr, indptr[start_term] + per_range, side="right")) - 1
        stop_term = min(max(stop_term, start_term + 1), n_terms)
        ranges.append((start_term, stop_term))
        start_term = stop_term
    return ranges


class _Scoring:
    """bm25s' BM25 over one corpus: ``score = IDF(t) · tfc(tf, |d|)``, less the non-occurrence score for BM25L/BM25+."""

    def __init__(
        self, k1: float, b: float, method: str, n_docs: int, total_length: int, doc_lengths: npt.NDArray[np.int32]
    ) -> None:
        import bm25s
        from bm25s.scoring import _select_idf_scorer, _select_tfc_scorer

        self.model = bm25s.BM25(k1=k1, b=b, method=method)
        self.k1, self.b, self.method = k1, b, method
        self.n_docs = n_docs
        # bm25s: avg_doc_len = np.array(lengths).mean(); an integer sum below 2**53 is exact, so this is equal
        self.avgdl = np.float64(total_length) / n_docs
        self.doc_lengths = doc_lengths
        self.compute_idf = _select_idf_scorer(self.model.idf_method)
        self.tfc0: float | None = None
        """tfc of a term a document lacks, for the variants that subtract it (BM25L, BM25+)."""
        if method in self.model.methods_requiring_nonoccurrence:
            self.tfc0 = _select_tfc_scorer(method)(
                tf_array=0, l_d=self.avgdl, l_avg=self.avgdl, k1=k1, b=b, delta=self.model.delta
            )

    @property
    def has_nonoccurrence(self) -> bool:
        """Whether the variant subtracts a score for the terms a document lacks."""
        return self.tfc0 is not None

    def term_weights(self, df: list[int]) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
        """IDF and non-occurrence score (zero without one) of terms with document frequencies ``df``."""
        idf = np.zeros(len(df), dtype=np.float32)
        nonoccurrence = np.zeros(len(df), dtype=np.float32)
        tfc0 = self.tfc0
        for term, count in enumerate(df):
            if count:
                idf[term] = self.compute_idf(count, N=self.n_docs)
                if tfc0 is not None:
                    nonoccurrence[term] = self.compute_idf(count, N=self.n_docs) * tfc0
        return idf, nonoccurrence

    def scores(
        self,
        terms: npt.NDArray[Any],
        docs: npt.NDArray[np.int32],
        tfs: npt.NDArray[np.float32],
        idf: npt.NDArray[np.float32],
        nonoccurrence: npt.NDArray[np.float32],
    ) -> npt.NDArray[np.float32]:
        """Scores of the postings ``(terms, docs, tfs)``, term ids counted from the start of their range."""
        lengths = self.doc_lengths[docs].astype(np.float64)
        scores: npt.NDArray[Any] = idf[terms] * _tfc(
            self.method, tfs, lengths, self.avgdl, self.k1, self.b, self.model.delta
        )
        if self.has_nonoccurrence:
            scores -= nonoccurrence[terms]
        return scores.astype(np.float32)

    def write_params(self, folder: Path) -> None:
        """bm25s' ``params.index.json``."""
        import bm25s

        params = {
            "k1": self.k1,
            "b": self.b,
            "delta": self.model.delta,
            "method": self.method,
            "idf_method": self.model.idf_method,
            "dtype": self.model.dtype,
            "int_dtype": self.model.int_dtype,
            "num_docs": self.n_docs,
            "version": bm25s.__version__,
            "backend": self.model.backend,
        }
        (folder / "params.index.json").write_text(json.dumps(params, indent=4), encoding="utf-8")


def _range_scores(
    segments: _Segments, scoring: _Scoring, start_term: int, stop_term: int
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int32], npt.NDArray[np.float32]]:
    """Scores and documents of the postings of terms ``start_term:stop_term`` (CSC order), and their non-occurrence."""
    df = _read_slice(segments.folder / "df.npy", start_term, stop_term).tolist()
    idf, nonoccurrence = scoring.term_weights(df)
    terms, docs, tf = _range_postings(segments, start_term, stop_term)
    order = np.argsort(terms, kind="stable")  # segments are in document order, so documents stay ascending
    terms, docs = terms[order] - start_term, docs[order]
    tfs = tf[order].astype(np.float32)
    del order
    return scoring.scores(terms, docs, tfs, idf, nonoccurrence), docs, nonoccurrence


def _write_scores(
    segments: _Segments, folder: Path, scoring: _Scoring, n_terms: int, n_postings: int, budget: int
) -> int:
    """Pass 2: score every posting, one range of terms that fits ``budget`` at a time; returns the number of ranges."""
    ranges = _term_ranges(folder / "indptr.csc.index.npy", n_terms, budget // _MERGE_BYTES_PER_POSTING)
    data_out = _ArrayWriter(folder / "data.csc.index.npy", np.float32, n_postings)
    indices_out = _ArrayWriter(folder / "indices.csc.index.npy", np.int32, n_postings)
    nonoccurrence_out = None
    if scoring.has_nonoccurrence:
        nonoccurrence_out = _ArrayWriter(folder / "nonoccurrence_array.index.npy", np.float32, n_terms)
    for start_term, stop_term in ranges:
        scores, docs, nonoccurrence = _range_scores(segments, scoring, start_term, stop_term)
        data_out.write(scores)
        indices_out.write(docs)
        if nonoccurrence_out is not None:
            nonoccurrence_out.write(nonoccurrence)
    data_out.close()
    indices_out.close()
    if nonoccurrence_out is not None:
        nonoccurrence_out.close()
    return len(ranges)


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

    The files are bm25s' score arrays (``data``/``indices``/``indptr.csc.index.npy``,
    ``params.index.json`` and, for BM25L/BM25+, the non-occurrence array) and the vocabulary
    as a :class:`TermTable` (``vocab.terms.npy``, ``vocab.offsets.npy``) in place of bm25s'
    ``vocab.index.json``; each term's scores equal those of
    ``bm25s.BM25(k1, b, method).index(bm25s.tokenize(texts))`` (term ids differ: here they
    follow the terms' byte order).
    """
    work = folder / _BUILD_DIR
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    budget = max(memory_mb, 1) * 2**20
    segments = _Segments(work, budget // 2 // _SEGMENT_BYTES_PER_POSTING, budget // 4 // _SEGMENT_BYTES_PER_TERM)
    n_docs, total_length = _tokenize_into_segments(
        texts,
        segments,
        work / "lengths.bin",
        tokenizer=tokenizer,
        stopwords=stopwords,
        stem=stem,
        batch_size=batch_size,
    )
    if n_docs == 0:
        shutil.rmtree(work)
        raise ValueError("cannot index an empty corpus")
    n_terms = _merge_vocabularies(segments, folder, budget)
    n_postings = _write_indptr(work / "df.npy", folder / "indptr.csc.index.npy", n_terms)
    scoring = _Scoring(k1, b, method, n_docs, total_length, np.fromfile(work / "lengths.bin", dtype=np.int32))
    n_ranges = _write_scores(segments, folder, scoring, n_terms, n_postings, budget)
    scoring.write_params(folder)
    shutil.rmtree(work)
    return StreamStats(n_docs, n_terms, n_postings, segments.count, n_ranges)
