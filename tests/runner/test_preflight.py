"""The pre-flight request: a server that cannot be used stops the run with one error, nothing stored as failed."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.chat_server import chat_server, completion
from tests.helpers.cli import ebmeval


def recorded(store: Path) -> tuple[int, int]:
    """(errors, generations) the store holds (0, 0 when no store was made)."""
    if not store.exists():
        return 0, 0
    db = sqlite3.connect(store)
    try:
        return db.execute("SELECT count(*) FROM errors").fetchone()[0], db.execute(
            "SELECT count(*) FROM generations"
        ).fetchone()[0]
    finally:
        db.close()


def run(tmp_path: Path, model: str, *extra: str) -> Any:
    return ebmeval("run", "--task", "pubmedqa", "--model", model, "--limit", "100", *extra, cwd=tmp_path, timeout=60)


def test_unreachable_server_is_one_error_and_nothing_failed(tmp_path: Path) -> None:
    result = run(tmp_path, "openai-compatible:m@http://127.0.0.1:9/v1")
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in result.stderr
    assert lines[0].startswith("error: openai-compatible/m (role model): pre-flight request failed")
    assert "Cannot reach the model server at http://127.0.0.1:9/v1" in lines[0]
    assert recorded(tmp_path / "runs" / "ebmeval.sqlite") == (0, 0)


@pytest.mark.parametrize(
    ("status", "message", "expected"),
    [
        (404, "The model `gpt-5` does not exist", "does not serve model 'gpt-5'"),
        (
            401,
            "Incorrect API key provided",
            "HTTP 401: Incorrect API key provided. Check the API key in $OPENAI",
        ),
    ],
)
def test_wrong_model_name_or_bad_key_is_one_error(tmp_path: Path, status: int, message: str, expected: str) -> None:
    with chat_server(lambda _b, _h: (status, {"error": {"message": message}})) as (url, received):
        result = run(tmp_path, f"openai-compatible:gpt-5@{url}")
    assert result.returncode == 2 and expected in result.stderr and "Traceback" not in result.stderr
    assert [r["path"] for r in received] == ["/v1/chat/completions"]  # the pre-flight request only
    assert recorded(tmp_path / "runs" / "ebmeval.sqlite") == (0, 0)


def test_a_judge_that_cannot_be_reached_is_named_by_its_role(tmp_path: Path) -> None:
    with chat_server(lambda _b, _h: completion("Answer: yes")) as (url, received):
        result = ebmeval(
            "run", "--task", "synthesis", "--task-arg", "text_metrics=false", "--limit", "3",
            "--model", f"openai-compatible:m@{url}", "--role", "judge=openai-compatible:j@http://127.0.0.1:9/v1",
            cwd=tmp_path, timeout=60,
        )  # fmt: skip
    assert result.returncode == 2
    assert "openai-compatible/j (role judge): pre-flight request failed" in result.stderr
    assert [r["path"] for r in received] == ["/v1/chat/completions"]
    assert recorded(tmp_path / "runs" / "ebmeval.sqlite") == (0, 0)


def test_a_usable_server_gets_one_pre_flight_request_then_the_samples(tmp_path: Path) -> None:
    with chat_server(lambda _b, _h: completion("Answer: yes")) as (url, received):
        first = run(tmp_path, f"openai-compatible:m@{url}", "--limit", "3", "--no-cache")
        again = run(tmp_path, f"openai-compatible:m@{url}", "--limit", "3", "--no-cache")
    assert first.returncode == 0 and again.returncode == 0, first.stderr + again.stderr
    chats = [r["body"] for r in received if r["path"].endswith("/chat/completions")]
    prompts = [body["messages"][-1]["content"] for body in chats]
    assert prompts[0] == "Reply with OK." and chats[0]["max_tokens"] == 1
    assert len(prompts) == 4  # pre-flight + 3 samples; the finished run resumes without a request


def test_a_server_error_on_the_pre_flight_request_is_sent_once_and_left_to_the_samples(tmp_path: Path) -> None:
    """Before: the pre-flight request waited out every retry's backoff (about a minute) before the samples ran."""

    def reply(body: dict[str, Any], _headers: Any) -> tuple[int, dict[str, Any]]:
        if body["messages"][-1]["content"] == "Reply with OK.":
            return 500, {"error": {"message": "this server answers questions only"}}
        return completion("Answer: yes")

    with chat_server(reply) as (url, received):
        result = run(tmp_path, f"openai-compatible:m@{url}", "--limit", "2", "--no-cache")
    assert result.returncode == 0, result.stderr
    prompts = [r["body"]["messages"][-1]["content"] for r in received if r["path"].endswith("/chat/completions")]
    assert prompts.count("Reply with OK.") == 1 and len(prompts) == 3


def test_the_pre_flight_request_carries_the_models_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A gateway that needs a header, a body field, Azure's api-version and a temperature is reached, not refused."""
    monkeypatch.setenv("GATEWAY_KEY", "sesame")

    def gateway(body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
        if headers.get("x-gateway-key") != "sesame" or headers.get("api-key") != "k":
            return 403, {"error": {"message": "the gateway needs its key"}}
        if body.get("route") != "eu" or body.get("temperature") != 1.0 or body.get("reasoning_effort") != "low":
            return 403, {"error": {"message": "no route for this request"}}
        return completion("Answer: yes")

    with chat_server(gateway) as (url, received):
        monkeypatch.setenv("AZURE_OPENAI_API_KEY", "k")
        result = run(
            tmp_path,
            f"azure-openai:dep@{url.removesuffix('/v1')}",
            "--limit", "2", "--no-cache", "--temperature", "1",
            "--model-arg", "headers={X-Gateway-Key: $GATEWAY_KEY}",
            "--model-arg", "body={route: eu}",
            "--model-arg", "reasoning_effort=low",
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    chats = [r for r in received if "/chat/completions?api-version=" in r["path"]]
    asked = [r["body"]["messages"][-1]["content"] for r in chats]
    assert asked[0] == "Reply with OK." and "Reply with OK." not in asked[1:]  # the pre-flight, then the samples
    assert recorded(tmp_path / "runs" / "ebmeval.sqlite") == (0, 2)
