"""Gateways from the command line: extra headers and body fields, Azure OpenAI, and ``openai/MODEL`` naming."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from tests.helpers.chat_server import chat_server, completion

ANSWER = completion("Answer: yes")


def cli(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), **(env or {})}
    command = [sys.executable, "-c", "from ebmeval.cli import main; main()", "run", "--task", "pubmedqa"]
    return subprocess.run(
        [*command, "--limit", "2", "--no-cache", *args], cwd=tmp_path, capture_output=True, text=True, env=full
    )


def test_extra_headers_and_body_fields_reach_the_server_and_no_secret_is_stored(tmp_path: Path) -> None:
    with chat_server(lambda _b, _h: ANSWER) as (url, received):
        result = cli(
            tmp_path,
            "--model", f"openai-compatible:m@{url}",
            "--model-arg", "headers={X-Team: eval, X-Gateway-Key: $GW_TOKEN}",
            "--model-arg", "body={top_k: 5, provider: {order: [a, b]}}",
            env={"GW_TOKEN": "s3cret-token"},
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    chats = [r for r in received if r["path"].endswith("/chat/completions")]
    assert len(chats) == 3  # the pre-flight request and two samples
    for request in chats:
        assert request["headers"]["x-team"] == "eval" and request["headers"]["x-gateway-key"] == "s3cret-token"
        assert request["body"]["top_k"] == 5 and request["body"]["provider"] == {"order": ["a", "b"]}
    stored = (
        sqlite3.connect(tmp_path / "runs" / "ebmeval.sqlite").execute("SELECT config, provenance FROM runs").fetchone()
    )
    assert "s3cret-token" not in stored[0] + stored[1] and "$GW_TOKEN" in stored[0]


def test_a_header_naming_an_unset_variable_is_one_error(tmp_path: Path) -> None:
    result = cli(tmp_path, "--model", "openai-compatible:m@http://127.0.0.1:9/v1", "--model-arg", "headers={K: $NOPE}")
    assert result.returncode == 2 and "header K: the environment variable $NOPE is not set" in result.stderr


def test_azure_openai_deployment_url_api_version_and_api_key_header(tmp_path: Path) -> None:
    with chat_server(lambda _b, _h: ANSWER) as (url, received):
        endpoint = url.removesuffix("/v1")
        result = cli(
            tmp_path,
            "--model", f"azure-openai:gpt4o-eval@{endpoint}",
            "--model-arg", "api_version=2024-06-01",
            env={"AZURE_OPENAI_API_KEY": "azure-key", "OPENAI_API_KEY": "not-this-one"},
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    chats = [r for r in received if "/chat/completions" in r["path"]]
    assert chats and {r["path"] for r in chats} == {
        "/openai/deployments/gpt4o-eval/chat/completions?api-version=2024-06-01"
    }
    assert all(r["headers"]["api-key"] == "azure-key" and "authorization" not in r["headers"] for r in chats)


def test_openai_slash_model_naming(tmp_path: Path) -> None:
    with chat_server(lambda _b, _h: ANSWER) as (url, received):
        from_env = cli(tmp_path, "--model", "openai/gpt-4o-mini", env={"OPENAI_BASE_URL": url, "OPENAI_API_KEY": "k"})
        explicit = cli(tmp_path, "--model", f"openai/gpt-4o-mini@{url}", env={"OPENAI_API_KEY": "k"})
    assert from_env.returncode == 0 and explicit.returncode == 0, from_env.stderr + explicit.stderr
    chats = [r for r in received if r["path"].endswith("/chat/completions")]
    assert {r["body"]["model"] for r in chats} == {"gpt-4o-mini"}
    assert all(r["headers"]["authorization"] == "Bearer k" for r in chats)
