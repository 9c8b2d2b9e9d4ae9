"""The pairwise long-form QA arena."""

from __future__ import annotations

import json
import math
import re
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from ebmeval._util.errors import ConfigError, ModelError, UsageError
from ebmeval.arena import AXES, parse_pairwise, render_pairwise, run_arena
from ebmeval.builtin_tasks import lfqa
from ebmeval.models import ChatMessage, GenerateConfig, Model
from ebmeval.models.providers.scripted import ScriptedModel
from ebmeval.runner import Progress, RunConfig, run
from ebmeval.store import RunStore
from ebmeval.tasks import create_task
from tests.helpers.cli import ebmeval

N = 6
Responder = Callable[[Sequence[ChatMessage], GenerateConfig], str]


def _system(answers: Callable[[int], str], n: int = N) -> Responder:
    """Answers question i (its position in the dataset) with ``answers(i)``."""
    index = {s.input: i for i, s in enumerate(lfqa.load_medicationqa()[:n])}

    def respond(messages: Sequence[ChatMessage], _config: GenerateConfig) -> str:
        question = messages[-1].content.split("Question: ", 1)[1]
        return answers(index[question])

    return respond


def _run(store: Path, spec: str, responder: Responder, task: str = "lfqa/medicationqa", n: int = N) -> str:
    config = RunConfig(shuffle=False, task=task, model=spec, limit=n, store=str(store))
    result = run(config, task=create_task(task), models={"model": Model(ScriptedModel(responder, name=spec))})
    return result.run.run_id


def _answers_in(prompt: str) -> tuple[str, str]:
    found = re.search(r"\[Answer A\]\n(.*)\n\[End of answer A\].*\[Answer B\]\n(.*)\n\[End of answer B\]", prompt, re.S)
    assert found is not None
    return found.group(1), found.group(2)


def _content_judge(messages: Sequence[ChatMessage], _config: GenerateConfig) -> str:
    """Prefers the answer that says GOOD on every axis; a tie when both or neither do."""
    a, b = _answers_in(messages[0].content)
    verdict = "tie" if ("GOOD" in a) == ("GOOD" in b) else ("A" if "GOOD" in a else "B")
    return "\n".join(f"{axis}: {verdict}" for axis in AXES)


def _failing_after(calls: int) -> Responder:
    """The content judge for ``calls`` calls, then a judge that has gone away."""
    made = 0

    def flaky(messages: Sequence[ChatMessage], config: GenerateConfig) -> str:
        nonlocal made
        made += 1
        if made > calls:
            raise ModelError("judge went away")
        return _content_judge(messages, config)

    return flaky


def _first_position_judge(messages: Sequence[ChatMessage], _config: GenerateConfig) -> str:
    return "\n".join(f"{axis}: A" for axis in AXES)


@pytest.fixture
def two_systems(tmp_path: Path) -> tuple[Path, str, str]:
    store = tmp_path / "runs.sqlite"
    # system one is GOOD on questions 0-3, system two on 3-5 (question 3: both, a tie)
    one = _run(store, "scripted:one", _system(lambda i: "GOOD" if i <= 3 else "weak filler text"))
    two = _run(
        store, "scripted:two", _system(lambda i: "GOOD and a much longer answer" if i >= 3 else "weak filler text")
    )
    return store, one, two


def test_content_judge_gives_wins_ratings_and_no_position_bias(two_systems: tuple[Path, str, str]) -> None:
    store, one, two = two_systems
    judge = ScriptedModel(_content_judge)
    result = run_arena(store, [one, two], judge=Model(judge), seed=1, concurrency=2)
    assert len(judge.requests) == 2 * N  # both orders of each of the N comparisons
    assert result.questions == N and len(result.comparisons) == N
    for axis in AXES:
        table = result.axes[axis]
        # one wins questions 0-2, two wins 4-5, question 3 is a tie
        assert table.record == {one: (3, 2, 1), two: (2, 3, 1)}
        assert table.matches == N and table.position_bias == 0 and table.both_orders == N
        assert table.elo.value[one] + table.elo.value[two] == pytest.approx(2000.0)  # Elo updates are zero-sum
        # with 6 matches some bootstrap replicates hold only wins of one system: no finite BT estimate
        assert table.bradley_terry is None and table.bt_note is not None and "replicates" in table.bt_note
        assert table.elo.ci[one][0] <= table.elo.ci[one][1]
        # decisive matches: one's 1-word answers beat 3-word ones (0-2), two's 6-word ones beat 3-word ones (4-5)
        assert table.length_bias.n == 5
        assert table.length_bias.longer_won is not None and table.length_bias.longer_won.value == pytest.approx(0.4)
    shown = json.loads(json.dumps(result.as_dict()))
    assert shown["axes"]["knowledge"]["record"][one] == {"wins": 3, "losses": 2, "ties": 1}
    assert shown["axes"]["knowledge"]["position_bias"] == 0 and shown["axes"]["knowledge"]["bradley_terry"] is None
    text = result.to_markdown()
    assert "## usefulness" in text and "| A |" in text and "position bias: 0 of 6" in text and "Elo" in text


def test_bradley_terry_ratings_with_enough_matches(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    # over 20 questions (i mod 5): one is GOOD on 0-3, two on 3-4 → one wins 12, two wins 4, 4 ties
    one = _run(store, "scripted:one", _system(lambda i: "GOOD" if i % 5 <= 3 else "weak", 20), n=20)
    two = _run(store, "scripted:two", _system(lambda i: "GOOD" if i % 5 >= 3 else "weak", 20), n=20)
    result = run_arena(store, [one, two], judge=Model(ScriptedModel(_content_judge)), axes=["knowledge"], seed=3)
    table = result.axes["knowledge"]
    assert table.record == {one: (12, 4, 4), two: (4, 12, 4)}
    bt = table.bradley_terry
    assert bt is not None and bt.value[one] > bt.value[two]
    # ties count half a win each: P(one beats two) = 14/20, so R_one - R_two = 400 log10(14/6)
    assert bt.value[one] - bt.value[two] == pytest.approx(400 * math.log10(14 / 6))
    assert bt.ci[one][0] < bt.value[one] < bt.ci[one][1]
    assert f"| A | {table.elo.value[one]:.0f} |" in result.to_markdown()
    assert f"| {bt.value[one]:.0f} |" in result.to_markdown()


def test_a_judge_that_always_picks_the_first_answer_shows_position_bias(two_systems: tuple[Path, str, str]) -> None:
    store, one, two = two_systems
    result = run_arena(store, [one, two], judge=Model(ScriptedModel(_first_position_judge)), axes=["usefulness"])
    table = result.axes["usefulness"]
    assert table.position_bias == N and table.position_bias_rate == 1.0
    assert table.record == {one: (0, 0, N), two: (0, 0, N)}  # inconsistent orders count as ties
    assert table.elo.value[one] == table.elo.value[two] == 1000.0
    assert list(result.axes) == ["usefulness"]


def test_failed_judgements_are_recorded_and_a_rerun_resumes_without_repeating_judge_calls(
    two_systems: tuple[Path, str, str],
) -> None:
    store, one, two = two_systems
    flaky = _failing_after(5)

    failed = run_arena(store, [one, two], judge=Model(ScriptedModel(flaky)), concurrency=1)
    assert len(failed.comparisons) == 2 and len(failed.errors) == N - 2  # each failed comparison recorded
    assert all(e["error"] == "ModelError: judge went away" for e in failed.errors)
    assert failed.as_dict()["errors"] == failed.errors and "4 comparisons failed" in failed.to_markdown()
    db = sqlite3.connect(store)
    (arena_id,) = db.execute("SELECT DISTINCT arena_id FROM arena_steps").fetchone()
    assert RunStore(store).count_arena_steps(arena_id) == 5
    resumed = ScriptedModel(_content_judge)
    result = run_arena(store, [one, two], judge=Model(resumed), concurrency=1)
    assert len(resumed.requests) == 2 * N - 5 and result.arena_id == arena_id
    again = ScriptedModel(_content_judge)
    run_arena(store, [two, one], judge=Model(again))  # the runs named in the other order: same arena
    assert again.requests == []
    assert db.execute("SELECT count(*) FROM runs").fetchone()[0] == 2  # the arena adds no run


def test_unreadable_verdict_is_retried_once_then_left_unjudged(two_systems: tuple[Path, str, str]) -> None:
    store, one, two = two_systems
    judge = ScriptedModel(lambda _m, _c: "Both answers are fine.")
    with pytest.raises(UsageError, match="no comparison could be judged"):
        run_arena(store, [one, two], judge=Model(judge), axes=["readability"], limit=2)
    assert len(judge.requests) == 2 * 2 * 2  # 2 comparisons x 2 orders x (first try + retry)
    retries = [request for request in judge.requests if "could not be read" in request[0][-1].content]
    assert len(retries) == 2 * 2  # one stricter follow-up per order, whatever order the calls went out in


def test_one_readable_order_still_makes_a_match(two_systems: tuple[Path, str, str]) -> None:
    store, one, two = two_systems

    def half(messages: Sequence[ChatMessage], config: GenerateConfig) -> str:
        a, _b = _answers_in(messages[0].content)
        return _content_judge(messages, config) if a == "GOOD" else "no idea"

    result = run_arena(store, [one, two], judge=Model(ScriptedModel(half)), axes=["reasoning"], limit=1)
    table = result.axes["reasoning"]
    # question 0: only the order with system one's answer first is readable; one's answer is GOOD
    assert table.matches == 1 and table.both_orders == 0 and table.unjudged == 0
    assert table.record[one] == (1, 0, 0)


def test_three_systems_play_every_pair(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"

    def good_on(k: int) -> Callable[[int], str]:
        return lambda i: "GOOD" if i % 3 == k else "weak"

    runs = [_run(store, f"scripted:s{k}", _system(good_on(k))) for k in range(3)]
    result = run_arena(store, runs, judge=Model(ScriptedModel(_content_judge)), axes=["knowledge"])
    assert len(result.comparisons) == 3 * N
    assert set(result.axes["knowledge"].elo.value) == set(runs)


def test_usage_errors(two_systems: tuple[Path, str, str], tmp_path: Path) -> None:
    store, one, two = two_systems
    judge = Model(ScriptedModel(_content_judge))
    with pytest.raises(UsageError, match="at least two"):
        run_arena(store, [one, one], judge=judge)
    with pytest.raises(ConfigError, match="axes"):
        run_arena(store, [one, two], judge=judge, axes=["style"])
    other = _run(store, "scripted:three", lambda _m, _c: "x", task="lfqa/healthsearchqa")
    with pytest.raises(UsageError, match="different tasks"):
        run_arena(store, [one, other], judge=judge)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("usefulness: A\nreadability: B\nknowledge: tie\nreasoning: equal", ["A", "B", "tie", "tie"]),
        (
            '{"Usefulness": "Answer B", "readability": "a", "knowledge": "both", "reasoning": "B"}',
            ["B", "A", "tie", "B"],
        ),
        ("**Usefulness**: [A]\n- readability - A\nknowledge: B\nreasoning: A\nreasoning: B", ["A", "A", "B", "B"]),
    ],
)
def test_parse_pairwise(reply: str, expected: list[str]) -> None:
    assert parse_pairwise(reply, list(AXES)) == dict(zip(AXES, expected, strict=True))


def test_parse_pairwise_needs_every_axis() -> None:
    assert parse_pairwise("usefulness: A", list(AXES)) is None
    assert parse_pairwise("usefulness: maybe", ["usefulness"]) is None


def test_a_copied_form_is_no_verdict() -> None:
    form = render_pairwise("Q?", "x", "y", list(AXES)).rsplit("tie:\n", 1)[1]
    assert form.splitlines()[0] == "usefulness: <A, B or tie>"
    assert parse_pairwise(form, list(AXES)) is None
    assert parse_pairwise("usefulness: <B>", ["usefulness"]) == {"usefulness": "B"}


def test_every_comparison_is_reported_with_its_failures(two_systems: tuple[Path, str, str]) -> None:
    store, one, two = two_systems
    flaky = _failing_after(5)

    seen: list[tuple[int, int, int, int]] = []

    def report(p: Progress) -> None:
        seen.append((p.done, p.errors, p.total, p.model_calls))

    run_arena(store, [one, two], judge=Model(ScriptedModel(flaky)), concurrency=1, on_progress=report)
    assert len(seen) == N and {total for _d, _e, total, _c in seen} == {N}
    assert seen[-1][:2] == (2, N - 2) and seen[-1][3] >= 5


def test_the_sampled_design_grows_its_total_round_by_round(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    one = _run(store, "scripted:one", _system(lambda i: "GOOD"))
    two = _run(store, "scripted:two", _system(lambda i: "weak"))
    seen: list[tuple[int, int]] = []
    judge = Model(ScriptedModel(_content_judge))
    result = run_arena(
        store, [one, two], judge=judge, min_matches=2, on_progress=lambda p: seen.append((p.done, p.total))
    )
    assert seen[-1] == (len(result.comparisons), len(result.comparisons)) and seen[0][1] <= seen[-1][1]


def test_cli_arena_writes_one_progress_line_to_stderr_when_not_a_terminal(two_systems: tuple[Path, str, str]) -> None:
    store, one, two = two_systems
    verdict = "\n".join(f"{axis}: tie" for axis in AXES)
    done = ebmeval(
        "arena", one, two, "--role", f"judge=scripted:{verdict}", "--store", str(store), "--json", cwd=store.parent
    )
    assert done.returncode == 0, done.stderr
    bars = [line for line in done.stderr.splitlines() if line.startswith("arena")]
    assert len(bars) == 1 and f"{N}/{N}" in bars[0] and "comparisons/s" in bars[0] and "errors 0" in bars[0]
    assert "\x1b[" not in done.stderr and done.stdout.lstrip().startswith("{")
    quiet = ebmeval(
        "arena", one, two, "--role", f"judge=scripted:{verdict}", "--store", str(store), "--json", "--quiet",
        cwd=store.parent,
    )  # fmt: skip
    assert quiet.returncode == 0 and not [line for line in quiet.stderr.splitlines() if line.startswith("arena")]


async def test_inside_a_running_event_loop_run_arena_names_its_async_twin(two_systems: tuple[Path, str, str]) -> None:
    """Before: asyncio.run's bare RuntimeError, and a coroutine left never awaited."""
    import gc
    import warnings

    from ebmeval.arena import arun_arena

    store, one, two = two_systems
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(UsageError, match=r"running event loop \(a notebook\): use await arun_arena"):
            run_arena(store, [one, two], judge=Model(ScriptedModel(_content_judge)))
        gc.collect()
    assert not [w for w in caught if "never awaited" in str(w.message)]
    assert (await arun_arena(store, [one, two], judge=Model(ScriptedModel(_content_judge)))).questions == N
