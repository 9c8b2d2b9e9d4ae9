"""Settings sent as recorded, roles stated, the served model checked and tokens counted without blocking.

Each test reproduces, through the CLI or a provider against a real loopback server, a way a
run used to send or record something other than what was asked.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from ebmeval._util.errors import ModelError, UsageError
from ebmeval.models import Model
from ebmeval.models.providers.openai_compatible import OpenAICompatibleModel
from tests.helpers.openai_server import without_preflight

from ._support import EBMEVAL, load_delay_server
from .test_faults import ebmeval_run
from .test_trust_matrix import OTHER, AdversarialServer

DelayServer = load_delay_server().DelayServer


def _synthesis(url: str, store: Path, workflow: str, *extra: str) -> list[str]:
    args = [EBMEVAL, "run", "--task", "synthesis", "--task-arg", f"workflow={workflow}", "--task-arg"]
    args += ["text_metrics=false", "--model", f"openai-compatible:m@{url}/v1", "--limit", "1"]
    return [*args, "--store", str(store), "--json", *extra]


def _rates(server: AdversarialServer) -> list[dict[str, Any]]:
    return [b for b in server.bodies if "how well can this conclusion be reached" in b["messages"][-1]["content"]]


async def test_the_run_temperature_is_sent_to_the_feasibility_rater_and_keys_the_cache(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    async with AdversarialServer("honest") as server:
        code, default, err = await ebmeval_run(_synthesis(server.url, store, "feasibility"), tmp_path)
        assert code == 0 and default is not None, err
        assert {b["temperature"] for b in _rates(server)} == {0.5}  # MedMeta's rating temperature
        sent = len(without_preflight(server.bodies))
        args = _synthesis(server.url, store, "feasibility", "--temperature", "0.9")
        code, warmer, err = await ebmeval_run(args, tmp_path)
    assert code == 0 and warmer is not None, err
    assert warmer["run_id"] != default["run_id"]
    assert {b["temperature"] for b in _rates(server)[3:]} == {0.9}  # sent, not served from the 0.5 cache
    assert len(without_preflight(server.bodies)) - sent == 3 and warmer["invocation"]["cache_hits"] == 0
    with sqlite3.connect(store) as db:
        rows = db.execute("SELECT payload FROM steps WHERE run_id = ? AND step LIKE 'rate/%'", (warmer["run_id"],))
        assert {json.loads(p)["settings"]["temperature"] for (p,) in rows} == {0.9}  # recorded as sent


async def test_an_evaluator_role_is_sent_its_declared_settings(tmp_path: Path) -> None:
    async with AdversarialServer("honest") as server:
        evaluator = f"evaluator=openai-compatible:judge@{server.url}/v1"
        args = _synthesis(server.url, tmp_path / "runs.sqlite", "parametric-cot", "--role", evaluator)
        args += ["--role", f"judge=openai-compatible:judge@{server.url}/v1", "--task-arg", "max_iterations=1"]
        code, payload, err = await ebmeval_run(args, tmp_path)
    assert code == 0 and payload is not None, err
    (evaluated,) = [b for b in server.bodies if "rate how complete" in b["messages"][-1]["content"]]
    assert (evaluated["temperature"], evaluated["max_tokens"]) == (0.0, 512)


async def test_a_role_left_to_the_model_under_evaluation_is_stated(tmp_path: Path) -> None:
    async with AdversarialServer("honest") as server:
        args = [EBMEVAL, "run", "--task", "medthink/reasoning", "--task-arg", "text_metrics=false", "--limit", "1"]
        args += ["--model", f"openai-compatible:m@{server.url}/v1", "--store", str(tmp_path / "runs.sqlite"), "--json"]
        code, payload, err = await ebmeval_run(args, tmp_path)
    assert code == 0 and payload is not None, err
    note = "role 'judge' is played by the model under evaluation"
    assert note in err and "--role judge=SPEC" in err
    assert any(note in n for n in payload["invocation"]["notes"])


async def test_a_server_answering_as_another_model_is_flagged_and_recorded(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    async with AdversarialServer("other-model") as server:
        args = [EBMEVAL, "run", "--task", "pubmedqa", "--limit", "2", "--model", f"openai-compatible:m@{server.url}/v1"]
        code, payload, err = await ebmeval_run([*args, "--store", str(store), "--json"], tmp_path)
    assert code == 0 and payload is not None, err
    assert f"2 replies came from '{OTHER}', not the model asked for (openai-compatible/m)" in err
    with sqlite3.connect(store) as db:
        (provenance,) = db.execute("SELECT provenance FROM runs").fetchone()
    assert json.loads(provenance)["served"]["model"] == {
        "asked": "openai-compatible/m",
        "replies": {OTHER: 2},
        "mismatched": [OTHER],
    }


class SlowTokenizer(DelayServer):  # type: ignore[misc,valid-type]
    """A llama.cpp-style tokenizer (``{"content"}`` → ``tokens``) that takes 0.2 s, counting calls in flight."""

    def __init__(self, *, broken: bool = False) -> None:
        super().__init__(0.0, "A")
        self.broken = broken
        self.in_flight = 0
        self.most = 0

    async def _answer(self, method: str, path: str, body: bytes) -> tuple[int, dict[str, Any]]:
        if path != "/tokenize":
            return await super()._answer(method, path, body)
        request = json.loads(body)
        if "content" not in request:
            return 200, {"tokens": []}  # what llama.cpp answers to vLLM's body
        if self.broken and request["content"] != "a b":
            return 200, {"tokens": []}
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        await asyncio.sleep(0.2)
        self.in_flight -= 1
        return 200, {"tokens": list(range(len(str(request["content"]).split())))}


async def test_token_counts_are_asked_for_concurrently_and_never_block_the_loop() -> None:
    async with SlowTokenizer() as server:
        model = Model(OpenAICompatibleModel("m", f"{server.url}/v1"))
        await model.api.prepare()
        texts = [f"text number {i} has six words" for i in range(4)]
        counts = await asyncio.gather(*(model.acount_tokens(t) for t in texts))
        assert counts == [6, 6, 6, 6] and server.most == 4  # all four in flight at once: nothing blocked
        with pytest.raises(UsageError, match="acount_tokens"):
            model.count_tokens("a text not counted yet")  # a blocking request inside the loop is refused
        await model.aclose()


async def test_a_tokenizer_that_counts_nothing_is_an_error_not_a_count_of_zero() -> None:
    async with SlowTokenizer(broken=True) as server:
        model = Model(OpenAICompatibleModel("m", f"{server.url}/v1"))
        await model.api.prepare()  # the probe itself is counted
        with pytest.raises(ModelError, match="counted no tokens"):
            await model.acount_tokens("a long abstract that is not empty")
        await model.aclose()
