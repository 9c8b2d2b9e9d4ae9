"""Judges of a rationale's reasoning steps (MedThink-Bench style).

The rationale judged is ``generation.metadata["rationale"]`` when the task extracted
one (``medthink/reasoning`` does), else the whole output. The question is the sample
input; expert steps are read from ``sample.metadata["scoring_points"]`` (``steps_key``).

Every judge call is a step of the sample named ``"<scorer name>/<step>"`` with
``role="judge"``. A reply that cannot be read is followed, once, by a stricter
instruction in the same conversation (step ``…/retry``); if that reply cannot be read
either, the affected value is ``None`` (counted as unparsed, never 0) and the raw
replies are kept in ``Score.metadata``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from .. import prompts
from .._util.errors import ConfigError, DataError
from ..models import GenerateConfig
from ..tasks import JUDGE, Generation, Sample, SampleContext, Score, scorer
from ._ask import Attempt, ask
from ._read import parse_counts, parse_verdict, parse_verdicts

STEP_MAX_TOKENS = 128
"""Reply budget of one per-step verdict."""
LIST_MAX_TOKENS = 384
"""Reply budget of the single-call verdicts and of the step counts."""


def rationale_of(generation: Generation) -> str:
    """The text judged: the extracted rationale when the task stored one, else the output."""
    rationale = generation.metadata.get("rationale")
    return rationale if isinstance(rationale, str) and rationale.strip() else generation.output


def expert_steps(sample: Sample, key: str) -> list[str]:
    """The expert reasoning steps of ``sample``; ``DataError`` when absent or empty."""
    steps = sample.metadata.get(key)
    if not isinstance(steps, list) or not steps or not all(isinstance(s, str) and s.strip() for s in steps):
        raise DataError(f"sample {sample.id}", "needs a non-empty list of expert steps", field=f"metadata.{key}")
    return [s.strip() for s in steps]


def numbered(steps: Sequence[str]) -> str:
    """The steps as lines ``1. …``, ``2. …``."""
    return "\n".join(f"{i}. {s}" for i, s in enumerate(steps, start=1))


T = TypeVar("T")


class _StepJudge:
    """What every step judge holds (its name, the judge's role, the settings of its calls) and how it asks."""

    def __init__(self, *, name: str, role: str, max_tokens: int, temperature: float, seed: int | None) -> None:
        self.name = name
        self.role = role
        self.config = GenerateConfig(temperature=temperature, max_tokens=max_tokens, seed=seed)

    async def _ask(
        self, ctx: SampleContext, step: str, prompt: str, parse: Callable[[str], T | None], strict: str
    ) -> Attempt[T]:
        """Ask ``prompt`` as step ``<name>/<step>``, with ``strict`` once when ``parse`` cannot read the reply."""
        return await ask(ctx, f"{self.name}/{step}", prompt, parse, strict, config=self.config, role=self.role)


class StepsWithReference(_StepJudge):
    """One judge call per expert step: does the rationale support it?

    score ``steps_supported`` = (steps judged supported) / (expert steps); ``None`` when
    any step's verdict stayed unreadable after the retry. ``Score.metadata["verdicts"]``
    lists, per step, the step text, the verdict (``True``/``False``/``None``), whether it
    was retried and the raw replies.

    Args:
        prompt: Prompt variant, ``p1`` (default) … ``p5`` (see ``STEP_PROMPTS``).
        steps_key: Sample metadata key of the expert steps.
        max_tokens: Reply budget per verdict (at least ``THINKING_BUDGET`` for a thinking judge).
        temperature: Sampling temperature of the judge (0: greedy, reproducible).
        seed: A literal sampling seed sent with every judge call (default: the sample's seed).
        name: Scorer name; default ``judge/steps-with-reference``, with ``@<prompt>`` for other variants.
        role: Model role of the judge.
    """

    templates = (prompts.STRICT_VERDICT,)

    def __init__(
        self,
        prompt: str = "p1",
        *,
        steps_key: str = "scoring_points",
        max_tokens: int = STEP_MAX_TOKENS,
        temperature: float = 0.0,
        name: str | None = None,
        role: str = "judge",
        seed: int | None = None,
    ) -> None:
        if prompt not in prompts.STEP_PROMPTS:
            raise ConfigError("prompt", f"must be one of {', '.join(prompts.PROMPT_VARIANTS)}, not {prompt!r}")
        super().__init__(
            name=name or self.default_name(prompt), role=role, max_tokens=max_tokens, temperature=temperature, seed=seed
        )
        self.template: prompts.PromptTemplate = prompts.STEP_PROMPTS[prompt]
        self.prompt = prompt
        self.steps_key = steps_key

    @staticmethod
    def default_name(prompt: str) -> str:
        """``judge/steps-with-reference``, with ``@PROMPT`` for a prompt variant other than the first."""
        return "judge/steps-with-reference" + ("" if prompt == prompts.PROMPT_VARIANTS[0] else f"@{prompt}")

    @property
    def call_templates(self) -> dict[str, tuple[prompts.PromptTemplate, ...]]:
        """Its judge questions' templates: the variant's and the strict follow-up (``ebmeval describe``)."""
        return {JUDGE.name: (self.template, *self.templates)}

    async def __call__(self, sample: Sample, generation: Generation, ctx: SampleContext) -> Score:
        """Judge every expert step against the rationale."""
        steps = expert_steps(sample, self.steps_key)
        rationale = rationale_of(generation)
        verdicts: list[dict[str, Any]] = []
        for number, step in enumerate(steps, start=1):
            prompt = self.template.render(question=sample.input, rationale=rationale, step=step)
            attempt = await self._ask(ctx, f"step-{number}", prompt, parse_verdict, prompts.STRICT_VERDICT.render())
            verdicts.append(
                {"step": step, "supported": attempt.value, "retried": attempt.retried, "replies": attempt.replies}
            )
        return _verdict_score(self.name, ctx, verdicts, self.template.id, ctx.model(self.role).name)


class StepsWithReferenceSingle(_StepJudge):
    """All expert steps judged in one call, one ``<n>: YES|NO`` line each.

    Same score and metadata as :class:`StepsWithReference`: ``steps_supported`` =
    supported / expert steps, ``None`` when the verdict lines stayed unreadable.
    """

    templates = (prompts.STEPS_SINGLE, prompts.STRICT_VERDICTS)

    def __init__(
        self,
        *,
        steps_key: str = "scoring_points",
        max_tokens: int = LIST_MAX_TOKENS,
        temperature: float = 0.0,
        name: str = "judge/steps-with-reference-single",
        role: str = "judge",
        seed: int | None = None,
    ) -> None:
        super().__init__(name=name, role=role, max_tokens=max_tokens, temperature=temperature, seed=seed)
        self.steps_key = steps_key

    async def __call__(self, sample: Sample, generation: Generation, ctx: SampleContext) -> Score:
        """Judge all expert steps in one call."""
        steps = expert_steps(sample, self.steps_key)
        prompt = prompts.STEPS_SINGLE.render(
            question=sample.input, rationale=rationale_of(generation), steps=numbered(steps)
        )
        strict = prompts.STRICT_VERDICTS.render(n=str(len(steps)))
        attempt = await self._ask(ctx, "steps", prompt, lambda text: parse_verdicts(text, len(steps)), strict)
        found: Sequence[bool | None] = attempt.value if attempt.value is not None else [None] * len(steps)
        verdicts = [
            {"step": step, "supported": verdict, "retried": attempt.retried}
            for step, verdict in zip(steps, found, strict=True)
        ]
        score = _verdict_score(self.name, ctx, verdicts, prompts.STEPS_SINGLE.id, ctx.model(self.role).name)
        score.metadata["replies"] = attempt.replies
        return score


class StepsWithoutReference(_StepJudge):
    """The judge estimates the steps a full answer needs and how many the rationale covers.

    score ``steps_covered`` = covered / required (the judge's own counts, 0 ≤ covered ≤
    required, required ≥ 1); ``None`` when the counts stayed unreadable.
    """

    templates = (prompts.STEPS_WITHOUT_REFERENCE, prompts.STRICT_COUNTS)

    def __init__(
        self,
        *,
        max_tokens: int = LIST_MAX_TOKENS,
        temperature: float = 0.0,
        name: str = "judge/steps-without-reference",
        role: str = "judge",
        seed: int | None = None,
    ) -> None:
        super().__init__(name=name, role=role, max_tokens=max_tokens, temperature=temperature, seed=seed)

    async def __call__(self, sample: Sample, generation: Generation, ctx: SampleContext) -> Score:
        """Ask for the required and covered step counts."""
        prompt = prompts.STEPS_WITHOUT_REFERENCE.render(question=sample.input, rationale=rationale_of(generation))
        attempt = await self._ask(ctx, "counts", prompt, parse_counts, prompts.STRICT_COUNTS.render())
        metadata: dict[str, Any] = {
            "prompt": prompts.STEPS_WITHOUT_REFERENCE.id,
            "judge": ctx.model(self.role).name,
            "retried": attempt.retried,
            "replies": attempt.replies,
        }
        if attempt.value is None:
            metadata.update(required=None, covered=None)
            return Score(values={"steps_covered": None}, explanation="judge reply unreadable", metadata=metadata)
        required, covered = attempt.value
        metadata.update(required=required, covered=covered)
        return Score(
            values={"steps_covered": covered / required},
            explanation=f"{covered} of {required} required steps covered",
            metadata=metadata,
        )


def _verdict_score(name: str, ctx: SampleContext, verdicts: list[dict[str, Any]], prompt_id: str, judge: str) -> Score:
    """The score of per-step verdicts, also recorded as step ``<name>/verdicts`` for ``show``."""
    unreadable = sum(v["supported"] is None for v in verdicts)
    supported = sum(v["supported"] is True for v in verdicts)
    summary = {
        "verdicts": [{"step": v["step"], "supported": v["supported"]} for v in verdicts],
        "supported": supported,
        "steps": len(verdicts),
        "unreadable": unreadable,
    }
    ctx.record(f"{name}/verdicts", summary)
    metadata = {"verdicts": verdicts, "prompt": prompt_id, "judge": judge, "unreadable": unreadable}
    if unreadable:
        return Score(
            values={"steps_supported": None},
            explanation=f"{unreadable} of {len(verdicts)} step verdicts unreadable",
            metadata=metadata,
        )
    return Score(
        values={"steps_supported": supported / len(verdicts)},
        explanation=f"{supported} of {len(verdicts)} expert steps supported",
        metadata=metadata,
    )


@scorer("judge/steps-with-reference")
def steps_with_reference(
    prompt: str = "p1",
    steps_key: str = "scoring_points",
    max_tokens: int = STEP_MAX_TOKENS,
    name: str | None = None,
    temperature: float = 0.0,
    seed: int | None = None,
) -> StepsWithReference:
    """Per-step judge against the expert steps (:class:`StepsWithReference`).

    Metrics:
        steps_supported: supported / expert steps, one judge call per expert step asking whether the
            rationale supports it; None when any verdict is unreadable after one retry.
    """
    return StepsWithReference(
        prompt, steps_key=steps_key, max_tokens=max_tokens, name=name, temperature=temperature, seed=seed
    )


@scorer("judge/steps-with-reference-single")
def steps_with_reference_single(
    steps_key: str = "scoring_points",
    max_tokens: int = LIST_MAX_TOKENS,
    temperature: float = 0.0,
    seed: int | None = None,
) -> StepsWithReferenceSingle:
    """All expert steps judged in one call (:class:`StepsWithReferenceSingle`).

    Metrics:
        steps_supported: supported / expert steps, from one judge call giving a YES/NO line per expert
            step; None when the lines are unreadable after one retry.
    """
    return StepsWithReferenceSingle(steps_key=steps_key, max_tokens=max_tokens, temperature=temperature, seed=seed)


@scorer("judge/steps-without-reference")
def steps_without_reference(
    max_tokens: int = LIST_MAX_TOKENS, temperature: float = 0.0, seed: int | None = None
) -> StepsWithoutReference:
    """Judge-estimated step coverage without expert steps (:class:`StepsWithoutReference`).

    Metrics:
        steps_covered: covered / required, both counted by the judge (required ≥ 1, 0 ≤ covered ≤
            required); None when the counts are unreadable after one retry.
    """
    return StepsWithoutReference(max_tokens=max_tokens, temperature=temperature, seed=seed)
