"""Whole ``ebmeval run`` invocations against the delay server behind a fault-injecting proxy.

The provider's retry logic has unit tests in ``tests/models``; these check what a user
sees end to end: a flaky server still yields every sample (answered, or logged as an
error with a clear message), and a re-run completes the errored ones without repeating
finished work.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.fault_proxy import Fault, FaultProxy, Seen

from ._support import cli_env, integrity, load_delay_server, run_args, sample_of, write_questions

N = 24
FAST_RETRY: dict[str, Any] = {"backoff_base": 0.01, "backoff_cap": 0.05, "timeout": 1}


class Flaky:
    """A fault script keyed by sample: ``plan[sample][k]`` is what its ``k``-th request gets."""

    def __init__(self, plan: dict[str, list[Fault]], default: Callable[[int], Fault] | None = None) -> None:
        self.plan = plan
        self.default = default
        self.attempts: Counter[str] = Counter()
        self.times: defaultdict[str, list[float]] = defaultdict(list)

    def __call__(self, seen: Seen) -> Fault:
        sample = sample_of(seen.body)
        if sample is None:
            return Fault.passthrough()
        attempt = self.attempts[sample]
        self.attempts[sample] += 1
        self.times[sample].append(time.monotonic())
        faults = self.plan.get(sample, [])
        if attempt < len(faults):
            return faults[attempt]
        return self.default(attempt) if self.default is not None else Fault.passthrough()


@pytest.fixture
async def upstream() -> AsyncIterator[str]:
    async with load_delay_server().DelayServer(0.0) as server:
        yield server.url


async def ebmeval_run(args: list[str], tmp: Path) -> tuple[int, dict[str, Any] | None, str]:
    """Run the CLI without blocking the event loop that serves the proxy; (exit code, JSON, stderr)."""
    process = await asyncio.create_subprocess_exec(
        *args, env=cli_env(tmp), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(process.communicate(), 300)
    assert process.returncode is not None
    payload = json.loads(out) if out.strip() else None
    return process.returncode, payload, err.decode()


def store_rows(store: Path) -> tuple[dict[str, str], dict[str, list[str]]]:
    """(output by sample, error messages by sample) of the store's only run."""
    with sqlite3.connect(store) as db:
        outputs = dict(db.execute("SELECT sample_id, output FROM generations").fetchall())
        errors: defaultdict[str, list[str]] = defaultdict(list)
        for sample, error in db.execute("SELECT sample_id, error FROM errors ORDER BY id"):
            errors[sample].append(error)
    return outputs, dict(errors)


async def test_every_kind_of_transient_fault_is_retried_and_every_sample_answered(
    upstream: str, tmp_path: Path
) -> None:
    kinds = [
        Fault.status_code(429, retry_after="0"),
        Fault.status_code(500),
        Fault.status_code(503),
        Fault.truncate(),
        Fault.non_json(),
        Fault.drop(),
        Fault.hang(),
        Fault.trickle(0.005),
    ]
    plan = {f"q{i:04d}": [kinds[i % len(kinds)]] for i in range(N)}
    flaky = Flaky(plan)
    questions = write_questions(tmp_path / "q.jsonl", N)
    async with FaultProxy(upstream, flaky, lifetime=600) as proxy:
        code, payload, err = await ebmeval_run(
            run_args(questions, proxy.url, tmp_path / "runs.sqlite", n=N, **FAST_RETRY), tmp_path
        )
    assert code == 0, err
    assert payload is not None and payload["invocation"]["errors"] == 0
    outputs, errors = store_rows(tmp_path / "runs.sqlite")
    assert outputs == {f"q{i:04d}": "A" for i in range(N)}
    assert errors == {}
    # A trickled answer is slow but whole: accepted at once. Every other fault costs one retry.
    trickled = {s for s, faults in plan.items() if faults[0].kind == "trickle"}
    assert {s: n for s, n in flaky.attempts.items()} == {s: 1 if s in trickled else 2 for s in plan}
    assert integrity(tmp_path / "runs.sqlite") == "ok"


async def test_exhausted_retries_are_logged_clearly_and_a_rerun_completes_them(upstream: str, tmp_path: Path) -> None:
    broken = {"q0001", "q0002", "q0003"}
    plan = {s: [Fault.status_code(503, message="overloaded")] * 10 for s in broken}
    plan["q0004"] = [Fault.status_code(400, message="prompt rejected")]
    flaky = Flaky(plan)
    questions = write_questions(tmp_path / "q.jsonl", N)
    store = tmp_path / "runs.sqlite"
    async with FaultProxy(upstream, flaky, lifetime=600) as proxy:
        args = run_args(questions, proxy.url, store, n=N, max_retries=2, **FAST_RETRY)
        _code, payload, err = await ebmeval_run(args, tmp_path)
        assert "4 samples failed" in err and "re-run to retry them" in err
        outputs, errors = store_rows(store)
        # Nothing dropped: every sample is answered or has a logged error.
        assert set(outputs) | set(errors) == {f"q{i:04d}" for i in range(N)}
        assert set(errors) == broken | {"q0004"} and not set(outputs) & set(errors)
        for sample in broken:
            assert "gave up after 3 attempts" in errors[sample][0] and "HTTP 503: overloaded" in errors[sample][0]
        assert "HTTP 400: prompt rejected" in errors["q0004"][0]
        assert flaky.attempts["q0004"] == 1  # a refusal is not retried
        assert all(flaky.attempts[s] == 3 for s in broken)
        assert payload is not None and payload["invocation"]["errors"] == 4

        flaky.plan.clear()
        before = dict(flaky.attempts)
        code, payload, err = await ebmeval_run(args, tmp_path)
        assert code == 0, err
        # Only the four errored samples were asked again (besides the server probe of /models, /tokenize).
        asked = {s: n - before.get(s, 0) for s, n in flaky.attempts.items() if n != before.get(s, 0)}
        assert asked == dict.fromkeys(broken | {"q0004"}, 1)
    assert payload is not None and payload["invocation"]["resumed_samples"] == N - 4
    outputs, _ = store_rows(store)
    assert len(outputs) == N


async def test_retry_after_is_waited_out(upstream: str, tmp_path: Path) -> None:
    flaky = Flaky({"q0000": [Fault.status_code(429, retry_after="1")]})
    questions = write_questions(tmp_path / "q.jsonl", 2)
    async with FaultProxy(upstream, flaky, lifetime=600) as proxy:
        # backoff_cap also caps Retry-After, so it is raised above the server's 1 s here.
        args = run_args(questions, proxy.url, tmp_path / "runs.sqlite", n=2, **{**FAST_RETRY, "backoff_cap": 5})
        code, _, err = await ebmeval_run(args, tmp_path)
    assert code == 0, err
    first, second = flaky.times["q0000"]
    # The backoff alone would wait at most backoff_base = 0.01 s; the server asked for 1 s.
    assert second - first >= 0.95


async def test_a_server_that_never_answers_ends_in_a_timeout_error(upstream: str, tmp_path: Path) -> None:
    flaky = Flaky({}, default=lambda attempt: Fault.hang())
    questions = write_questions(tmp_path / "q.jsonl", 3)
    started = time.monotonic()
    async with FaultProxy(upstream, flaky, lifetime=600) as proxy:
        args = run_args(questions, proxy.url, tmp_path / "runs.sqlite", n=3, max_retries=1, **FAST_RETRY)
        _code, payload, err = await ebmeval_run(args, tmp_path)
    assert "3 samples failed" in err
    outputs, errors = store_rows(tmp_path / "runs.sqlite")
    assert outputs == {} and set(errors) == {"q0000", "q0001", "q0002"}
    assert all("gave up after 2 attempts; last error: no answer within 1 s" in e[0] for e in errors.values())
    assert all(n == 2 for n in flaky.attempts.values())
    assert time.monotonic() - started < 120


async def test_a_run_with_failed_samples_exits_with_status_1(upstream: str, tmp_path: Path) -> None:
    flaky = Flaky({"q0000": [Fault.status_code(400)]})
    questions = write_questions(tmp_path / "q.jsonl", 2)
    async with FaultProxy(upstream, flaky, lifetime=600) as proxy:
        code, _, err = await ebmeval_run(run_args(questions, proxy.url, tmp_path / "runs.sqlite", n=2), tmp_path)
    assert "1 samples failed" in err
    assert code == 1
