"""The interface every model provider implements, and the provider registry."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any

from .._util.registry import Registry
from ._types import ChatMessage, GenerateConfig, ModelOutput


class ModelAPI(ABC):
    """A provider's access to one model.

    Implementations translate messages to the provider's request format and back,
    and own transport concerns (connection pooling, retries on transient errors).
    Caching and concurrency limits are applied above them by :class:`Model`.
    """

    name: str
    """Provider-qualified model name, e.g. ``llamacpp/qwen2.5-coder-1.5b-instruct-q4_k_m``."""

    max_concurrency: int = 1
    """How many calls this provider serves well at once."""

    context_length: int | None = None
    """The model's context window in tokens, where known."""

    reasoning: bool = False
    """Whether the model thinks before it answers, so its replies need room for a trace."""

    async def prepare(self) -> None:  # noqa: B027  (optional hook: most providers know all up front)
        """Learn what the server can tell before the first request (context window, tokenizer)."""

    async def preflight(self, config: GenerateConfig) -> None:  # noqa: B027  (optional hook: in-process models need no check)
        """Check, with one small request, that the model can be reached and answers; ``EndpointError`` if not.

        The request is sent with the model's settings ``config``, as the samples' requests are.
        """

    @abstractmethod
    async def generate(self, messages: Sequence[ChatMessage], config: GenerateConfig) -> ModelOutput:
        """Generate one reply to ``messages``."""

    def check_config(self, config: GenerateConfig) -> None:  # noqa: B027  (optional hook: most send every setting)
        """Raise ``ConfigError`` naming a setting of ``config`` this model's server does not take."""

    def count_tokens(self, text: str) -> int:
        """Tokens ``text`` takes; providers without a tokenizer estimate 4 characters a token."""
        return max(1, len(text) // 4)

    async def acount_tokens(self, text: str) -> int:
        """:meth:`count_tokens` from inside the event loop; providers that ask a server never block it."""
        return self.count_tokens(text)

    def serves(self, served: str) -> bool:
        """Whether a reply naming model ``served`` comes from this model (providers that know no other: always)."""
        return True

    def describe(self) -> dict[str, Any]:
        """What identifies this model: everything about it that can change a reply (name, file hash …)."""
        return {"name": self.name}

    def provenance(self) -> dict[str, Any]:
        """How the model is run (engine build, threads, slots …), recorded with a run but not its identity."""
        return {}

    async def aclose(self) -> None:  # noqa: B027  (optional hook: most providers hold nothing)
        """Release connections, servers or loaded weights."""


ProviderFactory = Callable[..., ModelAPI]
"""``factory(name, **options)`` building a :class:`ModelAPI` from the part of a spec after the provider."""

model_providers: Registry[ProviderFactory] = Registry("model provider")
"""Model providers by spec prefix (``local``, ``openai-compatible``, ``baseline`` …)."""


def modelapi(name: str) -> Callable[[ProviderFactory], ProviderFactory]:
    """Register a provider factory under the spec prefix ``name``."""
    return model_providers.register(name)
