"""The :class:`Model` wrapper: caching, concurrency limits and call statistics."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from .._util.errors import ModelError
from ._api import ModelAPI, model_providers
from ._cache import ResponseCache, cache_key
from ._reasoning import split_reasoning
from ._types import ChatMessage, GenerateConfig, ModelOutput, Usage, user


class DegenerateReplyError(ModelError):
    """A reply that is no answer: empty, filtered, or an error object; never cached, retried on a re-run."""


ReplyCheck = Callable[[ModelOutput], ModelOutput]
"""Returns a reply it accepts (perhaps cleaned) and raises :class:`DegenerateReplyError` for one it refuses."""


@dataclass
class ModelStats:
    """Counters of one :class:`Model` since it was created."""

    calls: int = 0
    """Generations requested."""
    cache_hits: int = 0
    """Of those, answered from the response cache."""
    errors: int = 0
    """Of those, failed."""
    truncated: int = 0
    """Of those, stopped at the token limit."""
    usage: Usage = field(default_factory=Usage)
    """Tokens of the calls that reached the provider."""
    served: dict[str, int] = field(default_factory=dict)
    """Replies by the model name the server gave (its ``model`` field), for the calls that reached it."""
    mismatched: dict[str, int] = field(default_factory=dict)
    """Of those, the names that are not the model asked for (see :meth:`ModelAPI.serves`)."""


class ModelRequest(NamedTuple):
    """One call as :meth:`Model.send` sends it."""

    messages: list[ChatMessage]
    config: GenerateConfig
    """The model's default settings merged with the call's."""
    key: str
    """The request key (the response-cache key): the model's identity, the messages and the settings."""


class Model:
    """A model ready to generate: a provider plus cache, concurrency bound and defaults."""

    def __init__(
        self,
        api: ModelAPI,
        *,
        config: GenerateConfig | None = None,
        cache: ResponseCache | None = None,
        max_concurrency: int | None = None,
    ) -> None:
        self.api = api
        self.config = config or GenerateConfig()
        self.cache = cache
        self.max_concurrency = max_concurrency or api.max_concurrency
        self.stats = ModelStats()
        self._semaphore = asyncio.Semaphore(self.max_concurrency)

    @property
    def name(self) -> str:
        """The provider-qualified model name."""
        return self.api.name

    def request(self, messages: str | Sequence[ChatMessage], config: GenerateConfig | None = None) -> ModelRequest:
        """The chat, the settings and the request key of a call, as :meth:`generate` would send it.

        The key is the response-cache key: the model's identity, the messages and every
        setting that changes the reply. A recorded step is replayed only under the same key.
        """
        chat = [user(messages)] if isinstance(messages, str) else list(messages)
        merged = self.config.merge(config)
        return ModelRequest(chat, merged, cache_key(self.api.describe(), chat, merged))

    async def generate(
        self, messages: str | Sequence[ChatMessage], config: GenerateConfig | None = None
    ) -> ModelOutput:
        """Generate a reply; a plain string is sent as one user message.

        ``config`` overrides this model's default settings field by field. A cached
        output is returned without calling the provider when the cache is on. An inline
        thinking trace (``<think>…</think>``) is moved from ``text`` to ``reasoning``.

        Raises:
            DegenerateReplyError: The reply is empty (and not cut at the token limit), was
                stopped by a content filter, or is an error; it is not cached.
        """
        return await self.send(self.request(messages, config))

    async def send(self, request: ModelRequest, accept: ReplyCheck | None = None) -> ModelOutput:
        """:meth:`generate` for a call prepared by :meth:`request` (its key is not computed again).

        ``accept`` checks a reply beyond :func:`checked_reply` (a step that may not be cut off, say)
        and raises for one it refuses, which is then neither cached nor returned; a cached reply
        is checked the same way.
        """
        chat, merged, key = request
        check = (lambda o: accept(checked_reply(o))) if accept is not None else checked_reply
        self.stats.calls += 1
        if (hit := self._cached(key, check)) is not None:
            return hit
        try:
            waited = self._semaphore.locked()
            async with self._semaphore:
                if waited and (hit := self._cached(key, check)) is not None:
                    return hit  # the same request finished while this call waited for a slot
                output = check(self._note_served(await self.api.generate(chat, merged)))
                if self.cache is not None and not output.truncated:
                    self.cache.put(key, output)  # before the slot is free, so a call waiting for it finds the reply
        except BaseException:
            self.stats.errors += 1
            raise
        # Let the call waiting for this slot go out before this reply is recorded and scored:
        # at high concurrency replies arrive in bursts, and the next requests should not wait
        # for the whole burst's bookkeeping.
        await asyncio.sleep(0)
        self.stats.usage = self.stats.usage + output.usage
        if output.truncated:
            self.stats.truncated += 1
        return output

    def _cached(self, key: str, check: ReplyCheck) -> ModelOutput | None:
        """The cached reply to request ``key``, counted as a cache hit, if the cache has one."""
        hit = self.cache.get(key) if self.cache is not None else None
        if hit is None:
            return None
        self.stats.cache_hits += 1
        return check(hit)  # a cache written by an older release may hold empty replies

    def _note_served(self, output: ModelOutput) -> ModelOutput:
        """Count the model name the reply gives, and whether it is the model asked for."""
        if output.served is not None:
            self.stats.served[output.served] = self.stats.served.get(output.served, 0) + 1
            if not self.api.serves(output.served):
                self.stats.mismatched[output.served] = self.stats.mismatched.get(output.served, 0) + 1
        return output

    def count_tokens(self, text: str) -> int:
        """Tokens ``text`` takes for this model (outside an event loop; inside, :meth:`acount_tokens`)."""
        return self.api.count_tokens(text)

    async def acount_tokens(self, text: str) -> int:
        """Tokens ``text`` takes for this model, counted without blocking the event loop."""
        return await self.api.acount_tokens(text)

    async def aclose(self) -> None:
        """Release the provider's resources."""
        await self.api.aclose()


def checked_reply(output: ModelOutput) -> ModelOutput:
    """``output`` with any inline thinking trace split off, or an error for a reply that is no answer.

    A reply cut at the token limit is returned (flagged by ``truncated``) even when empty: it is
    counted, not cached. An empty reply that stopped for another reason, and a reply stopped by a
    content filter, raise :class:`DegenerateReplyError`.
    """
    text, inline = split_reasoning(output.text)
    if inline:
        joined = "\n\n".join(t for t in (output.reasoning, inline) if t)
        output = output.model_copy(update={"text": text, "reasoning": joined})
    if output.finish_reason == "content_filter":
        raise DegenerateReplyError(f"{output.model}: the reply was stopped by a content filter")
    if not output.text.strip() and not output.truncated:
        trace = " (it holds only a thinking trace)" if output.reasoning else ""
        raise DegenerateReplyError(f"{output.model}: empty reply, finish_reason {output.finish_reason!r}{trace}")
    return output


def parse_model_spec(spec: str) -> tuple[str, str]:
    """Split a model spec into (provider, name).

    ``local`` → (``local``, ``""``); ``local:/m.gguf`` → (``local``, ``/m.gguf``);
    ``openai-compatible:gpt-4o@https://host/v1`` → (``openai-compatible``, ``gpt-4o@https://host/v1``);
    ``baseline/random`` → (``baseline``, ``random``); ``openai/gpt-4o@https://host/v1`` →
    (``openai``, ``gpt-4o@https://host/v1``): the provider ends at the first ``:`` or ``/``.
    """
    cuts = [i for i in (spec.find(":"), spec.find("/")) if i >= 0]
    if not cuts:
        return spec, ""
    cut = min(cuts)
    return spec[:cut], spec[cut + 1 :]


def get_model(
    spec: str,
    *,
    config: GenerateConfig | None = None,
    cache: ResponseCache | None = None,
    max_concurrency: int | None = None,
    **options: object,
) -> Model:
    """Build a :class:`Model` from a spec string such as ``local`` or ``openai-compatible:m@url``.

    ``options`` go to the provider factory (e.g. ``api_key_env``, ``n_ctx``).
    Raises ``UnknownNameError`` for an unknown provider.
    """
    provider, name = parse_model_spec(spec)
    factory = model_providers.get(provider)
    if max_concurrency is not None and provider in ("openai-compatible", "openai", "azure-openai"):
        # its connection pool is a second bound: size it to the concurrency asked for
        options.setdefault("max_concurrency", max_concurrency)
        max_concurrency = None  # the provider's bound (summed over its replicas) is the model's
    api = factory(name, **options)
    return Model(api, config=config, cache=cache, max_concurrency=max_concurrency)
