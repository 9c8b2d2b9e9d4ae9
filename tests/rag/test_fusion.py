from __future__ import annotations

import pytest

from ebmeval.rag.fusion import fusion, normalize_scores, reciprocal_rank_fusion, weighted_score_fusion
from ebmeval.tasks import Document, RetrievedDocument


def ranking(*items: tuple[str, float]) -> list[RetrievedDocument]:
    return [
        RetrievedDocument(document=Document(id=doc_id, text=doc_id), score=score, rank=rank)
        for rank, (doc_id, score) in enumerate(items, start=1)
    ]


LEXICAL = ranking(("a", 12.0), ("b", 8.0), ("c", 2.0))
DENSE = ranking(("c", 0.9), ("a", 0.8), ("d", 0.1))


def test_rrf_values() -> None:
    fused = reciprocal_rank_fusion([LEXICAL, DENSE], k=60)
    assert [r.document.id for r in fused] == ["a", "c", "b", "d"]
    assert fused[0].score == pytest.approx(1 / 61 + 1 / 62)
    assert fused[1].score == pytest.approx(1 / 63 + 1 / 61)
    assert fused[2].score == pytest.approx(1 / 62)
    assert [r.rank for r in fused] == [1, 2, 3, 4]


def test_rrf_weights_limit_and_ties() -> None:
    fused = reciprocal_rank_fusion([LEXICAL, DENSE], k=1, weights=[0.0, 1.0], limit=2)
    assert [r.document.id for r in fused] == ["c", "a"]
    # equal fused scores: the document with the better rank in any list wins, then list order
    tied = reciprocal_rank_fusion([ranking(("x", 1.0)), ranking(("y", 1.0))])
    assert [r.document.id for r in tied] == ["x", "y"]


def test_rrf_keeps_gold_flag_and_leaves_inputs_alone() -> None:
    flagged = [LEXICAL[0].model_copy(update={"gold": True})]
    fused = reciprocal_rank_fusion([DENSE, flagged])
    assert next(r for r in fused if r.document.id == "a").gold is True
    assert [r.rank for r in DENSE] == [1, 2, 3]


def test_normalize_scores() -> None:
    assert normalize_scores([12.0, 8.0, 2.0]) == pytest.approx([1.0, 0.6, 0.0])
    assert normalize_scores([3.0, 3.0]) == [1.0, 1.0]
    assert normalize_scores([1.0, 2.0, 3.0], "zscore") == pytest.approx([-1.2247449, 0.0, 1.2247449])
    assert normalize_scores([5.0], "zscore") == [0.0]
    assert normalize_scores([]) == []


def test_weighted_score_fusion_minmax() -> None:
    fused = weighted_score_fusion([LEXICAL, DENSE], weights=[0.5, 0.5])
    # a: .5*1 + .5*(.7/.8); c: .5*0 + .5*1; b: .5*.6 + missing (0); d: missing (0) + .5*0
    expected = {"a": 0.5 + 0.5 * 0.875, "c": 0.5, "b": 0.3, "d": 0.0}
    assert [r.document.id for r in fused] == ["a", "c", "b", "d"]
    assert {r.document.id: r.score for r in fused} == pytest.approx(expected)


def test_weighted_zscore_missing_gets_list_minimum() -> None:
    fused = weighted_score_fusion([ranking(("a", 1.0), ("b", 0.0)), ranking(("c", 5.0))], normalization="zscore")
    scores = {r.document.id: r.score for r in fused}
    assert scores == pytest.approx({"a": 1.0 + 0.0, "b": -1.0 + 0.0, "c": -1.0 + 0.0})


def test_fusion_factory_and_errors() -> None:
    assert [r.document.id for r in fusion("rrf", limit=1)([LEXICAL, DENSE])] == ["a"]
    assert fusion("weighted")([LEXICAL])[0].document.id == "a"
    with pytest.raises(ValueError, match="unknown fusion"):
        fusion("mean")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="2 weights for 1"):
        reciprocal_rank_fusion([LEXICAL], weights=[1.0, 1.0])
