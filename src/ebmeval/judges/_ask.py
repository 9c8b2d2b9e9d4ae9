"""Asking a judge: one question, one stricter follow-up when the reply cannot be read."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from ..models import GenerateConfig, assistant, user
from ..tasks import JUDGE, Call, SampleContext

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
    call: Call = JUDGE,
) -> Attempt[T]:
    """Ask ``prompt`` as step ``step``; if ``parse`` fails, send ``strict`` once as step ``step/retry``.

    The follow-up continues the conversation (question, unreadable reply, ``strict``) with
    ``retry_config`` when given (e.g. a ``response_schema`` that the provider enforces while
    decoding), else ``config``; a thinking judge gets room for its trace (see :class:`~ebmeval.tasks.Call`).
    A value still unreadable is ``None``, never a default. Both go out as ``call``: a judge's
    question unless the reply is the answer under evaluation (``ANSWER``: the run's settings apply).
    """
    first = await ctx.generate(step, [user(prompt)], config, role=role, call=call)
    value = parse(first.text)
    if value is not None:
        return Attempt(value, [first.text])
    conversation = [user(prompt), assistant(first.text), user(strict)]
    settings = retry_config if retry_config is not None else config
    second = await ctx.generate(f"{step}/retry", conversation, settings, role=role, call=call)
    return Attempt(parse(second.text), [first.text, second.text], forced=settings.response_schema is not None)
