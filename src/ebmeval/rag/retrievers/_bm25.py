"""Lexical retrieval with BM25, backed by bm25s (scores precomputed at index time, numpy query path)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Self, TypeVar, get_args

import numpy as np
import numpy.typing as npt

from ..._util.errors import ConfigError, MissingDependencyError
from ...tasks import Document, RetrievedDocument
from ._base import (
    IndexedRetriever,
    ProgressFn,
    RetrieverOptions,
    SavedIndex,
    index_text,
    ranked_results,
    retriever,
    setting,
)
from ._bm25_disk import DEFAULT_MEMORY_MB, TermTable, Tokenizer, bm25_tokenize, build_bm25_arrays

_Setting = TypeVar("_Setting", str | None, str | list[str] | None)

BM25Method = Literal["robertson", "lucene", "atire", "bm25l", "bm25+"]


def _bm25s() -> Any:
    try:
        import bm25s
    except ImportError:
        raise MissingDependencyError("BM25 retrieval", "bm25s", "rag") from None
    return bm25s


def switched_off(value: _Setting) -> _Setting | None:
    """``None`` for a setting switched off (``None``, ``null``, ``none``, ``off``, ``false``, empty)."""
    if isinstance(value, str) and value.strip().lower() in ("none", "null", "off", "false", ""):
        return None
    return value


def _stemmer(language: str | None) -> Callable[[list[str]], list[str]] | None:
    if language is None:
        return None
    try:
        Stemmer: Any = importlib.import_module("Stemmer")
    except ImportError:
        raise MissingDependencyError("BM25 stemming", "PyStemmer", "rag") from None
    try:
        stemmer = Stemmer.Stemmer(language)
    except KeyError:
        raise ConfigError(
            "stemmer", f"PyStemmer has no stemmer for {language!r} (known: {', '.join(Stemmer.algorithms())})"
        ) from None
    words: Callable[[list[str]], list[str]] = stemmer.stemWords
    return words


@dataclass(frozen=True)
class BM25Options(RetrieverOptions):
    """Settings of a ``bm25`` index.

    Values that switch a setting off on the command line (``None``, ``null``, ``none``, ``off``,
    ``false``, empty) are ``None`` for ``stemmer`` and ``stopwords``.
    """

    k1: float = 1.5
    """Saturates term frequency."""
    b: float = 0.75
    """Normalises document length."""
    method: BM25Method = "lucene"
    """The BM25 variant (Kamphuis et al. 2020)."""
    stemmer: str | None = "english"
    """A Snowball language (PyStemmer), or ``None``."""
    stopwords: str | list[str] | None = "en"
    """``"en"``, a list of words, or ``None``."""
    tokenizer: Tokenizer = setting("word", omit_default=True)
    """``word``, or ``zh`` (Chinese word segmentation); recorded only when not ``word``."""
    memory_mb: int = setting(DEFAULT_MEMORY_MB, recorded=False, disk_only=True)
    """About how much memory a disk build uses; it changes how the work is cut, not the index."""

    def __post_init__(self) -> None:
        if self.method not in get_args(BM25Method):
            raise ConfigError("method", f"unknown BM25 variant {self.method!r}")
        object.__setattr__(self, "stemmer", switched_off(self.stemmer))
        object.__setattr__(self, "stopwords", switched_off(self.stopwords))


@retriever("bm25")
class BM25Retriever(IndexedRetriever[BM25Options]):
    r"""Okapi BM25 over word tokens.

    With the default Lucene variant the score of document ``d`` for query ``q`` is
    ``Σ_{t ∈ q} IDF(t) · tf(t,d) / (tf(t,d) + k1 · (1 − b + b · |d| / avgdl))`` with
    ``IDF(t) = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))``, ``N`` documents, ``df(t)``
    documents containing ``t``, ``|d|`` the document's length in tokens and ``avgdl``
    the mean length. Tokens are lower-cased ``\w\w+`` words, optionally without
    stopwords and stemmed (Snowball, via PyStemmer). Documents that share no token
    with the query (score 0) are not returned.
    """

    def __init__(self, model: Any, documents: Sequence[Document], options: BM25Options) -> None:
        self.model = model
        self.documents = documents
        self.options = options
        self._stem = _stemmer(options.stemmer)

    @classmethod
    def build(
        cls, documents: Sequence[Document], options: BM25Options | None = None, *, progress: ProgressFn | None = None
    ) -> Self:
        """Index ``documents`` in memory (``progress`` is not called: nothing is encoded)."""
        options = (options or BM25Options()).in_memory()
        _check_corpus(documents)
        bm25s = _bm25s()
        tokens = bm25_tokenize(
            [index_text(d) for d in documents],
            options.tokenizer,
            stopwords=options.stopwords,
            stem=_stemmer(options.stemmer),
        )
        model = bm25s.BM25(k1=options.k1, b=options.b, method=options.method)
        model.index(tokens, show_progress=False)
        return cls(model, documents, options)

    @classmethod
    def build_on_disk(
        cls, documents: Sequence[Document], folder: Path, options: BM25Options, *, progress: ProgressFn | None = None
    ) -> Self:
        """Index ``documents`` in one stream into ``folder`` with about ``memory_mb`` MiB, then open it memory-mapped.

        The arrays equal those :meth:`build` followed by :meth:`save` writes (same scores,
        same top-k); see :func:`~ebmeval.rag.retrievers._bm25_disk.build_bm25_arrays`.
        """
        _check_corpus(documents)
        _bm25s()
        build_bm25_arrays(
            (index_text(d) for d in documents),
            folder,
            k1=options.k1,
            b=options.b,
            method=options.method,
            stopwords=options.stopwords,
            stem=_stemmer(options.stemmer),
            tokenizer=options.tokenizer,
            memory_mb=options.memory_mb,
        )
        return cls.open(SavedIndex(folder, documents, options.params(), options, None))

    def tokenize(self, queries: list[str]) -> list[list[str]]:
        """Queries as the index's tokens (same tokenizer, lower-casing, stopwords and stemming as the documents)."""
        tokens: list[list[str]] = bm25_tokenize(
            queries, self.options.tokenizer, stopwords=self.options.stopwords, stem=self._stem, return_ids=False
        )
        return tokens

    def scores(self, query: str) -> npt.NDArray[np.float32]:
        """BM25 score of every document for ``query`` (index order)."""
        tokens = self.tokenize([query])[0]
        if not tokens:
            return np.zeros(len(self.documents), dtype=np.float32)
        scores: npt.NDArray[np.float32] = self.model.get_scores(tokens)
        return scores

    def retrieve(self, queries: list[str], k: int) -> list[list[RetrievedDocument]]:
        """The top ``k`` documents with a positive score for each query."""
        if not queries:
            return []
        depth = min(k, len(self.documents))
        found = self.model.retrieve(self.tokenize(queries), k=depth, show_progress=False)
        results: list[list[RetrievedDocument]] = []
        for indices, scores in zip(found.documents, found.scores, strict=True):
            keep = scores > 0
            results.append(ranked_results(self.documents, indices[keep], scores[keep]))
        return results

    def save(self, folder: Path) -> None:
        """Write the bm25s arrays (``*.csc.index.npy``), vocabulary and parameters."""
        self.model.save(str(folder), show_progress=False)

    @classmethod
    def open(cls, saved: SavedIndex[BM25Options]) -> Self:
        """Open the arrays memory-mapped.

        The vocabulary of a streamed build (a :class:`TermTable`) is memory-mapped too; one
        saved by bm25s (``vocab.index.json``, from :meth:`save` or an older streamed build) is
        read whole, as bm25s does.
        """
        bm25s = _bm25s()
        folder = str(saved.folder)
        if (saved.folder / "vocab.index.json").exists():
            model = bm25s.BM25.load(folder, mmap=True, load_corpus=False, show_progress=False)
            return cls(model, saved.documents, saved.options)
        model = bm25s.BM25.load(folder, mmap=True, load_vocab=False, load_corpus=False, show_progress=False)
        model.vocab_dict = TermTable(saved.folder)
        if model.nonoccurrence_array is not None:
            model.nonoccurrence_array = np.load(saved.folder / "nonoccurrence_array.index.npy", mmap_mode="r")
        return cls(model, saved.documents, saved.options)


def _check_corpus(documents: Sequence[Document]) -> None:
    if not documents:
        raise ConfigError("documents", "cannot index an empty corpus")
