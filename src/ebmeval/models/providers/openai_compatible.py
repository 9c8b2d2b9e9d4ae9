"""Models behind any server that speaks the OpenAI chat-completions API.

That covers vLLM, SGLang, the llama.cpp server (``ebmeval serve-model``), OpenAI itself and
most gateways. Transient failures (HTTP 429/500/502/503/504, timeouts, broken connections,
truncated or non-JSON bodies) are retried with exponential backoff and full jitter,
honouring ``Retry-After``; everything else fails at once with the server's message.

The request and response conversions here are shared with the in-process llama.cpp
provider, which returns the same format.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import json
import os
import random
import re
import time
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote, urlsplit

import aiohttp
import httpx

from ..._util.errors import ConfigError, EndpointError, ModelError, ModelUnavailableError, UsageError
from .._api import ModelAPI, modelapi
from .._types import ChatMessage, GenerateConfig, ModelOutput, TokenLogprob, TopLogprob, Usage, user

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
"""HTTP statuses that mean "try again later"."""

_CONNECT_TIMEOUT = 10.0
_DOWN_S = 1.0
_DOWN_MAX_S = 30.0
_MODEL_MISSING = re.compile(r"not found|does not exist|not exist|unknown model|no such model", re.IGNORECASE)


class MalformedResponseError(ValueError):
    """A response that is not a usable chat completion."""


def chat_request(
    messages: Sequence[ChatMessage],
    config: GenerateConfig,
    *,
    max_tokens_field: str = "max_tokens",
    omit_temperature: bool = False,
    penalty_field: str | None = "repetition_penalty",
) -> dict[str, Any]:
    """The body of a chat-completions request, without the ``model`` field.

    Settings left at ``None`` are not sent, so the server's defaults apply. Reasoning models
    that refuse ``max_tokens`` and a temperature (o-series, gpt-oss on some gateways) take
    ``max_tokens_field="max_completion_tokens"`` and ``omit_temperature``. A repetition penalty
    goes in ``penalty_field`` (``repeat_penalty`` for llama.cpp); ``None`` means the server
    takes none, and a config that sets one is refused with a :class:`ConfigError` naming it.
    """
    body: dict[str, Any] = {"messages": [{"role": m.role, "content": m.content} for m in messages]}
    if config.temperature is not None and not omit_temperature:
        body["temperature"] = config.temperature
    if config.top_p is not None:
        body["top_p"] = config.top_p
    if config.repetition_penalty is not None:
        if penalty_field is None:
            raise ConfigError(
                "repetition_penalty",
                "this server takes no repetition penalty; leave it unset, or name the server's field with "
                "the provider option penalty_field=repetition_penalty|repeat_penalty",
            )
        body[penalty_field] = config.repetition_penalty
    if config.max_tokens is not None:
        body[max_tokens_field] = config.max_tokens
    if config.reasoning_effort is not None:
        body["reasoning_effort"] = config.reasoning_effort
    if config.stop:
        body["stop"] = list(config.stop)
    if config.seed is not None:
        body["seed"] = config.seed
    if config.logprobs:
        body["logprobs"] = True
        if config.top_logprobs is not None:
            body["top_logprobs"] = config.top_logprobs
    if config.response_schema is not None:
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "reply", "strict": True, "schema": config.response_schema},
        }
    return body


def parse_chat_response(data: Any, model: str, latency: float) -> ModelOutput:
    """Convert a chat-completions response body to a :class:`ModelOutput`.

    A reasoning model's trace (``reasoning_content`` or ``reasoning`` of the message) is kept
    in ``ModelOutput.reasoning``, apart from the answer.

    Args:
        data: The decoded JSON body.
        model: The provider-qualified name recorded in the output.
        latency: Seconds the call took.

    Raises:
        MalformedResponseError: ``data`` has no first choice with a message, or holds an error object.
    """
    if not isinstance(data, dict):
        raise MalformedResponseError(f"expected a JSON object, got {type(data).__name__}")
    if data.get("error") is not None:
        raise MalformedResponseError(f"the server answered with an error: {error_message(data)}")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        reported = error_message(data)
        raise MalformedResponseError(reported or "the response has no 'choices'")
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, dict):
        raise MalformedResponseError("the first choice has no 'message'")
    usage = data.get("usage")
    if not isinstance(usage, dict):
        usage = {}
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    served = data.get("model")
    return ModelOutput(
        text=message.get("content") or "",
        reasoning=reasoning if isinstance(reasoning, str) and reasoning else None,
        model=model,
        logprobs=_parse_logprobs(choice.get("logprobs")),
        usage=Usage(
            input_tokens=int(usage.get("prompt_tokens") or 0),
            output_tokens=int(usage.get("completion_tokens") or 0),
        ),
        latency=latency,
        finish_reason=choice.get("finish_reason"),
        raw=data,
        served=served if isinstance(served, str) and served else None,
    )


def _parse_logprobs(block: Any) -> list[TokenLogprob] | None:
    if not isinstance(block, dict) or not isinstance(block.get("content"), list):
        return None
    try:
        return [
            TokenLogprob(
                token=item["token"],
                logprob=float(item["logprob"]),
                top=[
                    TopLogprob(token=alt["token"], logprob=float(alt["logprob"]))
                    for alt in item.get("top_logprobs") or []
                ],
            )
            for item in block["content"]
        ]
    except (KeyError, TypeError, ValueError) as exc:
        raise MalformedResponseError(f"unreadable logprobs ({exc!r})") from None


def error_message(data: Any) -> str | None:
    """The message of an error body (``{"error": {"message": …}}``, ``{"detail": …}`` …), if any."""
    if not isinstance(data, dict):
        return None
    error = data.get("error", data.get("detail"))
    if isinstance(error, dict):
        return str(error.get("message") or error)
    if error is not None:
        return str(error)
    return None


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (seconds or an HTTP date); ``None`` if absent."""
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to wait before retrying a transient failure."""

    max_retries: int = 6
    """Retries after the first attempt."""
    backoff_base: float = 1.0
    """Seconds of the first backoff ceiling; it doubles after each attempt."""
    backoff_cap: float = 60.0
    """Longest wait, also applied to a server's ``Retry-After``."""

    def delay(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds to wait after failed attempt ``attempt`` (1-based).

        ``min(cap, retry_after)`` when the server says when to come back, else "full
        jitter": uniform in ``[0, min(cap, base · 2^(attempt-1))]``.
        """
        if retry_after is not None:
            return min(self.backoff_cap, retry_after)
        return rng.uniform(0.0, min(self.backoff_cap, self.backoff_base * 2.0 ** (attempt - 1)))


class OpenAICompatibleModel(ModelAPI):
    """One model on an OpenAI-compatible server, reached over pooled async HTTP (aiohttp)."""

    def __init__(
        self,
        model: str,
        base_url: str,
        *,
        api_key_env: str = "OPENAI_API_KEY",
        max_concurrency: int = 16,
        timeout: float = 120.0,
        retry: RetryPolicy | None = None,
        context_length: int | None = None,
        max_tokens_field: str = "max_tokens",
        omit_temperature: bool = False,
        reasoning: bool = False,
        penalty_field: str | None = None,
        headers: Mapping[str, str] | None = None,
        body: Mapping[str, Any] | None = None,
        api_key_header: str = "Authorization",
        query: str = "",
    ) -> None:
        """Create the provider; nothing is sent until the first call.

        Args:
            model: The model name the server knows.
            base_url: The API root, e.g. ``http://127.0.0.1:8080/v1``; several replicas serving the
                same model as ``URL1,URL2``: each request goes to the one with the fewest calls in
                flight (ties in turn), and a transient failure there fails over to the others
                before the attempt counts as failed.
            api_key_env: Environment variable holding the API key; unset means no key.
            max_concurrency: Connections kept open, and calls served at once, per replica (the
                model's ``max_concurrency`` is the sum over its replicas).
            timeout: Seconds per request (connecting, sending and reading the whole answer)
                unless ``GenerateConfig.timeout`` says otherwise.
            retry: Retry policy for transient failures.
            context_length: The model's context window in tokens; unset, it is read from the
                server's ``/models`` listing where the server reports one.
            max_tokens_field: ``max_tokens``, or ``max_completion_tokens`` for servers that want it.
            omit_temperature: Send no temperature (for models that accept only their default).
            reasoning: The model thinks before answering: tasks give its replies room for the trace.
            penalty_field: The request field of ``GenerateConfig.repetition_penalty``:
                ``repetition_penalty`` (vLLM, SGLang, TGI), ``repeat_penalty`` (llama.cpp) or ``none``
                (the server takes none: a run that sets one is refused). Unset: ``none`` for
                api.openai.com, ``repeat_penalty`` when :meth:`prepare` finds llama.cpp's tokenizer,
                else ``repetition_penalty``.
            headers: Extra HTTP headers sent with every request (a gateway's routing or organisation).
            body: Extra fields merged into every chat request's JSON body (``top_k``, a gateway's
                options); they can change replies, so they are part of the model's identity.
            api_key_header: The header carrying the key: ``Authorization`` (sent as ``Bearer KEY``)
                or another name, sent the key alone (Azure OpenAI's ``api-key``).
            query: A query string added to every URL (Azure OpenAI's ``api-version=…``).
        """
        _check_penalty_field(penalty_field)
        self.base_urls = _replica_urls(base_url)
        self.model = model
        self.base_url = self.base_urls[0]
        self._replicas = _Replicas(len(self.base_urls))
        self.name = f"openai-compatible/{model}"
        self.replica_concurrency = max_concurrency
        self.max_concurrency = max_concurrency * len(self.base_urls)
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self.api_key_env = api_key_env
        self.context_length = context_length
        self._window_option = context_length
        self.max_tokens_field = max_tokens_field
        self.omit_temperature = omit_temperature
        self.reasoning = reasoning
        self._penalty_option = penalty_field
        self._tokenizer: tuple[str, str] | None = None
        self._token_counts: dict[str, int] = {}
        self._api_key = os.environ.get(api_key_env) or None
        self.headers = dict(headers or {})
        self.body = dict(body or {})
        self.api_key_header = api_key_header
        self._query = f"?{query}" if query else ""
        self._http_state: _LoopSession | None = None
        self._proxy: str | None = None
        self._proxies: list[str | None] = [None] * len(self.base_urls)
        self._reached = False
        # Jitter only spreads retries in time; it never changes what is generated.
        self._rng = random.Random()

    def describe(self) -> dict[str, Any]:
        """The model name, the server and the options that change what comes back.

        One name can mean different models on different servers. A window read from the
        server (:meth:`prepare`) is the server's, so only a window given as an option counts.
        """
        described: dict[str, Any] = {"name": self.name}
        if len(self.base_urls) == 1:
            described["base_url"] = self.base_url
        else:  # replicas in any order are one model
            described["base_urls"] = sorted(self.base_urls)
        if self._window_option is not None:
            described["context_length"] = self._window_option
        if self.max_tokens_field != "max_tokens" or self.omit_temperature or self.reasoning:
            described.update(
                max_tokens_field=self.max_tokens_field, omit_temperature=self.omit_temperature, reasoning=self.reasoning
            )
        if self.body:
            described["body"] = self.body
        return described

    def check_config(self, config: GenerateConfig) -> None:
        """Refuse a repetition penalty where the server takes none, before any request."""
        if config.repetition_penalty is not None and self.penalty_field is None:
            chat_request([], config, penalty_field=None)

    @property
    def penalty_field(self) -> str | None:
        """Where a repetition penalty is sent (``None``: this server takes none); see ``penalty_field``."""
        if self._penalty_option is not None:
            return None if self._penalty_option == "none" else self._penalty_option
        if "api.openai.com" in self.base_url:
            return None
        if self._tokenizer is not None and self._tokenizer[1] == "llama.cpp":
            return "repeat_penalty"
        return "repetition_penalty"

    def _auth_headers(self) -> dict[str, str]:
        """The key's header (none without a key) and the extra headers."""
        auth: dict[str, str] = {}
        if self._api_key:
            bearer = self.api_key_header.lower() == "authorization"
            auth[self.api_key_header] = f"Bearer {self._api_key}" if bearer else self._api_key
        return {**auth, **self.headers}

    async def preflight(self, config: GenerateConfig) -> None:
        """One chat request of one token before any sample, so a run never starts against a server it cannot use.

        It is sent as the samples' requests are, with the model's settings ``config`` (temperature,
        reasoning effort …) and the provider's (headers, body fields, the Azure API version), so a
        gateway that needs one of them is not taken for unusable; only the budget is one token and
        no log-probabilities, stop sequences or response schema are asked for. An unreachable
        server, a model it does not serve and a refused API key (HTTP 401/403) raise
        :class:`EndpointError`; any other failure is left for the samples to meet and record, so
        the request is sent once, never waiting out the retries' backoff.
        """
        unasked = {"logprobs": False, "top_logprobs": None, "stop": None, "response_schema": None}
        small = config.model_copy(update={"max_tokens": 1, **unasked})
        try:
            await self._chat([user(PREFLIGHT_PROMPT)], small, attempts=1)
        except ModelUnavailableError as exc:
            raise EndpointError(f"pre-flight request failed: {exc}") from None
        except ModelError as exc:
            if re.search(r": HTTP 40[13]: ", str(exc)):
                raise EndpointError(f"pre-flight request failed: {exc}") from None

    async def prepare(self) -> None:
        """Read the context window from ``/models`` (unless given) and find a tokenizer endpoint.

        ``/models`` entries report the window as ``max_model_len`` (vLLM), ``context_length`` or
        ``context_window`` (gateways), or ``meta.n_ctx_train`` (llama.cpp). The tokenizer is
        ``POST /tokenize`` beside the API root: vLLM's (``{"model", "prompt"}`` → ``count``) or
        llama.cpp's (``{"content"}`` → ``tokens``), each taken only if it counts the probe text
        as at least one token (llama.cpp answers vLLM's body with ``{"tokens": []}``). Servers
        without either keep the estimate.
        """
        session, _slots = await self._http()
        timeout = aiohttp.ClientTimeout(total=10)
        if self.context_length is None:
            with contextlib.suppress(aiohttp.ClientError, TimeoutError, ValueError):
                async with session.get(
                    f"{self.base_url}/models{self._query}", timeout=timeout, proxy=self._proxy
                ) as response:
                    listing = json.loads(await response.read()) if response.status == 200 else {}
                self.context_length = _reported_window(listing, self.model)
        root = re.sub(r"/v1$", "", self.base_url)
        for style, body in (("vllm", {"model": self.model, "prompt": "a b"}), ("llama.cpp", {"content": "a b"})):
            with contextlib.suppress(aiohttp.ClientError, TimeoutError, ValueError):
                async with session.post(f"{root}/tokenize", json=body, timeout=timeout, proxy=self._proxy) as response:
                    reply = json.loads(await response.read()) if response.status == 200 else {}
                if _probe_count(reply) > 0:
                    self._tokenizer = (f"{root}/tokenize", style)
                    return

    def count_tokens(self, text: str) -> int:
        """Tokens ``text`` takes, from the server's tokenizer when :meth:`prepare` found one, else estimated.

        Outside an event loop only: inside one (a workflow, a notebook) a blocking request would
        stall every call in flight, so :meth:`acount_tokens` must be awaited instead.

        Raises:
            UsageError: Called inside a running event loop while a server tokenizer is in use.
            ModelError: The tokenizer failed, or counted no tokens in a non-empty text.
        """
        if self._tokenizer is None:
            return super().count_tokens(text)
        if text not in self._token_counts:
            if _loop_running():
                raise UsageError(f"{self.name}: inside an event loop count tokens with `await acount_tokens(text)`")
            url, style = self._tokenizer
            try:
                reply = httpx.post(
                    url, json=self._tokenize_body(text, style), headers=self._auth_headers(), timeout=30.0
                ).json()
            except (httpx.HTTPError, ValueError) as exc:
                raise ModelError(f"{self.name}: tokenizing at {url} failed: {exc}") from None
            self._remember_count(text, reply)
        return self._token_counts[text]

    async def acount_tokens(self, text: str) -> int:
        """:meth:`count_tokens` without blocking the event loop (the request goes over the pooled session)."""
        if self._tokenizer is None:
            return super().count_tokens(text)
        if text not in self._token_counts:
            url, style = self._tokenizer
            session, _slots = await self._http()
            try:
                body, timeout = self._tokenize_body(text, style), aiohttp.ClientTimeout(total=30)
                async with session.post(url, json=body, timeout=timeout, proxy=self._proxy) as response:
                    reply = json.loads(await response.read())
            except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
                raise ModelError(f"{self.name}: tokenizing at {url} failed: {_describe(exc)}") from None
            self._remember_count(text, reply)
        return self._token_counts[text]

    def serves(self, served: str) -> bool:
        """Whether a reply naming ``served`` comes from the model asked for.

        The same name (case aside), a dated snapshot of it (``gpt-4o`` → ``gpt-4o-2024-08-06``),
        or a model file of that name (``/models/qwen.gguf`` for ``qwen``).
        """
        asked, named = _bare_name(self.model), _bare_name(served)
        return named == asked or named.startswith(f"{asked}-")

    def _tokenize_body(self, text: str, style: str) -> dict[str, str]:
        return {"model": self.model, "prompt": text} if style == "vllm" else {"content": text}

    def _remember_count(self, text: str, reply: object) -> None:
        """Keep the count a ``/tokenize`` reply gives for ``text``; a non-empty text counted as 0 is an error."""
        count = _probe_count(reply)
        if count == 0 and text.strip():
            url = self._tokenizer[0] if self._tokenizer else "/tokenize"
            raise ModelError(
                f"{self.name}: the tokenizer at {url} counted no tokens in a non-empty text: {reply!r:.99}"
            )
        if len(self._token_counts) > 4096:
            self._token_counts.clear()
        self._token_counts[text] = count

    async def _http(self) -> tuple[aiohttp.ClientSession, list[asyncio.Semaphore]]:
        # Pooled connections belong to the event loop that opened them; a model reused
        # under a new loop (a second asyncio.run) gets a fresh session.
        loop = asyncio.get_running_loop()
        if self._http_state is not None and self._http_state.loop is loop and not self._http_state.session.closed:
            return self._http_state.session, self._http_state.slots
        await self.aclose()
        connector = aiohttp.TCPConnector(limit=self.max_concurrency, limit_per_host=self.replica_concurrency)
        session = aiohttp.ClientSession(connector=connector, headers=self._auth_headers())
        # Callers beyond a replica's pool size wait here, so waiting for a free connection
        # never counts against a request's timeout.
        slots = [asyncio.Semaphore(self.replica_concurrency) for _ in self.base_urls]
        self._http_state = _LoopSession(loop, session, slots, loop.create_task(_close_with_loop(session)))
        self._proxies = [_env_proxy(url) for url in self.base_urls]
        self._proxy = self._proxies[0]
        return session, slots

    async def generate(self, messages: Sequence[ChatMessage], config: GenerateConfig) -> ModelOutput:
        """Send one chat completion, retrying transient failures.

        Raises:
            ModelUnavailableError: The server cannot be reached, or does not serve this model.
            ModelError: The server refused the request, or every attempt failed.
        """
        return await self._chat(messages, config, attempts=self.retry.max_retries + 1)

    async def _chat(self, messages: Sequence[ChatMessage], config: GenerateConfig, *, attempts: int) -> ModelOutput:
        """One chat completion in at most ``attempts`` attempts (see :meth:`generate`)."""
        session, slots = await self._http()
        call = _Call(session, slots, self._request_data(messages, config), config.timeout or self.timeout)
        failure = _AttemptFailure()
        for attempt in range(1, attempts + 1):
            result = await self._attempt(call)
            if isinstance(result, ModelOutput):
                return result
            failure = result
            if attempt < attempts:
                await asyncio.sleep(self.retry.delay(attempt, failure.retry_after, self._rng))
        tries = f"{attempts} attempt" + ("s" if attempts > 1 else "")
        where = ", ".join(self.base_urls)
        raise ModelError(f"{self.name} at {where}: gave up after {tries}; last error: {failure.cause}")

    def _request_data(self, messages: Sequence[ChatMessage], config: GenerateConfig) -> bytes:
        """The encoded body of a chat request: the model, what ``config`` sets, then the extra ``body`` fields."""
        request = chat_request(
            messages,
            config,
            max_tokens_field=self.max_tokens_field,
            omit_temperature=self.omit_temperature,
            penalty_field=self.penalty_field,
        )
        return json.dumps({"model": self.model, **request, **self.body}).encode()

    async def _attempt(self, call: _Call) -> ModelOutput | _AttemptFailure:
        """One attempt: the replicas in turn until one answers, or what went wrong at them.

        Raises:
            ModelUnavailableError: No replica could be connected to, and none ever answered.
            ModelError: A replica refused the request in a way retrying cannot fix.
        """
        failure = _AttemptFailure()
        tried: set[int] = set()
        while len(tried) < len(self.base_urls):  # fail over through the replicas once per attempt
            index = self._replicas.pick(tried)
            tried.add(index)
            output = await self._ask_replica(call, index, failure)
            if output is not None:
                return output
        if failure.unreached == len(self.base_urls) and not self._reached:
            where = ", ".join(self.base_urls)
            raise ModelUnavailableError(
                f"Cannot reach the model server at {where} ({failure.reason}). "
                "Is it running? Start a local one with: ebmeval serve-model"
            )
        return failure

    async def _ask_replica(self, call: _Call, index: int, failure: _AttemptFailure) -> ModelOutput | None:
        """The reply of replica ``index``, or ``None`` with what went wrong noted in ``failure``."""
        at = f"{self.base_urls[index]}: " if len(self.base_urls) > 1 else ""  # with one server, messages name none
        try:
            response, body, latency = await self._post(call, index)
        except (aiohttp.ClientError, TimeoutError) as exc:
            failure.note_transport(at, exc, call.seconds)
            self._replicas.mark_down(index)
            return None
        self._replicas.answered(index)
        self._reached = True
        if response.status == 200:
            try:
                return parse_chat_response(json.loads(body), self.name, latency)
            except ValueError as exc:  # includes JSONDecodeError and MalformedResponseError
                failure.cause = f"{at}malformed response body ({exc})"
        elif response.status in RETRY_STATUSES:
            failure.cause = f"{at}HTTP {response.status}: {_response_message(response, body)}"
            failure.retry_after = parse_retry_after(response.headers.get("Retry-After"))
        else:
            raise self._refusal(response, body, self.base_urls[index])
        return None

    async def _post(self, call: _Call, index: int) -> tuple[aiohttp.ClientResponse, bytes, float]:
        """Send ``call`` to replica ``index`` once it has a free slot: the response, its body, the seconds taken.

        Raises:
            aiohttp.ClientError, TimeoutError: No complete response came back.
        """
        self._replicas.in_flight[index] += 1
        try:
            async with call.slots[index]:
                start = time.monotonic()
                async with call.session.post(
                    f"{self.base_urls[index]}/chat/completions{self._query}",
                    data=call.data,
                    headers=_JSON,
                    timeout=call.timeout,
                    proxy=self._proxies[index],
                ) as response:
                    body = await response.read()
                return response, body, time.monotonic() - start
        finally:
            self._replicas.in_flight[index] -= 1

    def _refusal(self, response: aiohttp.ClientResponse, body: bytes, base_url: str) -> ModelError:
        """The error for a response that retrying cannot fix, from the replica at ``base_url``."""
        status = response.status
        message = _response_message(response, body).rstrip(".")
        listing = f"Its models are listed at {base_url}/models."
        if status == 400 and self.model in message and _MODEL_MISSING.search(message):
            return ModelUnavailableError(
                f"The server at {base_url} does not serve model '{self.model}' (HTTP 400: {message}). {listing}"
            )
        if status == 404:
            return ModelUnavailableError(
                f"The server at {base_url} does not serve model '{self.model}', or has no chat API "
                f"at {base_url}/chat/completions (HTTP 404: {message}). {listing} "
                "The base URL usually ends in /v1."
            )
        hint = _option_hint(message)
        if status in (401, 403):
            hint = f" Check the API key in ${self.api_key_env}" + ("" if self._api_key else " (it is not set)") + "."
        return ModelError(f"{self.name} at {base_url}: HTTP {status}: {message}.{hint}")

    async def aclose(self) -> None:
        """Close pooled connections."""
        state, self._http_state = self._http_state, None
        if state is None or state.loop.is_closed():
            return  # closed with its loop already
        if state.loop is asyncio.get_running_loop():
            state.closer.cancel()
            await state.session.close()
        else:
            state.loop.call_soon_threadsafe(state.closer.cancel)


@dataclass(frozen=True)
class _LoopSession:
    """An HTTP session and what goes with it, all bound to one event loop."""

    loop: asyncio.AbstractEventLoop
    session: aiohttp.ClientSession
    slots: list[asyncio.Semaphore]
    closer: asyncio.Task[None]


async def _close_with_loop(session: aiohttp.ClientSession) -> None:
    """Wait until cancelled, then close ``session``.

    ``asyncio.run`` cancels the tasks left when its coroutine returns and lets them finish,
    so a session no one closed is still closed, with its sockets, before its loop ends.
    """
    try:
        await asyncio.get_running_loop().create_future()
    finally:
        await session.close()


def _check_penalty_field(penalty_field: str | None) -> None:
    """Refuse a ``penalty_field`` option that names no known request field."""
    if penalty_field not in (None, "repetition_penalty", "repeat_penalty", "none"):
        raise ConfigError("penalty_field", f"must be repetition_penalty, repeat_penalty or none, not {penalty_field!r}")


def _replica_urls(base_url: str) -> list[str]:
    """The API roots named in ``base_url`` (``URL`` or ``URL1,URL2``), without trailing slashes.

    Raises:
        ConfigError: A root that is not an http(s) URL, or one named twice.
    """
    urls = [url.strip().rstrip("/") for url in base_url.split(",")] if "," in base_url else [base_url]
    for url in urls:
        if not url.startswith(("http://", "https://")):
            raise ConfigError("base_url", f"must start with http:// or https://, got {url!r}")
    if len(set(urls)) != len(urls):
        raise ConfigError("base_url", f"names a replica twice: {base_url!r}")
    return [url.rstrip("/") for url in urls]


class _Replicas:
    """How busy and how healthy each replica of a model is, to choose where the next request goes."""

    def __init__(self, count: int) -> None:
        self.in_flight = [0] * count
        """Calls each replica is serving now."""
        self.down_until = [0.0] * count
        """``time.monotonic()`` until which a replica whose connection failed is tried only as a last resort."""
        self.failures = [0] * count
        """Connection failures of each replica since it last answered."""
        self._turn = 0

    def pick(self, tried: set[int]) -> int:
        """The untried replica with the fewest calls in flight, ties broken in turn (round-robin).

        A replica marked down (:meth:`mark_down`) is picked only when every untried one is down.
        """
        count = len(self.in_flight)
        self._turn = (self._turn + 1) % count
        now = time.monotonic()
        return min(
            (i for i in range(count) if i not in tried),
            key=lambda i: (self.down_until[i] > now, self.in_flight[i], (i - self._turn) % count),
        )

    def mark_down(self, index: int) -> None:
        """Try replica ``index`` last for a while: 1 s after its first failure, doubling up to 30 s.

        Its next answer clears the mark (:meth:`answered`). With one replica nothing changes: it is always tried.
        """
        self.failures[index] += 1
        pause = min(_DOWN_MAX_S, _DOWN_S * 2 ** (self.failures[index] - 1))
        self.down_until[index] = time.monotonic() + pause

    def answered(self, index: int) -> None:
        """Replica ``index`` answered: clear its failures and its mark."""
        self.failures[index], self.down_until[index] = 0, 0.0


@dataclass(frozen=True)
class _Call:
    """One chat request as each attempt sends it: the pooled session and slots, the encoded body, its time limit."""

    session: aiohttp.ClientSession
    slots: list[asyncio.Semaphore]
    data: bytes
    seconds: float

    @property
    def timeout(self) -> aiohttp.ClientTimeout:
        """The whole request within ``seconds``, connecting within at most 10 s of them."""
        return aiohttp.ClientTimeout(total=self.seconds, connect=min(self.seconds, _CONNECT_TIMEOUT))


@dataclass
class _AttemptFailure:
    """What went wrong in one attempt over the replicas."""

    cause: str = ""
    """The failure of the replica tried last, as the final error quotes it."""
    retry_after: float | None = None
    """The wait the last ``Retry-After`` header of a replica asked for."""
    unreached: int = 0
    """Replicas that could not be connected to."""
    reason: str = ""
    """Why the last of them could not be."""

    def note_transport(self, at: str, exc: aiohttp.ClientError | TimeoutError, seconds: float) -> None:
        """Note a request that got no complete response (``at`` names the replica, ``seconds`` was its limit)."""
        if isinstance(exc, aiohttp.ClientConnectorError | aiohttp.ConnectionTimeoutError):
            self.unreached += 1
            self.reason = _describe(exc)
            self.cause = f"{at}connection failed ({self.reason})"
        elif isinstance(exc, TimeoutError):  # asyncio.TimeoutError and aiohttp.ServerTimeoutError
            self.cause = f"{at}no answer within {seconds:g} s"
        else:  # payload errors, disconnects, resets, protocol errors
            self.cause = f"{at}connection broken ({_describe(exc)})"


_JSON = {"Content-Type": "application/json"}


def _env_proxy(url: str) -> str | None:
    """The proxy ``$HTTP_PROXY``/``$HTTPS_PROXY`` name for ``url``, unless ``$NO_PROXY`` exempts its host."""
    parts = urlsplit(url)
    if parts.hostname and urllib.request.proxy_bypass(parts.hostname):
        return None
    return urllib.request.getproxies().get(parts.scheme)


def _response_message(response: aiohttp.ClientResponse, body: bytes) -> str:
    try:
        message = error_message(json.loads(body))
    except ValueError:
        message = None
    text = message or body.decode("utf-8", errors="replace").strip() or response.reason or f"HTTP {response.status}"
    return text if len(text) <= 500 else text[:499] + "…"


def _reported_window(listing: Any, model: str) -> int | None:
    """The context window a ``/models`` listing reports for ``model`` (or its only model), if any."""
    entries = listing.get("data") if isinstance(listing, dict) else None
    if not isinstance(entries, list):
        return None
    chosen = [e for e in entries if isinstance(e, dict) and e.get("id") == model] or (
        entries if len(entries) == 1 else []
    )
    for entry in chosen:
        if not isinstance(entry, dict):
            continue
        meta = entry.get("meta")
        meta = meta if isinstance(meta, dict) else {}
        for value in (entry.get("max_model_len"), entry.get("context_length"), entry.get("context_window")):
            if isinstance(value, int) and value > 0:
                return value
        for value in (meta.get("n_ctx"), meta.get("n_ctx_train")):
            if isinstance(value, int) and value > 0:
                return value
    return None


def _option_hint(message: str) -> str:
    """The provider option a refusing server's message points to, as a hint for the user."""
    lowered = message.lower()
    if "max_completion_tokens" in lowered or ("max_tokens" in lowered and "not supported" in lowered):
        return " This model takes max_completion_tokens: --model-arg max_tokens_field=max_completion_tokens."
    if "temperature" in lowered and ("unsupported" in lowered or "not support" in lowered or "default" in lowered):
        return " This model accepts only its default temperature: --model-arg omit_temperature=true."
    if "context length" in lowered or "context_length" in lowered or "maximum context" in lowered:
        return " Give the model's window with --model-arg context_length=N so long inputs are fitted to it."
    return ""


def _bare_name(name: str) -> str:
    """A model name as :meth:`OpenAICompatibleModel.serves` compares it: lower case, no folder, no ``.gguf``."""
    base = name.strip().replace("\\", "/").rsplit("/", 1)[-1].lower() if name.strip().endswith(".gguf") else name
    return base.strip().lower().removesuffix(".gguf")


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _describe(exc: Exception) -> str:
    return str(exc) or type(exc).__name__


def int_option(field: str, value: object, *, minimum: int) -> int:
    """An integer provider option (a numeric string is accepted); ``ConfigError`` otherwise."""
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(field, f"must be an integer ≥ {minimum}, got {value!r}")
    return value


def float_option(field: str, value: object, *, minimum: float) -> float:
    """A number provider option (a numeric string is accepted); ``ConfigError`` otherwise."""
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            pass
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= minimum:
        raise ConfigError(field, f"must be a number ≥ {minimum:g}, got {value!r}")
    return float(value)


def bool_option(field: str, value: object) -> bool:
    """A yes/no provider option (``true``/``false``, ``yes``/``no``, ``1``/``0`` as text too)."""
    if isinstance(value, bool):
        return value
    word = str(value).strip().lower()
    if word in ("true", "yes", "1", "on"):
        return True
    if word in ("false", "no", "0", "off"):
        return False
    raise ConfigError(field, f"must be true or false, got {value!r}")


def reject_unknown(provider: str, options: Mapping[str, object], known: Sequence[str]) -> None:
    """Raise ``ConfigError`` for the first option a provider does not take."""
    for key in options:
        raise ConfigError(key, f"unknown option for model provider '{provider}'; known: {', '.join(known)}")


# The model name ends at the first "@" that starts a URL; a URL may itself hold an "@".
_SPEC = re.compile(r"^(?P<model>.*?)@(?P<url>https?://.*)$")


PREFLIGHT_PROMPT = "Reply with OK."
"""The one-token request sent to each endpoint before a run's first sample."""

KNOWN_OPTIONS = (
    "base_url",
    "api_key_env",
    "max_concurrency",
    "timeout",
    "max_retries",
    "backoff_base",
    "backoff_cap",
    "context_length",
    "max_tokens_field",
    "omit_temperature",
    "reasoning",
    "headers",
    "body",
    "penalty_field",
)
"""Options every OpenAI-style provider takes."""


@modelapi("openai-compatible")
def openai_compatible(name: str, **options: object) -> ModelAPI:
    """``openai-compatible:<model>@<base_url>``, e.g. ``openai-compatible:qwen@http://127.0.0.1:8080/v1``.

    Replicas serving one model are named together, comma-separated:
    ``openai-compatible:qwen@http://node1:8080/v1,http://node2:8080/v1`` (or ``base_url=URL1,URL2``);
    requests are spread over them, each with its own ``max_concurrency``, and fail over between them.

    Options: ``base_url`` (instead of ``@<base_url>``), ``api_key_env`` (default
    ``OPENAI_API_KEY``; no key is fine for local servers), ``max_concurrency`` (16),
    ``timeout`` (120 s), ``max_retries`` (6), ``backoff_base`` (1 s), ``backoff_cap`` (60 s),
    ``context_length`` (the window; default: what ``/models`` reports), ``max_tokens_field``
    (``max_tokens`` or ``max_completion_tokens``), ``omit_temperature``, ``reasoning``
    (a thinking model: replies get room for the trace), ``penalty_field`` (where a repetition
    penalty goes: ``repetition_penalty``, ``repeat_penalty`` or ``none``), ``headers`` (extra
    HTTP headers, a mapping; a value ``$NAME`` is read from that environment variable, so no
    secret is stored) and ``body`` (extra JSON fields of every request, part of the model's identity).
    """
    match = _SPEC.match(name)
    model, base_url = (match["model"], match["url"]) if match else (name, None)
    base_url = str(options.pop("base_url", None) or base_url or "")
    if not model or not base_url:
        raise UsageError(
            f"Model spec 'openai-compatible:{name}' needs a model and a server: "
            "openai-compatible:<model>@<base_url>, e.g. openai-compatible:qwen@http://127.0.0.1:8080/v1"
        )
    return _build(model, base_url, "openai-compatible", options)


@modelapi("openai")
def openai(name: str, **options: object) -> ModelAPI:
    """``openai/<model>`` (the naming of inspect_ai and LiteLLM): OpenAI, or the server in ``$OPENAI_BASE_URL``.

    ``openai/<model>@<base_url>`` or ``base_url=`` name another OpenAI-compatible server; the
    options are those of ``openai-compatible``.
    """
    match = _SPEC.match(name)
    model, base_url = (match["model"], match["url"]) if match else (name, None)
    url = str(options.pop("base_url", None) or base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_URL)
    if not model:
        raise UsageError("Model spec 'openai/' needs a model name, e.g. openai/gpt-4o-mini")
    return _build(model, url, "openai", options)


@modelapi("azure-openai")
def azure_openai(name: str, **options: object) -> ModelAPI:
    """``azure-openai:<deployment>@https://<resource>.openai.azure.com`` (or ``$AZURE_OPENAI_ENDPOINT``).

    Requests go to the deployment's URL with ``api-version`` (option ``api_version``, default
    ``AZURE_API_VERSION``) and the key in the ``api-key`` header, read from ``api_key_env``
    (default ``AZURE_OPENAI_API_KEY``); the other options are those of ``openai-compatible``.
    """
    match = _SPEC.match(name)
    deployment, endpoint = (match["model"], match["url"]) if match else (name, None)
    endpoint = str(options.pop("base_url", None) or endpoint or os.environ.get("AZURE_OPENAI_ENDPOINT") or "")
    if not deployment or not endpoint:
        raise UsageError(
            f"Model spec 'azure-openai:{name}' needs a deployment and an endpoint: "
            "azure-openai:<deployment>@https://<resource>.openai.azure.com (or set $AZURE_OPENAI_ENDPOINT)"
        )
    version = str(options.pop("api_version", AZURE_API_VERSION))
    options.setdefault("api_key_env", "AZURE_OPENAI_API_KEY")
    url = f"{endpoint.rstrip('/')}/openai/deployments/{quote(deployment, safe='')}"
    return _build(deployment, url, "azure-openai", options, api_key_header="api-key", query=f"api-version={version}")


OPENAI_URL = "https://api.openai.com/v1"
AZURE_API_VERSION = "2024-10-21"
"""The Azure OpenAI API version sent unless ``api_version`` says otherwise."""


def _build(
    model: str, base_url: str, provider: str, options: dict[str, object], *, api_key_header: str = "Authorization",
    query: str = "",
) -> OpenAICompatibleModel:  # fmt: skip
    """The provider for ``model`` at ``base_url`` from the options every OpenAI-style provider shares."""
    from ..._util.options import read_option

    api_key_env = options.pop("api_key_env", None)
    if api_key_env is not None and not os.environ.get(str(api_key_env)):
        raise ConfigError("api_key_env", f"the environment variable ${api_key_env} is not set")
    retry = RetryPolicy(
        max_retries=int_option("max_retries", options.pop("max_retries", 6), minimum=0),
        backoff_base=float_option("backoff_base", options.pop("backoff_base", 1.0), minimum=0.0),
        backoff_cap=float_option("backoff_cap", options.pop("backoff_cap", 60.0), minimum=0.0),
    )
    max_concurrency = int_option("max_concurrency", options.pop("max_concurrency", 16), minimum=1)
    timeout = float_option("timeout", options.pop("timeout", 120.0), minimum=0.001)
    window = options.pop("context_length", None)
    field = str(options.pop("max_tokens_field", "max_tokens"))
    if field not in ("max_tokens", "max_completion_tokens"):
        raise ConfigError("max_tokens_field", f"must be max_tokens or max_completion_tokens, not {field!r}")
    penalty = options.pop("penalty_field", None)
    headers = _from_environment(read_option(dict[str, str], options.pop("headers", {}), "headers"))
    body = read_option(dict[str, Any], options.pop("body", {}), "body")
    reject_unknown(
        provider, {k: v for k, v in options.items() if k not in ("omit_temperature", "reasoning")}, KNOWN_OPTIONS
    )
    return OpenAICompatibleModel(
        model,
        base_url,
        api_key_env=str(api_key_env or "OPENAI_API_KEY"),
        max_concurrency=max_concurrency,
        timeout=timeout,
        retry=retry,
        context_length=None if window is None else int_option("context_length", window, minimum=64),
        max_tokens_field=field,
        omit_temperature=bool_option("omit_temperature", options.get("omit_temperature", False)),
        reasoning=bool_option("reasoning", options.get("reasoning", False)),
        penalty_field=None if penalty is None else str(penalty),
        headers=headers,
        body=body,
        api_key_header=api_key_header,
        query=query,
    )


def _from_environment(headers: dict[str, str]) -> dict[str, str]:
    """Header values written ``$NAME`` read from that environment variable (a secret stays out of configs)."""
    found = {}
    for header, value in headers.items():
        if value.startswith("$"):
            value = os.environ.get(value[1:], "")
            if not value:
                raise ConfigError("headers", f"header {header}: the environment variable {headers[header]} is not set")
        found[header] = value
    return found


def _probe_count(reply: object) -> int:
    """The tokens a ``/tokenize`` reply counts (vLLM's ``count``, llama.cpp's ``tokens``); 0 when it counts none."""
    if not isinstance(reply, dict):
        return 0
    count = reply.get("count")
    if isinstance(count, int) and not isinstance(count, bool):
        return count
    tokens = reply.get("tokens")
    return len(tokens) if isinstance(tokens, list) else 0
