import asyncio
import json
import random
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import TracebackType

import pytest
from aiohttp import web

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
    """Records each wait the policy asks for, calls the hooks, then does not wait."""

    waits: list[float] = field(default_factory=list)
    on_wait: list[Callable[[], None]] = field(default_factory=list)

    def delay(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        self.waits.append(super().delay(attempt, retry_after, rng))
        for hook in self.on_wait:
            hook()
        return 0.0


Step = Callable[[web.BaseRequest], Awaitable[web.StreamResponse]]


@dataclass(frozen=True)
class Sent:
    """One request the stub server received."""

    path: str
    headers: dict[str, str]
    """Lower-cased names."""
    body: bytes


class StubServer:
    """A chat-completions server on 127.0.0.1 that answers (or fails) request *i* with step *i*."""

    def __init__(self, *steps: Step) -> None:
        self.sent: list[Sent] = []
        self._steps = list(steps)

    async def __aenter__(self) -> "StubServer":
        self._runner = web.ServerRunner(web.Server(self._handle))
        await self._runner.setup()
        self._listener = await asyncio.get_running_loop().create_server(self._runner.server, "127.0.0.1", 0)
        self.port: int = self._listener.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        return self

    async def __aexit__(self, *_exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self._listener.close()
        await self._runner.cleanup()

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        headers = {name.lower(): value for name, value in request.headers.items()}
        self.sent.append(Sent(request.path, headers, await request.read()))
        return await self._steps.pop(0)(request)

    async def refuse_connections(self) -> None:
        """Keep the port bound but stop listening, so new connections are refused."""
        self._listener.close()
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", self.port))
        loop = asyncio.get_running_loop()
        self._listener = await loop.create_server(self._runner.server, sock=sock, start_serving=False)

    def accept_connections(self) -> None:
        """Listen again (from synchronous code running in the loop)."""
        self._starting = asyncio.get_running_loop().create_task(self._listener.start_serving())


def provider(server: StubServer, *, max_retries: int = 6, **kwargs: object) -> OpenAICompatibleModel:
    return OpenAICompatibleModel(
        "qwen",
        server.url,
        retry=RecordingRetry(max_retries=max_retries, backoff_base=0.5, backoff_cap=8.0),
        **kwargs,  # type: ignore[arg-type]
    )


def reply(status: int, body: bytes, *, delay: float = 0.0, close: bool = False, **headers: str) -> Step:
    async def answer(_request: web.BaseRequest) -> web.StreamResponse:
        await asyncio.sleep(delay)
        response = web.Response(status=status, body=body, headers=headers, content_type="application/json")
        if close:
            response.force_close()
        return response

    return answer


def ok(body: object = None, *, delay: float = 0.0, close: bool = False) -> Step:
    return reply(200, json.dumps(completion() if body is None else body).encode(), delay=delay, close=close)


def error(status: int, message: str = "boom", **headers: str) -> Step:
    return reply(status, json.dumps({"error": {"message": message}}).encode(), **headers)


async def truncated(request: web.BaseRequest) -> web.StreamResponse:
    """Headers promising the whole body, half of it, then the connection closes."""
    body = json.dumps(completion()).encode()
    head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    assert request.transport is not None
    request.transport.write(head.encode() + body[: len(body) // 2])
    request.transport.close()
    return web.Response()


async def disconnected(request: web.BaseRequest) -> web.StreamResponse:
    """The connection closes without an answer."""
    assert request.transport is not None
    request.transport.close()
    return web.Response()


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


def test_response_schema_is_sent_as_json_schema_response_format() -> None:
    schema = {"type": "object", "properties": {"score": {"type": "integer"}}, "required": ["score"]}
    body = chat_request([user("hi")], GenerateConfig(response_schema=schema))
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "reply", "strict": True, "schema": schema},
    }


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


# --- the provider against a stub server --------------------------------------------------------


async def test_request_carries_model_seed_and_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    async with StubServer(ok()) as server:
        model = provider(server)
        output = await model.generate([user("Capital of France?")], GenerateConfig(seed=3, max_tokens=4))
        await model.aclose()
    assert output.text == "Paris" and output.model == "openai-compatible/qwen"
    assert output.latency > 0
    assert server.sent[0].path == "/v1/chat/completions"
    body = json.loads(server.sent[0].body)
    assert body["model"] == "qwen" and body["seed"] == 3 and body["max_tokens"] == 4
    assert server.sent[0].headers["authorization"] == "Bearer sk-test"
    assert server.sent[0].headers["content-type"] == "application/json"


async def test_no_key_sends_no_authorization(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    async with StubServer(ok()) as server:
        model = provider(server)
        await model.generate([user("hi")], GenerateConfig())
        await model.aclose()
    assert "authorization" not in server.sent[0].headers


async def test_config_timeout_overrides_the_default() -> None:
    async with StubServer(ok(delay=0.3), ok(delay=0.3)) as server:
        model = provider(server, timeout=30.0, max_retries=0)
        assert (await model.generate([user("hi")], GenerateConfig())).text == "Paris"
        with pytest.raises(ModelError, match=r"gave up after 1 attempt; last error: no answer within 0.1 s"):
            await model.generate([user("hi")], GenerateConfig(timeout=0.1))
        await model.aclose()


async def test_calls_beyond_the_pool_queue_without_timing_out() -> None:
    # Three calls through one connection, each answered after 0.2 s: the third waits 0.4 s
    # for the connection, which must not count against its 0.3 s timeout.
    async with StubServer(*[ok(delay=0.2)] * 3) as server:
        model = provider(server, max_concurrency=1, timeout=0.3, max_retries=0)
        outputs = await asyncio.gather(*(model.generate([user("hi")], GenerateConfig()) for _ in range(3)))
        await model.aclose()
    assert [o.text for o in outputs] == ["Paris"] * 3 and len(server.sent) == 3


async def test_429_with_retry_after_then_success() -> None:
    async with StubServer(error(429, "slow down", **{"Retry-After": "2"}), ok()) as server:
        model = provider(server)
        output = await model.generate([user("hi")], GenerateConfig())
        await model.aclose()
    assert output.text == "Paris" and len(server.sent) == 2
    assert isinstance(model.retry, RecordingRetry) and model.retry.waits == [2.0]


@pytest.mark.parametrize("status", [500, 502, 503, 504])
async def test_server_errors_are_retried(status: int) -> None:
    async with StubServer(error(status), error(status), ok()) as server:
        model = provider(server)
        assert (await model.generate([user("hi")], GenerateConfig())).text == "Paris"
        await model.aclose()
    assert len(server.sent) == 3


@pytest.mark.parametrize(
    ("failure", "cause"),
    [
        (ok(delay=1.0), "no answer within 0.2 s"),
        (truncated, "connection broken"),
        (disconnected, "connection broken"),
        (reply(200, b"<html>Bad Gateway</html>"), "malformed response body"),
        (reply(200, b'{"choices": [{"message": {"content": "Par'), "malformed response body"),
        (ok({"object": "list"}), "malformed response body .*no 'choices'"),
    ],
    ids=["timeout", "truncated", "disconnected", "html", "cut-json", "no-choices"],
)
async def test_transient_failures_are_retried(failure: Step, cause: str) -> None:
    async with StubServer(failure, ok(), failure) as server:
        model = provider(server, timeout=0.2)
        assert (await model.generate([user("hi")], GenerateConfig())).text == "Paris"
        assert len(server.sent) == 2
        once = provider(server, timeout=0.2, max_retries=0)
        with pytest.raises(ModelError, match=rf"gave up after 1 attempt; last error: {cause}"):
            await once.generate([user("hi")], GenerateConfig())
        await model.aclose()
        await once.aclose()


async def test_retry_budget_exhausted_names_attempts_and_cause() -> None:
    async with StubServer(*[error(503, "overloaded")] * 3) as server:
        model = provider(server, max_retries=2)
        with pytest.raises(ModelError, match=r"gave up after 3 attempts; last error: HTTP 503: overloaded"):
            await model.generate([user("hi")], GenerateConfig())
        await model.aclose()
    assert len(server.sent) == 3
    assert isinstance(model.retry, RecordingRetry) and len(model.retry.waits) == 2
    assert all(0 <= w <= c for w, c in zip(model.retry.waits, [0.5, 1.0], strict=True))


async def test_a_body_that_is_not_json_is_quoted_in_the_error() -> None:
    async with StubServer(reply(503, b"upstream connect error")) as server:
        model = provider(server, max_retries=0)
        with pytest.raises(ModelError, match=r"last error: HTTP 503: upstream connect error$"):
            await model.generate([user("hi")], GenerateConfig())
        await model.aclose()


@pytest.mark.parametrize("status", [400, 401, 403, 422])
async def test_client_errors_are_not_retried(status: int) -> None:
    async with StubServer(error(status, "bad field 'temperature'")) as server:
        model = provider(server)
        with pytest.raises(ModelError, match=rf"HTTP {status}: bad field 'temperature'") as caught:
            await model.generate([user("hi")], GenerateConfig())
        await model.aclose()
    assert len(server.sent) == 1
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
async def test_unknown_model_is_unavailable(response: Step) -> None:
    async with StubServer(response) as server:
        model = provider(server)
        with pytest.raises(ModelUnavailableError, match=r"does not serve model 'qwen'"):
            await model.generate([user("hi")], GenerateConfig())
        await model.aclose()
    assert len(server.sent) == 1


async def test_unreachable_server_is_unavailable_at_once() -> None:
    with socket.socket() as bound:
        # Bound but not listening: connecting is refused, and no other process can take the port.
        bound.bind(("127.0.0.1", 0))
        port = bound.getsockname()[1]
        model = OpenAICompatibleModel("qwen", f"http://127.0.0.1:{port}/v1")
        start = time.monotonic()
        with pytest.raises(ModelUnavailableError, match=rf"127.0.0.1:{port}/v1.*ebmeval serve-model"):
            await model.generate([user("hi")], GenerateConfig())
        assert time.monotonic() - start < 2.0
        await model.aclose()


async def test_refused_connection_after_an_answer_is_retried() -> None:
    async with StubServer(ok(close=True), ok()) as server:
        model = provider(server)
        await model.generate([user("hi")], GenerateConfig())
        await server.refuse_connections()
        once = provider(server, max_retries=0)
        once._reached = True  # as if it had been answered before, like `model`
        with pytest.raises(ModelError, match=r"last error: connection failed") as caught:
            await once.generate([user("hi")], GenerateConfig())
        assert not isinstance(caught.value, ModelUnavailableError)
        # The first retry finds the server listening again.
        assert isinstance(model.retry, RecordingRetry)
        model.retry.on_wait.append(server.accept_connections)
        assert (await model.generate([user("hi")], GenerateConfig())).text == "Paris"
        await model.aclose()
        await once.aclose()
    assert len(server.sent) == 2 and len(model.retry.waits) == 1


async def test_a_model_reused_under_a_new_event_loop_reconnects() -> None:
    async with StubServer(ok(), ok()) as server:
        model = provider(server)
        await model.generate([user("hi")], GenerateConfig())

        def second_run() -> str:
            return asyncio.run(model.generate([user("hi")], GenerateConfig())).text

        # A second asyncio.run, as a second `ebmeval.runner.run` with the same models does.
        assert await asyncio.to_thread(second_run) == "Paris"
        await model.aclose()
    assert len(server.sent) == 2


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


async def test_a_tokenizer_probe_that_counts_nothing_is_not_taken() -> None:
    # llama.cpp answers vLLM's body ({"model", "prompt"}) with {"tokens": []}: no tokenizer, not zero tokens
    async with StubServer(
        ok({"data": [{"id": "qwen", "meta": {"n_ctx_train": 4096}}]}),
        ok({"tokens": []}),
        ok({"tokens": [64, 293]}),
        ok({"tokens": [64, 293, 272]}),
    ) as server:
        api = provider(server)
        await api.prepare()
        assert await asyncio.to_thread(api.count_tokens, "a b c") == 3
    probes = [json.loads(sent.body) for sent in server.sent if sent.path == "/tokenize"]
    assert probes == [{"model": "qwen", "prompt": "a b"}, {"content": "a b"}, {"content": "a b c"}]


async def test_a_server_whose_tokenizer_counts_nothing_keeps_the_estimate() -> None:
    async with StubServer(ok({"count": 0}), ok({"tokens": []})) as server:
        api = provider(server, context_length=4096)
        await api.prepare()
        assert api.count_tokens("one two three four") > 0  # estimated, no request
    assert [sent.path for sent in server.sent] == ["/tokenize", "/tokenize"]
