from __future__ import annotations

import math
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from ebmeval._util.errors import ConfigError, MissingDependencyError
from ebmeval.rag.retrievers import BM25Options, BM25Retriever, index_text
from ebmeval.tasks import Document


def lucene_bm25(docs: list[Document], query: str, k1: float, b: float) -> list[float]:
    """Reference BM25 (Lucene variant) straight from the formula in BM25Retriever's docstring."""

    def tokenize(text: str) -> list[str]:
        return re.findall(r"\b\w\w+\b", text.lower())

    corpus = [tokenize(index_text(d)) for d in docs]
    n, avgdl = len(corpus), sum(map(len, corpus)) / len(corpus)
    df = Counter(t for tokens in corpus for t in set(tokens))
    scores = []
    for tokens in corpus:
        tf = Counter(tokens)
        score = 0.0
        for term in set(tokenize(query)):
            if tf[term]:
                idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
                score += idf * tf[term] / (tf[term] + k1 * (1 - b + b * len(tokens) / avgdl))
        scores.append(score)
    return scores


@pytest.mark.parametrize(("k1", "b"), [(1.5, 0.75), (0.9, 0.4), (2.0, 1.0)])
def test_scores_match_the_formula(corpus: list[Document], k1: float, b: float) -> None:
    retriever = BM25Retriever.build(corpus, BM25Options(k1=k1, b=b, stemmer=None, stopwords=None))
    for query in ["statins reduce cardiovascular events", "aspirin for prevention", "treatment of diabetes"]:
        assert retriever.scores(query) == pytest.approx(lucene_bm25(corpus, query, k1, b), rel=1e-5)


def test_retrieve_ranks_and_drops_non_matching(corpus: list[Document]) -> None:
    retriever = BM25Retriever.build(corpus)
    [hits] = retriever.retrieve(["cholesterol lowering statins"], k=5)
    assert [h.document.id for h in hits] == ["d1"]
    assert hits[0].rank == 1 and hits[0].score > 0 and hits[0].document == corpus[0]
    assert retriever.retrieve(["zebra"], k=3) == [[]]
    assert retriever.retrieve([], k=3) == []


def test_stemming_and_stopwords(corpus: list[Document]) -> None:
    stemmed = BM25Retriever.build(corpus)
    plain = BM25Retriever.build(corpus, BM25Options(stemmer=None, stopwords=None))
    # "vaccinations" only matches "vaccination" after stemming
    assert [h.document.id for h in stemmed.retrieve(["vaccinations"], 3)[0]] == ["d5"]
    assert plain.retrieve(["vaccinations"], 3) == [[]]
    # "for" is a stopword: alone it matches nothing once stopwords are removed
    assert stemmed.retrieve(["for"], 3) == [[]]
    assert {h.document.id for h in plain.retrieve(["for"], 5)[0]} == {"d2", "d3"}


def test_k_larger_than_corpus_and_batch(corpus: list[Document]) -> None:
    retriever = BM25Retriever.build(corpus)
    results = retriever.retrieve(["statins", "metformin diabetes", "reperfusion"], k=50)
    assert [[h.document.id for h in hits] for hits in results] == [["d1"], ["d3"], ["d4"]]


def test_save_and_load_memory_mapped(corpus: list[Document], tmp_path: Path) -> None:
    retriever = BM25Retriever.build(corpus, BM25Options(k1=1.2, stemmer="english"))
    retriever.save(tmp_path)
    loaded = BM25Retriever.load(tmp_path, corpus, retriever.params())
    assert isinstance(loaded.model.scores["data"], np.memmap)
    assert loaded.params() == retriever.params()
    query = ["early reperfusion for myocardial infarction"]
    assert loaded.retrieve(query, 3) == retriever.retrieve(query, 3)


def test_bad_options(corpus: list[Document]) -> None:
    with pytest.raises(ConfigError, match="no stemmer for 'klingon'"):
        BM25Retriever.build(corpus, BM25Options(stemmer="klingon"))
    with pytest.raises(ConfigError, match="empty corpus"):
        BM25Retriever.build([])


def test_missing_bm25s_names_the_extra(corpus: list[Document], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(__import__("sys").modules, "bm25s", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'ebmeval\[rag\]'") as info:
        BM25Retriever.build(corpus)
    assert info.value.package == "bm25s"
