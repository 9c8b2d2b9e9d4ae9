"""Decoding settings (top_p, repetition_penalty): sent where the server takes them, refused by name where not."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from ebmeval._util.errors import ConfigError
from ebmeval.models import GenerateConfig, user
from ebmeval.models.providers.openai_compatible import chat_request, openai_compatible
from tests.helpers.cli import ebmeval
from tests.helpers.openai_server import without_preflight

MRAG = GenerateConfig(temperature=0.7, top_p=0.8, repetition_penalty=1.05)


def test_chat_request_sends_both_settings_under_the_servers_field() -> None:
    body = chat_request([user("hi")], MRAG)
    assert body["top_p"] == 0.8 and body["repetition_penalty"] == 1.05
    assert chat_request([user("hi")], MRAG, penalty_field="repeat_penalty")["repeat_penalty"] == 1.05
    with pytest.raises(ConfigError, match="repetition_penalty"):
        chat_request([user("hi")], MRAG, penalty_field=None)
    assert "repetition_penalty" not in chat_request([user("hi")], GenerateConfig(top_p=0.8))


def test_provider_option_and_openai_default() -> None:
    assert openai_compatible("m@http://127.0.0.1:1/v1").penalty_field == "repetition_penalty"  # type: ignore[attr-defined]
    llama = openai_compatible("m@http://127.0.0.1:1/v1", penalty_field="repeat_penalty")
    assert llama.penalty_field == "repeat_penalty"  # type: ignore[attr-defined]
    official = openai_compatible("gpt-4o@https://api.openai.com/v1")
    with pytest.raises(ConfigError, match="repetition_penalty"):
        official.check_config(MRAG)
    official.check_config(GenerateConfig(top_p=0.8))
    with pytest.raises(ConfigError, match="penalty_field"):
        openai_compatible("m@http://127.0.0.1:1/v1", penalty_field="penalty")


class _Recorder(BaseHTTPRequestHandler):
    bodies: list[dict[str, object]] = []

    def do_POST(self) -> None:  # noqa: N802 (the http.server name)
        length = int(self.headers["Content-Length"])
        self.bodies.append(json.loads(self.rfile.read(length)))
        reply = {"choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "A"}}]}
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802
        self.send_response(404)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    _Recorder.bodies = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def test_cli_sends_top_p_and_repetition_penalty_to_a_loopback_server(server: str, tmp_path: Path) -> None:
    common = ["run", "--task", "mirage/medqa", "--limit", "1", "--store", "r.sqlite", "--no-cache"]
    decoding = ["--temperature", "0.7", "--top-p", "0.8", "--repetition-penalty", "1.05"]
    done = ebmeval(*common, "--model", f"openai-compatible:m@{server}", *decoding, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (body,) = without_preflight([b for b in _Recorder.bodies if "messages" in b])
    assert body["top_p"] == 0.8 and body["repetition_penalty"] == 1.05 and body["temperature"] == 0.7
    refused = ebmeval(
        *common,
        "--model",
        f"openai-compatible:m@{server}",
        "--model-arg",
        "penalty_field=none",
        *decoding,
        cwd=tmp_path,
    )
    assert refused.returncode == 2 and "repetition_penalty" in refused.stderr and "Traceback" not in refused.stderr
    assert len(without_preflight([b for b in _Recorder.bodies if "messages" in b])) == 1  # refused before any request


def test_yaml_config_sets_both(server: str, tmp_path: Path) -> None:
    (tmp_path / "run.yaml").write_text(
        f"task: mirage/medqa\nmodel: openai-compatible:m@{server}\nlimit: 1\ncache: false\nstore: r.sqlite\n"
        "generate: {temperature: 0.7, top_p: 0.8, repetition_penalty: 1.05}\n"
    )
    done = ebmeval("run", "run.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (body,) = without_preflight([b for b in _Recorder.bodies if "messages" in b])
    assert body["top_p"] == 0.8 and body["repetition_penalty"] == 1.05


@pytest.mark.local_model
async def test_local_model_takes_repeat_penalty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ebmeval.models import Model
    from ebmeval.models.providers.llamacpp import local

    monkeypatch.setenv("EBMEVAL_CACHE_DIR", str(tmp_path))
    model = Model(local("smollm2", n_ctx=512))
    prompt = [user("List the colours of the rainbow.")]
    plain = await model.generate(prompt, GenerateConfig(temperature=0.0, max_tokens=48, seed=1))
    penalised = await model.generate(
        prompt, GenerateConfig(temperature=0.0, max_tokens=48, seed=1, repetition_penalty=1.8)
    )
    assert plain.text and penalised.text and plain.text != penalised.text
    await model.aclose()
