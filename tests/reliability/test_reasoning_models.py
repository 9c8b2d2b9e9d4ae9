"""Reasoning models and remote windows over real loopback HTTP servers, through the CLI."""

from __future__ import annotations

import asyncio
import csv
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from ebmeval.models import GenerateConfig, user
from ebmeval.models.providers.openai_compatible import OpenAICompatibleModel, chat_request
from tests.helpers.openai_server import without_preflight

from ._support import EBMEVAL, load_delay_server
from .test_faults import ebmeval_run

DelayServer = load_delay_server().DelayServer
TRACE = "Let me think about each option in turn. " * 40


class ReasoningServer(DelayServer):  # type: ignore[misc,valid-type]
    """Answers "Answer: A" after a thinking trace that takes 300 tokens of the reply budget.

    ``style="field"`` sends the trace as ``reasoning_content``, ``style="think"`` inline in
    ``<think>…</think>``. A budget under 300 tokens stops in the trace (``finish_reason``
    ``length``). ``/v1/models`` reports a 4,096-token window; ``/tokenize`` counts words.
    """

    def __init__(self, style: str) -> None:
        super().__init__(0.0, "A")
        self.style = style
        self.bodies: list[dict[str, Any]] = []

    async def _answer(self, method: str, path: str, body: bytes) -> tuple[int, dict[str, Any]]:
        if method == "GET" and path.endswith("/models"):
            return 200, {"object": "list", "data": [{"id": "thinker", "object": "model", "max_model_len": 4096}]}
        if method == "POST" and path == "/tokenize":
            request = json.loads(body)
            return 200, {"count": len(str(request.get("prompt", "")).split())}
        if not path.endswith("/chat/completions"):
            return await super()._answer(method, path, body)
        request = json.loads(body)
        self.bodies.append(request)
        budget = request.get("max_tokens") or request.get("max_completion_tokens") or 10_000
        cut = budget < 300
        trace = TRACE[: budget * 4] if cut else TRACE
        content = "" if cut else "Answer: A"
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if self.style == "field":
            message["reasoning_content"] = trace
        else:
            message["content"] = f"<think>{trace}" + ("" if cut else f"</think>{content}")
        choice = {"index": 0, "message": message, "finish_reason": "length" if cut else "stop"}
        usage = {"prompt_tokens": 10, "completion_tokens": min(budget, 300)}
        return 200, {"id": "x", "object": "chat.completion", "model": "thinker", "choices": [choice], "usage": usage}


@pytest.mark.parametrize("style", ["field", "think"])
async def test_a_thinking_model_is_counted_as_truncated_then_read_with_room_to_think(
    style: str, tmp_path: Path
) -> None:
    store = tmp_path / "runs.sqlite"
    async with ReasoningServer(style) as server:
        args = [EBMEVAL, "run", "--task", "mirage/medqa", "--model", f"openai-compatible:thinker@{server.url}/v1"]
        args += ["--limit", "4", "--store", str(store), "--json"]
        code, cut, err = await ebmeval_run(args, tmp_path)
        assert code == 0, err
        assert cut is not None and cut["truncated"] == 4 and cut["unparsed"] == 4 and cut["truncated_unparsed"] == 4
        assert server.bodies[0]["max_tokens"] == 1  # the pre-flight request
        assert server.bodies[1]["max_tokens"] == 32  # the direct strategy's budget for a model that does not think
        report = [EBMEVAL, "report", cut["run_id"], "--store", str(store), "--out", str(tmp_path / "report")]
        code, _payload, err = await ebmeval_run(report, tmp_path)
        assert code == 0, err
        with (tmp_path / "report" / "metrics-mean-with-95-ci.csv").open() as handle:
            (row,) = [r for r in csv.DictReader(handle) if r["scorer"] == "accuracy"]
        assert (row["metric"], row["unparsed"], row["truncated"]) == ("(no answer graded)", "4", "4")  # none scored
        code, read, err = await ebmeval_run([*args, "--model-arg", "reasoning=true"], tmp_path)
    assert code == 0, err
    assert read is not None and read["run_id"] != cut["run_id"]
    assert read["truncated"] == 0 and read["unparsed"] == 0 and read["generations"] == 4
    assert server.bodies[-1]["max_tokens"] == 4096
    with sqlite3.connect(store) as db:
        rows = db.execute("SELECT output, reasoning FROM generations WHERE run_id = ?", (read["run_id"],)).fetchall()
    assert all(output == "Answer: A" and reasoning.startswith("Let me think") for output, reasoning in rows)


async def test_refused_parameters_point_to_the_provider_options(tmp_path: Path) -> None:
    class Strict(DelayServer):  # type: ignore[misc,valid-type]
        async def _answer(self, method: str, path: str, body: bytes) -> tuple[int, dict[str, Any]]:
            request = json.loads(body or b"{}")
            if path.endswith("/chat/completions") and "max_tokens" in request:
                message = "Unsupported parameter: 'max_tokens' is not supported with this model."
                return 400, {"error": {"message": message + " Use 'max_completion_tokens' instead."}}
            if path.endswith("/chat/completions") and "temperature" in request:
                return 400, {"error": {"message": "Unsupported value: 'temperature' does not support 0"}}
            return await super()._answer(method, path, body)

    async with Strict(0.0, "A") as server:
        model = OpenAICompatibleModel("o", f"{server.url}/v1")
        with pytest.raises(Exception, match="max_tokens_field=max_completion_tokens"):
            await model.generate([user("hi")], GenerateConfig(max_tokens=8, temperature=0))
        fixed = OpenAICompatibleModel("o", f"{server.url}/v1", max_tokens_field="max_completion_tokens")
        with pytest.raises(Exception, match="omit_temperature=true"):
            await fixed.generate([user("hi")], GenerateConfig(max_tokens=8, temperature=0))
        both = OpenAICompatibleModel(
            "o", f"{server.url}/v1", max_tokens_field="max_completion_tokens", omit_temperature=True
        )
        output = await both.generate([user("hi")], GenerateConfig(max_tokens=8, temperature=0, reasoning_effort="low"))
        assert output.text == "A"
        await model.aclose(), await fixed.aclose(), await both.aclose()
    body = chat_request([user("x")], GenerateConfig(reasoning_effort="high"))
    assert body["reasoning_effort"] == "high"


async def test_the_window_and_tokenizer_are_read_from_the_server() -> None:
    async with ReasoningServer("field") as server:
        model = OpenAICompatibleModel("thinker", f"{server.url}/v1")
        assert model.context_length is None and model.count_tokens("one two three four five six seven") == 8
        await model.prepare()
        assert model.context_length == 4096
        # the server's count, not the estimate (counted from a thread: this loop serves the tokenizer)
        assert await asyncio.to_thread(model.count_tokens, "one two three four five six seven") == 7
        assert "context_length" not in model.describe()  # the server's window is the server's identity
        await model.aclose()


async def test_golden_rag_on_ms2_fits_its_evidence_to_a_remote_window(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    async with DelayServer(0.0, "Conclusion: aspirin helps.") as server:
        args = [EBMEVAL, "run", "--task", "synthesis", "--task-arg", "source=ms2", "--task-arg", "workflow=golden-rag"]
        args += ["--task-arg", "text_metrics=false", "--model", f"openai-compatible:m@{server.url}/v1"]
        args += ["--model-arg", "context_length=4096", "--role", "judge=scripted:Overall: 4", "--store", str(store)]
        args += ["--json"]
        code, payload, err = await ebmeval_run(args, tmp_path)
    assert code == 0 and payload is not None, err
    with sqlite3.connect(store) as db:
        (metadata,) = db.execute("SELECT metadata FROM generations").fetchone()
    overflow = json.loads(metadata)["overflow"]
    assert overflow["applied"] is True and overflow["policy"] == "truncate"
    assert overflow["evidence_tokens"] > overflow["budget_tokens"] and overflow["budget_tokens"] < 4096


async def test_reasoning_effort_is_a_model_option_of_the_command_line(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    async with ReasoningServer("field") as server:
        args = [EBMEVAL, "run", "--task", "caremedeval", "--model", f"openai-compatible:thinker@{server.url}/v1"]
        args += ["--model-arg", "reasoning=true", "--limit", "2", "--store", str(store), "--json"]
        code, high, err = await ebmeval_run([*args, "--model-arg", "reasoning_effort=high"], tmp_path)
        assert code == 0, err
        assert [body["reasoning_effort"] for body in without_preflight(server.bodies)] == ["high", "high"]
        code, low, err = await ebmeval_run([*args, "--model-arg", "reasoning_effort=low"], tmp_path)
        assert code == 0, err
        assert server.bodies[-1]["reasoning_effort"] == "low"
    assert high is not None and low is not None and high["run_id"] != low["run_id"]
