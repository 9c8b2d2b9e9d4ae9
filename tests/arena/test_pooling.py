"""Pooling several long-form tasks into one arena, and MRAG's sampled design beside the exhaustive one."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from ebmeval._util.errors import UsageError
from ebmeval.arena import AXES, run_arena, sampled_pairs
from ebmeval.models import ChatMessage, GenerateConfig, Model
from ebmeval.models.providers.scripted import ScriptedModel
from tests.arena.test_arena import _content_judge, _run

N = 6


def _always(text: str):  # type: ignore[no-untyped-def]
    return lambda _messages, _config: text


@pytest.fixture
def pooled(tmp_path: Path) -> tuple[Path, str, str]:
    """Two systems, each a LiveQA run and a MedicationQA run; system one is GOOD everywhere."""
    store = tmp_path / "runs.sqlite"
    one = [
        _run(store, "scripted:one", _always("GOOD answer"), task=t, n=N) for t in ("lfqa/liveqa", "lfqa/medicationqa")
    ]
    two = [
        _run(store, "scripted:two", _always("weak filler"), task=t, n=N) for t in ("lfqa/liveqa", "lfqa/medicationqa")
    ]
    return store, ",".join(one), ",".join(two)


def test_two_lfqa_tasks_pooled_into_one_arena(pooled: tuple[Path, str, str]) -> None:
    store, one, two = pooled
    result = run_arena(store, [one, two], judge=Model(ScriptedModel(_content_judge)))
    assert result.questions == 2 * N and len(result.comparisons) == 2 * N
    assert {c.sample_id.split("/")[1] for c in result.comparisons} == {"liveqa", "medicationqa"}
    system_one = "+".join(sorted(one.split(",")))
    assert result.axes["usefulness"].record[system_one] == (2 * N, 0, 0)
    assert "[lfqa/liveqa]" in result.systems[system_one]


def test_sampled_design_reaches_the_per_pair_target_with_seeded_questions(pooled: tuple[Path, str, str]) -> None:
    store, one, two = pooled
    calls: list[str] = []

    def judge(messages: Sequence[ChatMessage], config: GenerateConfig) -> str:
        calls.append(messages[0].content)
        return _content_judge(messages, config)

    result = run_arena(store, [one, two], judge=Model(ScriptedModel(judge)), min_matches=5, seed=3)
    assert len(result.comparisons) == 5 and len(calls) == 10  # both orders of 5 questions
    assert all(n >= 5 for axis in AXES for n in result.pair_matches(axis).values())
    assert result.as_dict()["design"] == "sampled, at least 5 matches"
    again = run_arena(store, [one, two], judge=Model(ScriptedModel(_content_judge)), min_matches=5, seed=3)
    assert [c.sample_id for c in again.comparisons] == [c.sample_id for c in result.comparisons]
    assert len(calls) == 10  # the second arena replayed the stored verdicts


def test_sampled_design_judges_more_when_verdicts_are_unreadable(pooled: tuple[Path, str, str]) -> None:
    from ebmeval.tasks import create_task

    store, one, two = pooled
    liveqa = [s.input for s in create_task("lfqa/liveqa").dataset[:N]]

    def liveqa_unread(messages: Sequence[ChatMessage], config: GenerateConfig) -> str:
        unread = any(question in messages[0].content for question in liveqa)
        return "no idea" if unread else _content_judge(messages, config)

    result = run_arena(store, [one, two], judge=Model(ScriptedModel(liveqa_unread)), min_matches=4, seed=1)
    unjudged = sum(c.sample_id.startswith("lfqa/liveqa/") for c in result.comparisons)
    assert unjudged > 0 and len(result.comparisons) == 4 + unjudged
    assert list(result.pair_matches("usefulness").values()) == [4]


def test_seeded_order_depends_on_seed_and_pair_only() -> None:
    questions = [f"q{i}" for i in range(20)]
    first = sampled_pairs(questions, ["a", "b", "c"], seed=0)
    assert first == sampled_pairs(questions, ["a", "b", "c"], seed=0)
    assert first[("a", "b")] != sampled_pairs(questions, ["a", "b", "c"], seed=1)[("a", "b")]
    assert sorted(first[("a", "c")]) == sorted(questions)


def test_pools_must_answer_the_same_tasks(pooled: tuple[Path, str, str], tmp_path: Path) -> None:
    store, one, _two = pooled
    lone = _run(store, "scripted:three", _always("x"), task="lfqa/liveqa", n=N)
    with pytest.raises(UsageError, match="pool different tasks"):
        run_arena(store, [one, lone], judge=Model(ScriptedModel(_content_judge)))
    twice = ",".join([lone, _run(store, "scripted:four", _always("y"), task="lfqa/liveqa", n=N)])
    with pytest.raises(UsageError, match="two runs of one task"):
        run_arena(store, [one, twice], judge=Model(ScriptedModel(_content_judge)))
