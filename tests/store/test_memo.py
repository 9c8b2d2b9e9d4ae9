from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ebmeval.store import RunStore


@pytest.fixture
def store(tmp_path: Path) -> RunStore:
    store = RunStore(tmp_path / "runs.sqlite")
    store.begin_run(run_id="r1", config_hash="h", config={}, task="toy", model="m", seed=0, provenance={})
    return store


def count_reads(store: RunStore, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    reads: list[str] = []
    original = store._rows

    def counted(sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        reads.append(sql)
        return original(sql, params)

    monkeypatch.setattr(store, "_rows", counted)
    return reads


def test_memo_reads_a_sample_once_and_returns_fresh_copies(store: RunStore, monkeypatch: pytest.MonkeyPatch) -> None:
    store.put_step("r1", "s1", 0, "plan", {"questions": ["a"]})
    reads = count_reads(store, monkeypatch)
    memo = store.memo("r1", "s1", 0)
    first = memo.get_step("plan")
    assert first == {"questions": ["a"]}
    first["questions"].append("changed")
    assert memo.get_step("plan") == {"questions": ["a"]} and memo.get_step("answer") is None
    memo.put_step("answer", {"text": "yes"})
    memo.put_step("answer", {"text": "overwritten?"})
    assert memo.get_step("answer") == {"text": "yes"} == store.get_step("r1", "s1", 0, "answer")
    assert len(reads) == 2  # the memo's one load, then the direct store read above


def test_fresh_memo_never_reads(store: RunStore, monkeypatch: pytest.MonkeyPatch) -> None:
    reads = count_reads(store, monkeypatch)
    memo = store.memo("r1", "s2", 0, fresh=True)
    assert memo.get_step("plan") is None
    memo.put_step("plan", {"n": 1})
    assert memo.get_step("plan") == {"n": 1} and reads == []
    assert store.stepped("r1") == {("s2", 0)}
