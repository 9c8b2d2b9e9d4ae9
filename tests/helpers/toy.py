"""A small task and scripted models for runner and store tests."""

from __future__ import annotations

import time
from collections.abc import Sequence

from ebmeval.models import ChatMessage, GenerateConfig, Model
from ebmeval.models.providers.scripted import ScriptedModel
from ebmeval.tasks import (
    Generation,
    ParsedAnswer,
    Sample,
    SampleContext,
    Score,
    Task,
    WorkflowResult,
    scorer,
)


class TwoStepWorkflow:
    """Drafts an answer, then asks for the final letter: two model calls per sample."""

    name = "two-step"

    async def __call__(self, sample: Sample, ctx: SampleContext) -> WorkflowResult:
        draft = await ctx.generate("draft", f"Q {sample.id}: {sample.input}")
        final = await ctx.generate("final", f"Q {sample.id}: draft was {draft.text}. Final letter?")
        return WorkflowResult(output=final.text)


class ExactLetter:
    """1.0 when the parsed letter equals the target."""

    name = "exact"

    async def __call__(self, sample: Sample, generation: Generation, ctx: SampleContext) -> Score:
        if not generation.answer.parsed:
            return Score(values={"accuracy": None})
        return Score(values={"accuracy": float(generation.answer.value == sample.target)})


@scorer("exact", binary=("accuracy",))
def exact_letter() -> ExactLetter:
    """The toy task's scorer, its ``accuracy`` declared binary."""
    return ExactLetter()


def parse_letter(output: str, sample: Sample) -> ParsedAnswer:
    text = output.strip()
    return ParsedAnswer(value=text, method="exact") if text in {"A", "B"} else ParsedAnswer.unparsed("exact")


def toy_task(n: int = 6) -> Task:
    samples = [Sample(id=f"q{i}", input=f"question {i}", target="A" if i % 2 == 0 else "B") for i in range(n)]
    return Task(
        name="toy",
        dataset=samples,
        workflow=TwoStepWorkflow(),
        scorers=[exact_letter()],
        parser=parse_letter,
        args={"n": n},
    )


def answer_a(messages: Sequence[ChatMessage], config: GenerateConfig) -> str:
    """Drafts 'thinking', answers 'A' to every final question."""
    return "A" if "Final letter" in messages[-1].content else "thinking"


def scripted_model(responder=answer_a, *, delay: float = 0.0, fail_on: set[str] | None = None) -> Model:
    """A scripted model; ``fail_on`` lists prompt substrings whose call raises a ModelError once."""
    from ebmeval._util.errors import ModelError

    failing = set(fail_on or ())

    def respond(messages: Sequence[ChatMessage], config: GenerateConfig) -> str:
        if delay:
            time.sleep(delay)
        for marker in list(failing):
            if marker in messages[-1].content:
                failing.discard(marker)
                raise ModelError(f"scripted failure on {marker}")
        return responder(messages, config)

    return Model(ScriptedModel(respond))
