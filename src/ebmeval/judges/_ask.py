"""Asking a judge: one question, one stricter follow-up when the reply cannot be read."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from ..models import GenerateConfig, Model, assistant, user
from ..tasks import THINKING_BUDGET, SampleContext

T = TypeVar("T")


@dataclass
class Attempt(Generic[T]):
    """The parsed value of a judge question (``None`` if unreadable twice) and the raw replies."""

    value: T | None
    replies: list[str]
    forced: bool = False
    """Whether the value came from the follow-up decoded under a JSON schema."""

    @property
    def retried(self) -> bool:
        """Whether the first reply was unreadable and the stricter follow-up was sent."""
        return len(self.replies) > 1

    def metadata(self) -> dict[str, object]:
        """What every judge records about how its value was obtained."""
        return {"replies": self.replies, "retried": self.retried, "forced_by_schema": self.forced}


def judge_settings(config: GenerateConfig, model: Model) -> GenerateConfig:
    """A judge's settings for ``model``: a thinking judge's reply budget is at least ``THINKING_BUDGET``.

    A judge that thinks spends most of its budget on the trace; with a non-thinking budget its
    verdict would be cut off (and read as unparsed).
    """
    if model.api.reasoning and (config.max_tokens or 0) < THINKING_BUDGET:
        return config.model_copy(update={"max_tokens": THINKING_BUDGET})
    return config


async def ask(
    ctx: SampleContext,
    step: str,
    prompt: str,
    parse: Callable[[str], T | None],
    strict: str,
    *,
    config: GenerateConfig,
    role: str = "judge",
    retry_config: GenerateConfig | None = None,
) -> Attempt[T]:
    """Ask ``prompt`` as step ``step``; if ``parse`` fails, send ``strict`` once as step ``step/retry``.

    The follow-up continues the conversation (question, unreadable reply, ``strict``) with
    ``retry_config`` when given (e.g. a ``response_schema`` that the provider enforces while
    decoding), else ``config``; both as :func:`judge_settings` adapts them to the judge. A value
    still unreadable is ``None``, never a default.
    """
    config = judge_settings(config, ctx.model(role))
    first = await ctx.generate(step, [user(prompt)], config, role=role)
    value = parse(first.text)
    if value is not None:
        return Attempt(value, [first.text])
    conversation = [user(prompt), assistant(first.text), user(strict)]
    settings = judge_settings(retry_config, ctx.model(role)) if retry_config is not None else config
    second = await ctx.generate(f"{step}/retry", conversation, settings, role=role)
    return Attempt(parse(second.text), [first.text, second.text], forced=settings.response_schema is not None)
