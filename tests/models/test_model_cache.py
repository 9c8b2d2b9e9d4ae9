"""The response cache as Model uses it: a call that waited for a slot finds the reply its twin just got."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from ebmeval.models import ChatMessage, GenerateConfig, Model, ModelOutput, ResponseCache
from ebmeval.models.providers.scripted import ScriptedModel


class _Slow(ScriptedModel):
    """Answers "A" after 50 ms, so a second call of the same request waits for the first's slot."""

    def __init__(self, max_concurrency: int) -> None:
        super().__init__(lambda _messages, _config: "A", max_concurrency=max_concurrency)

    async def generate(self, messages: Sequence[ChatMessage], config: GenerateConfig) -> ModelOutput:
        await asyncio.sleep(0.05)
        return await super().generate(messages, config)


async def test_a_call_that_waited_for_the_slot_takes_the_reply_of_the_same_request(tmp_path: Path) -> None:
    api = _Slow(max_concurrency=1)
    model = Model(api, cache=ResponseCache(tmp_path / "cache.sqlite"))
    first, second = await asyncio.gather(model.generate("same question"), model.generate("same question"))
    assert first.text == second.text == "A"
    assert len(api.requests) == 1
    assert (model.stats.calls, model.stats.cache_hits) == (2, 1)
    # with free slots both calls go out at once: there is nothing to wait for, nothing to share
    parallel = _Slow(max_concurrency=2)
    both = Model(parallel, cache=ResponseCache(tmp_path / "other.sqlite"))
    await asyncio.gather(both.generate("same question"), both.generate("same question"))
    assert len(parallel.requests) == 2
