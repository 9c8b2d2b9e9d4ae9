"""Messages, generation settings and outputs exchanged with every model provider."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class ChatMessage(BaseModel):
    """One chat turn."""

    model_config = ConfigDict(frozen=True)

    role: Literal["system", "user", "assistant"]
    """Who speaks."""
    content: str
    """What is said."""


def system(content: str) -> ChatMessage:
    """A system message."""
    return ChatMessage(role="system", content=content)


def user(content: str) -> ChatMessage:
    """A user message."""
    return ChatMessage(role="user", content=content)


def assistant(content: str) -> ChatMessage:
    """An assistant message."""
    return ChatMessage(role="assistant", content=content)


class GenerateConfig(BaseModel):
    """Sampling and request settings; ``None`` means "the provider's default"."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    temperature: float | None = Field(default=None, ge=0)
    """Sampling temperature; 0 is greedy."""
    top_p: float | None = Field(default=None, gt=0, le=1)
    """Nucleus sampling mass."""
    repetition_penalty: float | None = Field(default=None, gt=0)
    """Penalty on tokens already generated (1 is none; MRAG uses 1.05): sent as ``repeat_penalty`` to
    llama.cpp and ``repetition_penalty`` to vLLM-style servers; a server that takes neither refuses it."""
    max_tokens: int | None = Field(default=None, gt=0)
    """Most tokens to generate."""
    stop: tuple[str, ...] | None = None
    """Strings that end generation."""
    seed: int | None = Field(default=None, ge=-(2**63), le=2**63 - 1)
    """Sampling seed, sent to providers that accept one."""
    logprobs: bool = False
    """Return the log-probability of each generated token."""
    top_logprobs: int | None = Field(default=None, ge=0, le=20)
    """With ``logprobs``, how many alternatives to return per position."""
    reasoning_effort: Literal["minimal", "low", "medium", "high"] | None = None
    """How long a reasoning model thinks, sent as ``reasoning_effort`` to servers that take it."""
    timeout: float | None = Field(default=None, gt=0)
    """Seconds to wait for one request before it counts as failed."""
    response_schema: dict[str, Any] | None = None
    """A JSON schema the reply must follow, sent as the OpenAI ``response_format``
    (``json_schema``), which llama.cpp, vLLM and OpenAI enforce while decoding (a server without
    structured output may refuse the request). Callers still validate the reply."""

    def merge(self, other: GenerateConfig | None) -> GenerateConfig:
        """This config with every field that ``other`` sets explicitly taking precedence."""
        if other is None:
            return self
        return self.model_copy(update=other.model_dump(exclude_unset=True))

    def cache_fields(self) -> dict[str, Any]:
        """The fields that change what is generated.

        ``timeout`` never does; nor does ``seed`` at temperature 0, where decoding is greedy, so
        repeated epochs of a greedy run share one cached reply.
        """
        exclude = {"timeout", "seed"} if self.temperature == 0 else {"timeout"}
        return self.model_dump(exclude=exclude, exclude_none=True)


class TopLogprob(BaseModel):
    """An alternative token at one position."""

    token: str
    logprob: float


class TokenLogprob(BaseModel):
    """A generated token with its log-probability and the top alternatives."""

    token: str
    logprob: float
    top: list[TopLogprob] = Field(default_factory=list)


class Usage(BaseModel):
    """Token counts of one call."""

    input_tokens: int = 0
    output_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
        )


class ModelOutput(BaseModel):
    """What one generation returned."""

    text: str
    """The generated answer, without any thinking trace."""
    model: str
    """The provider-qualified model name that produced it."""
    logprobs: list[TokenLogprob] | None = None
    """Per-token log-probabilities, where the provider returns them."""
    usage: Usage = Field(default_factory=Usage)
    """Token counts."""
    latency: float = 0.0
    """Seconds the call took (of the original call, for a cached output)."""
    finish_reason: str | None = None
    """Why generation stopped (``stop``, ``length`` …)."""
    raw: dict[str, Any] | None = None
    """The provider's response as received."""
    reasoning: str | None = None
    """The thinking trace of a reasoning model, kept apart from ``text``."""
    cached: bool = False
    """Whether this output came from the response cache."""
    served: str | None = None
    """The model name the server's reply gives (its ``model`` field), where it gives one."""

    @property
    def truncated(self) -> bool:
        """Whether generation stopped at the token limit."""
        return self.finish_reason == "length"
