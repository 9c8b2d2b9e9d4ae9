"""Judging summaries generated elsewhere, through the CLI, with the judge behind a real loopback HTTP server."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from ebmeval.store import RunStore
from tests.helpers.cli import ebmeval
from tests.reliability._support import load_delay_server

DelayServer = load_delay_server().DelayServer

GENERATED = (
    "ReviewID,Generated\n"
    'r1,"<s>Statins lower mortality in adults with heart disease.</s>"\n'
    'r2,"<s>There is insufficient evidence to support aspirin for stroke.</s>"\n'
    'r3,"<s>The results of this systematic review suggest that exercise lowers blood pressure.</s>"\n'
)
TARGETS = (
    "ReviewID,Target,Background\n"
    'r1,"Statins reduce mortality in adults with heart disease.",'
    '"<background> We review <int> statins </int> . </background>"\n'
    'r2,"Aspirin reduces stroke in older adults.","<background> Aspirin and <out> stroke </out> . </background>"\n'
    'r3,"Exercise lowers blood pressure in adults.","<background> <pop> Adults </pop> exercising . </background>"\n'
)


def judge_reply(body: dict[str, Any]) -> str:
    """Scripted judge: hedged/no-evidence wording → "no evidence"; the aspirin pair has the wrong population."""
    prompt = body["messages"][-1]["content"]
    if prompt.startswith("You label a statement"):
        modality = "no evidence" if "insufficient evidence" in prompt else "moderate"
        return json.dumps({"direction": "positive", "modality": modality, "reason": "scripted"})
    population = "no" if "aspirin" in prompt.lower() else "yes"
    fields = ("intervention", "outcome", "grammar", "lexical", "non_redundancy")
    return json.dumps({"population": population, **dict.fromkeys(fields, "yes"), "reason": "scripted"})


async def cli(*args: str, cwd: Path) -> tuple[int, str, str]:
    """The CLI in a subprocess, without blocking the loop that serves the judge."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "EBMEVAL_CACHE_DIR": str(cwd / "cache")}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", "from ebmeval.cli import main; main()", *args,
        cwd=cwd, env={**env, "NO_PROXY": "*"}, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), 300)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_a_judge_over_a_loopback_server_grades_summaries_generated_elsewhere(tmp_path: Path) -> None:
    (tmp_path / "gen.csv").write_text(GENERATED)
    (tmp_path / "targets.csv").write_text(TARGETS)
    store = str(tmp_path / "runs.sqlite")
    async with DelayServer(reply=judge_reply) as server:
        judge = f"judge=openai-compatible:scripted-judge@{server.url}/v1"
        args = ["factuality", "--store", store, "run", "factuality/summaries", "--predictions", "gen.csv"]
        args += ["--task-arg", "targets=targets.csv", "--role", judge, "--concurrency", "2"]
        code, out, err = await cli(*args, cwd=tmp_path)
        assert code == 0, err
        assert "3/3 done, 0 errors" in out
        # the run's progress bar, on stderr: one final line when stderr is not a terminal
        (bar,) = [line for line in err.splitlines() if line.startswith("factuality/summaries")]
        assert "3/3" in bar and "samples/s" in bar and "\x1b[" not in err
        assert server.stats.requests == 10  # three judge steps per summary, after one pre-flight request
        code, out, err = await cli(*args, "--quiet", cwd=tmp_path)  # re-running resumes: no new requests
        assert code == 0 and "3/3 done" in out, err
        assert not [line for line in err.splitlines() if line.startswith("factuality/summaries")]  # --quiet
    (run,) = RunStore(store).list_runs()
    assert run.model == "external/gen" and run.task == "factuality/summaries"
    code, out, err = await cli("factuality", "--store", store, "analyze", "--run", run.run_id[:6], cwd=tmp_path)
    assert code == 0, err
    assert "Summaries analysed: 3." in out
    assert "| population | 3 | 0.667 |" in out
    assert "| the results of this systematic review suggest | 1 | 0.333 |" in out
    assert 'Left out, a side "no evidence" or "no claim": 1.' in out
    assert "vs background (n=3)" in out


async def test_score_and_run_with_predictions_of_a_builtin_task(tmp_path: Path) -> None:
    """``score factuality/m3-conclusions --predictions`` said "Unknown model role 'judge'"."""
    ids = ["11466259", "30030923"]
    lines = [json.dumps({"id": i, "output": "Latanoprost lowers intraocular pressure more than timolol."}) for i in ids]
    (tmp_path / "preds.jsonl").write_text("\n".join(lines) + "\n")
    store = str(tmp_path / "runs.sqlite")
    async with DelayServer(reply=judge_reply) as server:
        judge = f"judge=openai-compatible:scripted-judge@{server.url}/v1"
        scored = ["score", "factuality/m3-conclusions", "--predictions", "preds.jsonl", "--role", judge, "--json"]
        code, out, err = await cli(*scored, cwd=tmp_path)
        assert code == 0, err
        result = json.loads(out)
        assert result["scored"] == 2
        metrics = {m["metric"]: m for m in result["metrics"]}
        assert metrics["population"]["value"] == 1.0 and metrics["population"]["n"] == 2
        run = ["factuality", "--store", store, "run", "factuality/m3-conclusions", "--predictions", "preds.jsonl"]
        code, out, err = await cli(*run, "--role", judge, "--model", "external:my-system", cwd=tmp_path)
        assert code == 0, err
        assert "2/2 done, 0 errors" in out
    (record,) = RunStore(store).list_runs()
    assert record.model == "external/my-system" and record.config["task_args"]["source"] == "factuality/m3-conclusions"


def test_external_summaries_without_a_judge_exit_2(tmp_path: Path) -> None:
    (tmp_path / "preds.jsonl").write_text('{"id": "11466259", "output": "x"}\n')
    done = ebmeval("score", "factuality/m3-conclusions", "--predictions", "preds.jsonl", cwd=tmp_path)
    assert done.returncode == 2 and "--role judge=SPEC" in done.stderr and "Traceback" not in done.stderr
    done = ebmeval("factuality", "run", "factuality/m3-conclusions", "--predictions", "preds.jsonl", cwd=tmp_path)
    assert done.returncode == 2 and "--role judge=SPEC" in done.stderr and "Traceback" not in done.stderr
