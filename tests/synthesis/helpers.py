"""Scripted models that answer synthesis prompts by what the prompt asks."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ebmeval.models import ChatMessage, GenerateConfig, Model
from ebmeval.models.providers.scripted import ScriptedModel
from ebmeval.tasks import Document, MemoryMemo, Sample, SampleContext

SAMPLE = Sample(
    id="r1",
    input="Statins for primary prevention of cardiovascular disease",
    target="Statins reduce cardiovascular events in primary prevention with little harm.",
    documents=[
        Document(id="s1", text="Statins reduced myocardial infarction by 30% versus placebo.", title="Trial A"),
        Document(id="s2", text="Statin therapy lowered stroke incidence with no excess myopathy.", title="Trial B"),
    ],
    metadata={"background": "Cardiovascular disease is common."},
)


RUBRIC_REPLY = (
    "Main findings: 4\nSpecifics: 3\nNuance: 3\nImplications: 4\nSafety: 5\nJustification: close.\nOverall: 4"
)


def reply_by_prompt(evaluate: Sequence[str] = ("Score: 5\nFeedback: fine",)) -> Callable[..., str]:
    """A responder: plans, answers, drafts, evaluator verdicts in order, negations, ratings, rubric."""
    verdicts = list(evaluate)

    def respond(messages: Sequence[ChatMessage], config: GenerateConfig) -> str:
        prompt = messages[-1].content
        if "List at most" in prompt:
            return "1. Does it reduce events?\n2. Is it safe?"
        if "Answer this sub-question" in prompt:
            return "Yes, moderately."
        if "rate how complete" in prompt:
            return verdicts.pop(0) if len(verdicts) > 1 else verdicts[0]
        if "Does the rewritten abstract invert" in prompt:
            return "Yes"
        if "Rewrite the following study abstract" in prompt:
            return "NEGATED: " + prompt.rsplit("Abstract:\n", 1)[1]
        if "how well can this conclusion be reached" in prompt:
            return f"Score: {3 + (config.seed or 0) % 2}\nReason: partly."
        if "semantic equivalence" in prompt:
            return RUBRIC_REPLY
        if "Summarise in at most 3 sentences" in prompt:
            return "Partial summary."
        return "Statins reduce events."

    return respond


def scripted(evaluate: Sequence[str] = ("Score: 5\nFeedback: fine",), name: str = "scripted/model") -> ScriptedModel:
    return ScriptedModel(reply_by_prompt(evaluate), name=name)


def context(api: ScriptedModel, memo: MemoryMemo | None = None, **roles: ScriptedModel) -> SampleContext:
    model = Model(api)
    models = {"model": model, "evaluator": model, "negator": model, "negation_checker": model, "judge": model}
    models.update({role: Model(other) for role, other in roles.items()})
    return SampleContext(models, memo)


def prompts(api: ScriptedModel) -> list[str]:
    return [messages[-1].content for messages, _ in api.requests]
