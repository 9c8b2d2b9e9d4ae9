"""A minimal judge for rescore tests: two verdict steps per sample, ``yes`` = share of YES."""

from __future__ import annotations

from ebmeval.tasks import Generation, Sample, SampleContext, Score


class VerdictJudge:
    """Asks the ``judge`` role two yes/no questions about a generation."""

    name = "judge/verdicts"
    role = "judge"

    async def __call__(self, sample: Sample, generation: Generation, ctx: SampleContext) -> Score:
        replies = []
        for n in (1, 2):
            question = f"Is {generation.output} right for {sample.id} ({n})?"
            replies.append((await ctx.generate(f"{self.name}/{n}", question, role="judge")).text)
        return Score(values={"yes": sum("YES" in r for r in replies) / 2})
