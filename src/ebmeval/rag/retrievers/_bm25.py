"""Lexical retrieval with BM25, backed by bm25s (scores precomputed at index time, numpy query path)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Self, TypeVar

import numpy as np
import numpy.typing as npt

from ..._util.errors import ConfigError, MissingDependencyError
from ...tasks import Document, RetrievedDocument
from ._base import IndexedRetriever, index_text, ranked_results, retriever
from ._bm25_disk import DEFAULT_MEMORY_MB, TermTable, Tokenizer, bm25_tokenize, build_bm25_arrays

if TYPE_CHECKING:
    from ._dense import Encoder

_Setting = TypeVar("_Setting", str | None, str | list[str] | None)

BM25Method = Literal["robertson", "lucene", "atire", "bm25l", "bm25+"]


def _bm25s() -> Any:
    try:
        import bm25s
    except ImportError:
        raise MissingDependencyError("BM25 retrieval", "bm25s", "rag") from None
    return bm25s


def switched_off(value: _Setting) -> _Setting | None:
    """``None`` for a setting switched off on the command line (``None``, ``null``, ``none``, ``off``, empty)."""
    if isinstance(value, str) and value.strip().lower() in ("none", "null", "off", ""):
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


def _params(
    k1: float,
    b: float,
    method: BM25Method,
    stemmer: str | None,
    stopwords: str | list[str] | None,
    tokenizer: Tokenizer,
) -> dict[str, Any]:
    """An index's recorded parameters; ``tokenizer`` only when not ``word``, so earlier indexes keep their identity."""
    params = {"k1": k1, "b": b, "method": method, "stemmer": stemmer, "stopwords": stopwords}
    return params | ({"tokenizer": tokenizer} if tokenizer != "word" else {})


@retriever("bm25")
class BM25Retriever(IndexedRetriever):
    r"""Okapi BM25 over word tokens.

    With the default Lucene variant the score of document ``d`` for query ``q`` is
    ``Σ_{t ∈ q} IDF(t) · tf(t,d) / (tf(t,d) + k1 · (1 − b + b · |d| / avgdl))`` with
    ``IDF(t) = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))``, ``N`` documents, ``df(t)``
    documents containing ``t``, ``|d|`` the document's length in tokens and ``avgdl``
    the mean length. Tokens are lower-cased ``\w\w+`` words, optionally without
    stopwords and stemmed (Snowball, via PyStemmer). Documents that share no token
    with the query (score 0) are not returned.
    """

    def __init__(
        self,
        model: Any,
        documents: Sequence[Document],
        *,
        k1: float,
        b: float,
        method: BM25Method,
        stemmer: str | None,
        stopwords: str | list[str] | None,
        tokenizer: Tokenizer = "word",
    ) -> None:
        self.model = model
        self.documents = documents
        self.k1 = k1
        self.b = b
        self.method: BM25Method = method
        self.stemmer = stemmer
        self.stopwords = stopwords
        self.tokenizer: Tokenizer = tokenizer
        self._stem = _stemmer(stemmer)

    @classmethod
    def build(
        cls,
        documents: Sequence[Document],
        *,
        k1: float = 1.5,
        b: float = 0.75,
        method: BM25Method = "lucene",
        stemmer: str | None = "english",
        stopwords: str | list[str] | None = "en",
        tokenizer: Tokenizer = "word",
        show_progress: bool = False,
    ) -> Self:
        """Index ``documents``.

        ``k1`` saturates term frequency, ``b`` normalises length, ``method`` picks the BM25
        variant (Kamphuis et al. 2020), ``stemmer`` is a Snowball language or ``None``,
        ``stopwords`` is ``"en"``, a list of words, or ``None``; ``tokenizer`` is ``word`` or
        ``zh`` (Chinese word segmentation).
        """
        if not documents:
            raise ConfigError("documents", "cannot index an empty corpus")
        bm25s = _bm25s()
        stemmer, stopwords = switched_off(stemmer), switched_off(stopwords)
        texts = [index_text(d) for d in documents]
        tokens = bm25_tokenize(texts, tokenizer, stopwords=stopwords, stem=_stemmer(stemmer))
        model = bm25s.BM25(k1=k1, b=b, method=method)
        model.index(tokens, show_progress=show_progress)
        return cls(
            model, documents, k1=k1, b=b, method=method, stemmer=stemmer, stopwords=stopwords, tokenizer=tokenizer
        )

    @classmethod
    def build_on_disk(
        cls,
        documents: Sequence[Document],
        folder: Path,
        *,
        k1: float = 1.5,
        b: float = 0.75,
        method: BM25Method = "lucene",
        stemmer: str | None = "english",
        stopwords: str | list[str] | None = "en",
        tokenizer: Tokenizer = "word",
        memory_mb: int = DEFAULT_MEMORY_MB,
    ) -> Self:
        """Index ``documents`` in one stream into ``folder`` with about ``memory_mb`` MiB, then open it memory-mapped.

        The arrays equal those :meth:`build` followed by :meth:`save` writes (same scores,
        same top-k); see :func:`~ebmeval.rag.retrievers._bm25_disk.build_bm25_arrays`.
        ``memory_mb`` changes how the work is cut, not the result, so it is not a parameter
        of the index.
        """
        if not documents:
            raise ConfigError("documents", "cannot index an empty corpus")
        if method not in ("robertson", "lucene", "atire", "bm25l", "bm25+"):
            raise ConfigError("method", f"unknown BM25 variant {method!r}")
        _bm25s()
        stemmer, stopwords = switched_off(stemmer), switched_off(stopwords)
        build_bm25_arrays(
            (index_text(d) for d in documents),
            folder,
            k1=k1,
            b=b,
            method=method,
            stopwords=stopwords,
            stem=_stemmer(stemmer),
            tokenizer=tokenizer,
            memory_mb=memory_mb,
        )
        return cls.load(folder, documents, _params(k1, b, method, stemmer, stopwords, tokenizer))

    def params(self) -> dict[str, Any]:
        """Build parameters (``tokenizer`` only when not the default, so earlier indexes keep their identity)."""
        return _params(self.k1, self.b, self.method, self.stemmer, self.stopwords, self.tokenizer)

    def tokenize(self, queries: list[str]) -> list[list[str]]:
        """Queries as the index's tokens (same tokenizer, lower-casing, stopwords and stemming as the documents)."""
        tokens: list[list[str]] = bm25_tokenize(
            queries, self.tokenizer, stopwords=self.stopwords, stem=self._stem, return_ids=False
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
    def load(
        cls,
        folder: Path,
        documents: Sequence[Document],
        params: dict[str, Any],
        *,
        encoder: Encoder | None = None,
    ) -> Self:
        """Open the arrays memory-mapped.

        The vocabulary of a streamed build (a :class:`TermTable`) is memory-mapped too; one
        saved by bm25s (``vocab.index.json``, from :meth:`save` or an older streamed build) is
        read whole, as bm25s does.
        """
        bm25s = _bm25s()
        if (folder / "vocab.index.json").exists():
            model = bm25s.BM25.load(str(folder), mmap=True, load_corpus=False, show_progress=False)
            return cls(model, documents, **params)
        model = bm25s.BM25.load(str(folder), mmap=True, load_vocab=False, load_corpus=False, show_progress=False)
        model.vocab_dict = TermTable(folder)
        if model.nonoccurrence_array is not None:
            model.nonoccurrence_array = np.load(folder / "nonoccurrence_array.index.npy", mmap_mode="r")
        return cls(model, documents, **params)
