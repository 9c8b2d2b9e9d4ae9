"""Numbers that cannot be silently wrong: what a user sees end to end through the CLI.

Each test reproduces a way ebmeval used to return a number produced by something other than
what was asked, against real loopback servers and a real store.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from ._support import cli_env, load_delay_server, run_args, write_questions
from .test_faults import ebmeval_run

DelayServer = load_delay_server().DelayServer


def _cache_rows(tmp: Path) -> int:
    path = tmp / "cache" / "responses.sqlite"
    if not path.exists():
        return 0
    with sqlite3.connect(path) as db:
        return int(db.execute("SELECT count(*) FROM responses").fetchone()[0])


async def test_empty_replies_are_errors_never_cached_and_retried_after_the_server_is_fixed(tmp_path: Path) -> None:
    questions = write_questions(tmp_path / "q.jsonl", 6)
    store = tmp_path / "runs.sqlite"
    args = run_args(questions, "URL", store, n=6, backoff_base=0.01, backoff_cap=0.02)
    cached = [a for a in args if a != "--no-cache"]  # the response cache on: nothing may land in it
    async with DelayServer(0.0, "") as broken:
        code, payload, err = await ebmeval_run([a.replace("URL", broken.url) for a in cached], tmp_path)
    assert code == 1, err
    assert payload is not None and payload["generations"] == 0 and payload["failing"] == 6
    assert "empty reply" in err or "failed" in err
    assert _cache_rows(tmp_path) == 0
    async with DelayServer(0.0, "A", port=broken.port) as fixed:
        code, payload, err = await ebmeval_run([a.replace("URL", fixed.url) for a in cached], tmp_path)
        assert code == 0, err
        assert payload is not None and payload["generations"] == 6 and payload["invocation"]["model_calls"] == 6
        fresh = tmp_path / "fresh.sqlite"
        code, payload, err = await ebmeval_run(
            [a.replace("URL", fixed.url).replace(str(store), str(fresh)) for a in cached], tmp_path
        )
        assert code == 0 and payload is not None and payload["generations"] == 6, err
        (accuracy,) = [m for m in payload["metrics"] if m["metric"] == "accuracy" and m["group"] is None]
        assert accuracy["value"] == 1.0


async def test_a_longer_timeout_resumes_the_same_run_and_sends_only_the_failed_samples(tmp_path: Path) -> None:
    questions = write_questions(tmp_path / "q.jsonl", 8)
    store = tmp_path / "runs.sqlite"
    async with DelayServer(0.4, "A") as slow:
        first = run_args(questions, slow.url, store, n=8, timeout=0.1, max_retries=0)
        code, payload, err = await ebmeval_run(first, tmp_path)
        assert code == 1 and payload is not None, err
        run_id, failed = payload["run_id"], payload["failing"]
        assert failed == 8
        sent_before = slow.stats.requests
        second = run_args(questions, slow.url, store, n=8, timeout=10, max_retries=0)
        code, payload, err = await ebmeval_run(second, tmp_path)
    assert code == 0 and payload is not None, err
    assert payload["run_id"] == run_id  # the timeout is transport, not identity
    # the 8 failed samples, and the pre-flight request of the second invocation
    assert slow.stats.requests - sent_before == 8 + 1 and payload["generations"] == 8


async def test_no_shuffle_is_a_different_run(tmp_path: Path) -> None:
    questions = write_questions(tmp_path / "q.jsonl", 4)
    store = tmp_path / "runs.sqlite"
    async with DelayServer(0.0, "A") as server:
        args = run_args(questions, server.url, store, n=4)
        code, shuffled, err = await ebmeval_run(args, tmp_path)
        assert code == 0 and shuffled is not None, err
        code, ordered, err = await ebmeval_run([*args, "--no-shuffle"], tmp_path)
    assert code == 0 and ordered is not None, err
    assert ordered["run_id"] != shuffled["run_id"]


def _run(args: list[str], tmp: Path) -> tuple[int, Any, str]:
    import subprocess

    done = subprocess.run(args, env=cli_env(tmp), capture_output=True, text=True, timeout=300)
    return done.returncode, (json.loads(done.stdout) if done.stdout.strip() else None), done.stderr


def test_rescoring_with_another_judge_keeps_both_score_sets(tmp_path: Path) -> None:
    from ._support import EBMEVAL

    store = str(tmp_path / "runs.sqlite")
    reply = "Reasoning: the answer follows.\nAnswer: A"
    code, run, err = _run(
        [EBMEVAL, "run", "--task", "medthink/reasoning", "--model", f"scripted:{reply}", "--limit", "3"]
        + ["--store", store, "--json"],
        tmp_path,
    )
    assert code == 0, err
    rescore = [EBMEVAL, "rescore", run["run_id"], "--scorer", "judge/steps-with-reference", "--store", store]
    code, yes, err = _run([*rescore, "--role", "judge=scripted:Verdict: YES", "--json"], tmp_path)
    assert code == 0, err
    code, no, err = _run([*rescore, "--role", "judge=scripted:Verdict: NO", "--json"], tmp_path)
    assert code == 0, err
    steps = {m["scorer"]: m["value"] for m in no["metrics"] if m["metric"] == "steps_supported" and not m["group"]}
    # beside the set the run's own model judged when it ran, one set per judge
    assert steps["judge/steps-with-reference[judge=Verdict: YES]"] == 1.0
    assert steps["judge/steps-with-reference[judge=Verdict: NO]"] == 0.0
    code, again, err = _run([*rescore, "--role", "judge=scripted:Verdict: NO", "--json"], tmp_path)
    assert code == 0 and "nothing to score" in err
    assert len(again["score_sets"]) == len(no["score_sets"])
    code, shown, err = _run([EBMEVAL, "show", run["run_id"], "--store", store, "--json"], tmp_path)
    labels = {s["label"] for s in shown["score_sets"]}
    assert {"judge/steps-with-reference[judge=Verdict: YES]", "judge/steps-with-reference[judge=Verdict: NO]"} <= labels
    judged = [s for s in shown["score_sets"] if s["name"] == "judge/steps-with-reference"]
    judges = {s["spec"]["roles"]["judge"]["model"]["name"] for s in judged}
    assert judges == {"scripted/Verdict: YES", "scripted/Verdict: NO", f"scripted/{reply}"}
    report = tmp_path / "report"
    code, _, err = _run([EBMEVAL, "report", run["run_id"], "--store", store, "--out", str(report)], tmp_path)
    assert code == 0, err
    markdown = (report / "report.md").read_text()
    assert "judge/steps-with-reference[judge=Verdict: YES]" in markdown
    assert "judge/steps-with-reference[judge=Verdict: NO]" in markdown


def test_a_new_scorer_option_is_a_new_score_set(tmp_path: Path) -> None:
    from ._support import EBMEVAL

    store = str(tmp_path / "runs.sqlite")
    code, run, err = _run(
        [
            EBMEVAL,
            "run",
            "--task",
            "caremedeval",
            "--model",
            "scripted:A, C",
            "--limit",
            "6",
            "--store",
            store,
            "--json",
        ],
        tmp_path,
    )
    assert code == 0, err
    before = {m["scorer"]: m["value"] for m in run["metrics"] if m["metric"] == "lca" and not m["group"]}
    code, after, err = _run(
        [EBMEVAL, "rescore", run["run_id"], "--scorer", "multi_answer", "--scorer-arg", "lca_credit=[1,0.5,0.2]"]
        + ["--store", store, "--json"],
        tmp_path,
    )
    assert code == 0, err
    lca = {m["scorer"]: m["value"] for m in after["metrics"] if m["metric"] == "lca" and not m["group"]}
    assert len(lca) == 2 and set(before.items()) < set(lca.items())
    assert len(set(lca.values())) == 2  # the new credit changes the number
