"""A model provider that always answers with the text after the colon of its spec."""

from __future__ import annotations

from collections.abc import Sequence

from ebmeval.models import ChatMessage, GenerateConfig, ModelAPI, ModelOutput, modelapi


class Constant(ModelAPI):
    """Replies ``text`` to every request."""

    def __init__(self, text: str) -> None:
        self.name = f"example-constant/{text}"
        self.text = text

    async def generate(self, messages: Sequence[ChatMessage], config: GenerateConfig) -> ModelOutput:
        return ModelOutput(text=self.text, model=self.name, finish_reason="stop")


@modelapi("example-constant")
def constant(name: str, **options: object) -> ModelAPI:
    """``example-constant:TEXT`` answers TEXT to everything (an example plugin provider)."""
    return Constant(name)
