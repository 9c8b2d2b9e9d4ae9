from __future__ import annotations

import pytest

from ebmeval._util.errors import ConfigError
from ebmeval.rag.corpus import noise_corpus
from ebmeval.tasks import Document


def docs(prefix: str, n: int) -> list[Document]:
    return [Document(id=f"{prefix}{i}", text=f"{prefix} text {i}") for i in range(n)]


def test_gold_plus_seeded_distractors() -> None:
    gold = docs("g", 3)
    pool = docs("p", 100)
    one = noise_corpus(gold, iter(pool), 10, seed=7)
    assert len(one.documents) == 13
    assert one.gold_ids == {"g0", "g1", "g2"}
    assert {d.id for d in one.documents} >= one.gold_ids
    assert one.is_gold("g1") and not one.is_gold("p1")
    again = noise_corpus(gold, iter(pool), 10, seed=7)
    assert [d.id for d in again.documents] == [d.id for d in one.documents]
    other = noise_corpus(gold, iter(pool), 10, seed=8)
    assert {d.id for d in other.documents} != {d.id for d in one.documents}


def test_draw_is_roughly_uniform() -> None:
    counts = dict.fromkeys(range(20), 0)
    for seed in range(400):
        for d in noise_corpus([], docs("p", 20), 5, seed=seed).documents:
            counts[int(d.id[1:])] += 1
    # each of the 20 documents is expected 400 * 5 / 20 = 100 times
    assert min(counts.values()) > 65 and max(counts.values()) < 135


def test_gold_and_repeated_documents_are_never_drawn() -> None:
    gold = [Document(id="g", text="same text")]
    pool = [Document(id="g", text="x"), Document(id="copy", text="same text")] + docs("p", 5) + docs("p", 5)
    mixed = noise_corpus(gold, pool, 5, seed=0)
    ids = [d.id for d in mixed.documents]
    assert sorted(ids) == ["g", "p0", "p1", "p2", "p3", "p4"]


def test_pool_too_small() -> None:
    with pytest.raises(ConfigError, match="only 3 eligible"):
        noise_corpus(docs("g", 1), docs("p", 3), 4)
