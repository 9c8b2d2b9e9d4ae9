"""A deterministic scorer: the length of the reply in words."""

from __future__ import annotations

from ebmeval import Score, scorer
from ebmeval.tasks import Generation, Sample, SampleContext


class ReplyLength:
    """Words in the model's reply (metric ``words``)."""

    name = "example/reply-length"

    async def __call__(self, sample: Sample, generation: Generation, ctx: SampleContext) -> Score:
        return Score(values={"words": float(len(generation.output.split()))})


@scorer("example/reply-length")
def reply_length() -> ReplyLength:
    """Words in the model's reply (an example plugin scorer).

    Metrics:
        words: the number of whitespace-separated words in the reply.
    """
    return ReplyLength()
