import json
import random
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import httpx
import pytest

from ebmeval._util.errors import ConfigError, ModelError, ModelUnavailableError, UsageError
from ebmeval.models import GenerateConfig, user
from ebmeval.models.providers.openai_compatible import (
    MalformedResponseError,
    OpenAICompatibleModel,
    RetryPolicy,
    chat_request,
    openai_compatible,
    parse_chat_response,
    parse_retry_after,
)

URL = "http://llm.test/v1"


def completion(text: str = "Paris", *, logprobs: bool = False) -> dict[str, object]:
    choice: dict[str, object] = {
        "index": 0,
        "finish_reason": "stop",
        "message": {"role": "assistant", "content": text},
    }
    if logprobs:
        choice["logprobs"] = {
            "content": [
                {
                    "token": "Par",
                    "logprob": -0.1,
                    "bytes": [80, 97, 114],
                    "top_logprobs": [{"token": "Par", "logprob": -0.1}, {"token": "Lyon", "logprob": -2.5}],
                },
                {"token": "is", "logprob": -0.01, "top_logprobs": []},
            ]
        }
    return {"choices": [choice], "usage": {"prompt_tokens": 12, "completion_tokens": 2, "total_tokens": 14}}


@dataclass(frozen=True)
class RecordingRetry(RetryPolicy):
    """Records each wait the policy asks for, then does not wait."""

    waits: list[float] = field(default_factory=list)

    def delay(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        self.waits.append(super().delay(attempt, retry_after, rng))
        return 0.0


Handler = Callable[[httpx.Request], httpx.Response]


def scripted(*steps: httpx.Response | Exception) -> tuple[Handler, list[httpx.Request]]:
    """A MockTransport handler answering (or raising) the steps in order."""
    sent: list[httpx.Request] = []
    remaining = list(steps)

    def handle(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        step = remaining.pop(0)
        if isinstance(step, Exception):
            raise step
        return step

    return handle, sent


def provider(handler: Handler, *, max_retries: int = 6, **kwargs: object) -> OpenAICompatibleModel:
    return OpenAICompatibleModel(
        "qwen",
        URL,
        retry=RecordingRetry(max_retries=max_retries, backoff_base=0.5, backoff_cap=8.0),
        transport=httpx.MockTransport(handler),
        **kwargs,  # type: ignore[arg-type]
    )


def ok(body: object = None) -> httpx.Response:
    return httpx.Response(200, json=completion() if body is None else body)


def error(status: int, message: str = "boom", **headers: str) -> httpx.Response:
    return httpx.Response(status, json={"error": {"message": message}}, headers=headers)


# --- request and response conversion ---------------------------------------------------------


def test_chat_request_sends_only_the_settings_given() -> None:
    assert chat_request([user("hi")], GenerateConfig()) == {"messages": [{"role": "user", "content": "hi"}]}
    full = GenerateConfig(
        temperature=0.0, top_p=0.9, max_tokens=5, stop=("\n",), seed=7, logprobs=True, top_logprobs=3, timeout=2
    )
    body = chat_request([user("hi")], full)
    assert body["temperature"] == 0.0 and body["top_p"] == 0.9 and body["max_tokens"] == 5
    assert body["stop"] == ["\n"] and body["seed"] == 7
    assert body["logprobs"] is True and body["top_logprobs"] == 3
    assert "timeout" not in body
    assert "top_logprobs" not in chat_request([user("hi")], GenerateConfig(top_logprobs=3))


def test_parse_chat_response_fills_every_field() -> None:
    data = completion(logprobs=True)
    output = parse_chat_response(data, "openai-compatible/qwen", 0.25)
    assert output.text == "Paris"
    assert output.model == "openai-compatible/qwen"
    assert output.finish_reason == "stop"
    assert output.latency == 0.25
    assert (output.usage.input_tokens, output.usage.output_tokens) == (12, 2)
    assert output.raw == data
    assert output.logprobs is not None
    assert [(t.token, t.logprob) for t in output.logprobs] == [("Par", -0.1), ("is", -0.01)]
    assert [(a.token, a.logprob) for a in output.logprobs[0].top] == [("Par", -0.1), ("Lyon", -2.5)]
    assert output.logprobs[1].top == []


def test_parse_chat_response_without_logprobs_usage_or_content() -> None:
    data = {"choices": [{"message": {"role": "assistant", "content": None}, "finish_reason": "length"}]}
    output = parse_chat_response(data, "m", 0.0)
    assert output.text == "" and output.logprobs is None and output.usage.input_tokens == 0


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "expected a JSON object"),
        ({"choices": []}, "no 'choices'"),
        ({"error": {"message": "slot unavailable"}}, "slot unavailable"),
        ({"choices": [{"text": "completion-style"}]}, "no 'message'"),
        ({"choices": [{"message": {"content": "x"}, "logprobs": {"content": [{"token": "x"}]}}]}, "logprobs"),
    ],
)
def test_parse_chat_response_rejects_unusable_bodies(data: object, message: str) -> None:
    with pytest.raises(MalformedResponseError, match=message):
        parse_chat_response(data, "m", 0.0)


# --- retry policy ------------------------------------------------------------------------------


def test_parse_retry_after_seconds_and_http_dates() -> None:
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after(None) is None
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(" 0.5 ") == 0.5
    assert parse_retry_after("-4") == 0.0
    assert parse_retry_after("Thu, 01 Jan 2026 12:00:30 GMT", now=now) == 30.0
    assert parse_retry_after("Thu, 01 Jan 2026 11:00:00 GMT", now=now) == 0.0
    assert parse_retry_after("soon") is None


def test_backoff_is_full_jitter_under_a_doubling_capped_ceiling() -> None:
    policy = RetryPolicy(backoff_base=1.0, backoff_cap=5.0)
    rng = random.Random(0)
    for attempt, ceiling in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 5.0), (9, 5.0)]:
        waits = [policy.delay(attempt, None, rng) for _ in range(300)]
        assert all(0.0 <= w <= ceiling for w in waits)
        assert max(waits) > 0.8 * ceiling and min(waits) < 0.2 * ceiling


def test_retry_after_is_honoured_up_to_the_cap() -> None:
    policy = RetryPolicy(backoff_cap=10.0)
    assert policy.delay(1, 3.0, random.Random(0)) == 3.0
    assert policy.delay(1, 3600.0, random.Random(0)) == 10.0


# --- the provider against a mock transport -----------------------------------------------------


async def test_request_carries_model_seed_and_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    handler, sent = scripted(ok())
    output = await provider(handler).generate([user("Capital of France?")], GenerateConfig(seed=3, max_tokens=4))
    assert output.text == "Paris" and output.model == "openai-compatible/qwen"
    assert str(sent[0].url) == URL + "/chat/completions"
    body = json.loads(sent[0].content)
    assert body["model"] == "qwen" and body["seed"] == 3 and body["max_tokens"] == 4
    assert sent[0].headers["authorization"] == "Bearer sk-test"


async def test_no_key_sends_no_authorization(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    handler, sent = scripted(ok())
    await provider(handler).generate([user("hi")], GenerateConfig())
    assert "authorization" not in sent[0].headers


async def test_config_timeout_overrides_the_default() -> None:
    handler, sent = scripted(ok(), ok())
    model = provider(handler, timeout=30.0)
    await model.generate([user("hi")], GenerateConfig())
    await model.generate([user("hi")], GenerateConfig(timeout=2.5))
    assert [r.extensions["timeout"]["read"] for r in sent] == [30.0, 2.5]


async def test_429_with_retry_after_then_success() -> None:
    handler, sent = scripted(error(429, "slow down", **{"Retry-After": "2"}), ok())
    model = provider(handler)
    output = await model.generate([user("hi")], GenerateConfig())
    assert output.text == "Paris" and len(sent) == 2
    assert isinstance(model.retry, RecordingRetry) and model.retry.waits == [2.0]


@pytest.mark.parametrize("status", [500, 502, 503, 504])
async def test_server_errors_are_retried(status: int) -> None:
    handler, sent = scripted(error(status), error(status), ok())
    assert (await provider(handler).generate([user("hi")], GenerateConfig())).text == "Paris"
    assert len(sent) == 3


@pytest.mark.parametrize(
    "failure",
    [
        httpx.ReadTimeout("read timed out"),
        httpx.RemoteProtocolError("peer closed connection without sending complete message body"),
        httpx.ReadError("connection reset"),
        httpx.Response(200, text="<html>Bad Gateway</html>"),
        httpx.Response(200, text='{"choices": [{"message": {"content": "Par'),
        httpx.Response(200, json={"object": "list"}),
    ],
    ids=["timeout", "truncated", "reset", "html", "cut-json", "no-choices"],
)
async def test_transient_failures_are_retried(failure: httpx.Response | Exception) -> None:
    handler, sent = scripted(failure, ok())
    assert (await provider(handler).generate([user("hi")], GenerateConfig())).text == "Paris"
    assert len(sent) == 2


async def test_retry_budget_exhausted_names_attempts_and_cause() -> None:
    handler, sent = scripted(*[error(503, "overloaded")] * 3)
    model = provider(handler, max_retries=2)
    with pytest.raises(ModelError, match=r"gave up after 3 attempts; last error: HTTP 503: overloaded"):
        await model.generate([user("hi")], GenerateConfig())
    assert len(sent) == 3
    assert isinstance(model.retry, RecordingRetry) and len(model.retry.waits) == 2
    assert all(0 <= w <= c for w, c in zip(model.retry.waits, [0.5, 1.0], strict=True))


@pytest.mark.parametrize("status", [400, 401, 403, 422])
async def test_client_errors_are_not_retried(status: int) -> None:
    handler, sent = scripted(error(status, "bad field 'temperature'"))
    with pytest.raises(ModelError, match=rf"HTTP {status}: bad field 'temperature'") as caught:
        await provider(handler).generate([user("hi")], GenerateConfig())
    assert len(sent) == 1
    assert not isinstance(caught.value, ModelUnavailableError)
    assert ("OPENAI_API_KEY" in str(caught.value)) == (status in (401, 403))


@pytest.mark.parametrize(
    "response",
    [
        error(404, "Not Found"),
        error(400, "The model `qwen` does not exist."),
        error(400, "model 'qwen' not found, try pulling it first"),
    ],
)
async def test_unknown_model_is_unavailable(response: httpx.Response) -> None:
    handler, sent = scripted(response)
    with pytest.raises(ModelUnavailableError, match=r"does not serve model 'qwen'"):
        await provider(handler).generate([user("hi")], GenerateConfig())
    assert len(sent) == 1


async def test_refused_connection_before_any_answer_is_unavailable_at_once() -> None:
    handler, sent = scripted(httpx.ConnectError("All connection attempts failed"))
    with pytest.raises(ModelUnavailableError, match=r"http://llm.test/v1.*ebmeval serve-model"):
        await provider(handler).generate([user("hi")], GenerateConfig())
    assert len(sent) == 1


async def test_refused_connection_after_an_answer_is_retried() -> None:
    handler, sent = scripted(ok(), httpx.ConnectError("refused"), ok())
    model = provider(handler)
    await model.generate([user("hi")], GenerateConfig())
    assert (await model.generate([user("hi")], GenerateConfig())).text == "Paris"
    assert len(sent) == 3


async def test_unreachable_real_port_fails_fast() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    model = OpenAICompatibleModel("qwen", f"http://127.0.0.1:{port}/v1")
    start = time.monotonic()
    with pytest.raises(ModelUnavailableError, match=rf"127.0.0.1:{port}/v1"):
        await model.generate([user("hi")], GenerateConfig())
    assert time.monotonic() - start < 2.0
    await model.aclose()


# --- the registered factory --------------------------------------------------------------------


def test_spec_splits_model_and_url() -> None:
    api = openai_compatible("org/model@v2@https://user:pw@host.example/v1/")
    assert isinstance(api, OpenAICompatibleModel)
    assert api.model == "org/model@v2" and api.base_url == "https://user:pw@host.example/v1"
    assert api.name == "openai-compatible/org/model@v2"
    assert api.describe() == {"name": api.name, "base_url": api.base_url}
    assert api.max_concurrency == 16 and api.timeout == 120.0 and api.retry.max_retries == 6


def test_options_are_validated_and_coerced() -> None:
    api = openai_compatible("m", base_url="http://h:1/v1", max_concurrency="4", timeout=5, max_retries=0)
    assert isinstance(api, OpenAICompatibleModel)
    assert (api.max_concurrency, api.timeout, api.retry.max_retries) == (4, 5.0, 0)
    with pytest.raises(ConfigError, match="max_concurrency"):
        openai_compatible("m@http://h:1/v1", max_concurrency=0)
    with pytest.raises(ConfigError, match="timeout"):
        openai_compatible("m@http://h:1/v1", timeout="soon")
    with pytest.raises(ConfigError, match="'api_kye'.*known: base_url"):
        openai_compatible("m@http://h:1/v1", api_kye="X")


def test_spec_without_url_explains_the_format() -> None:
    with pytest.raises(UsageError, match=r"openai-compatible:<model>@<base_url>"):
        openai_compatible("gpt-4o")
    with pytest.raises(ConfigError, match="base_url"):
        openai_compatible("m", base_url="ftp://h/v1")


def test_named_key_variable_must_be_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MY_GATEWAY_KEY", raising=False)
    with pytest.raises(ConfigError, match=r"\$MY_GATEWAY_KEY is not set"):
        openai_compatible("m@http://h:1/v1", api_key_env="MY_GATEWAY_KEY")
