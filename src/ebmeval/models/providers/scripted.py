"""A provider that replays scripted replies; for unit tests only."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from ..._util.errors import ModelError
from .._api import ModelAPI, modelapi
from .._types import ChatMessage, GenerateConfig, ModelOutput

Responder = Callable[[Sequence[ChatMessage], GenerateConfig], str | ModelOutput]


class ScriptedModel(ModelAPI):
    """Replies from a list (in order) or a function of the request.

    Every request is recorded in ``requests`` so tests can check what was sent.
    """

    def __init__(
        self,
        replies: Iterable[str | ModelOutput] | Responder = (),
        *,
        name: str = "scripted/model",
        max_concurrency: int = 8,
    ) -> None:
        self.name = name
        self.max_concurrency = max_concurrency
        self.requests: list[tuple[list[ChatMessage], GenerateConfig]] = []
        self._responder = replies if callable(replies) else None
        self._replies = [] if callable(replies) else list(replies)

    async def generate(self, messages: Sequence[ChatMessage], config: GenerateConfig) -> ModelOutput:
        """Return the next scripted reply."""
        self.requests.append((list(messages), config))
        if self._responder is not None:
            reply = self._responder(messages, config)
        elif self._replies:
            reply = self._replies.pop(0)
        else:
            raise ModelError(f"{self.name}: no scripted reply left for request {len(self.requests)}")
        if isinstance(reply, ModelOutput):
            return reply
        return ModelOutput(text=reply, model=self.name, finish_reason="stop")


@modelapi("scripted")
def scripted(name: str, **options: object) -> ModelAPI:
    """``scripted:TEXT`` always answers TEXT (handy for smoke tests)."""
    text = name
    return ScriptedModel(lambda _messages, _config: text, name=f"scripted/{name or 'model'}")
