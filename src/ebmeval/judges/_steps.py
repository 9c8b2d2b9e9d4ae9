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

from collections.abc import Sequence
from typing import Any

from .._util.errors import ConfigError, DataError
from ..models import GenerateConfig
from ..prompts import (
    PROMPT_VARIANTS,
    STEP_PROMPTS,
    STEPS_SINGLE,
    STEPS_WITHOUT_REFERENCE,
    STRICT_COUNTS,
    STRICT_VERDICT,
    STRICT_VERDICTS,
    PromptTemplate,
)
from ..tasks import JUDGE, Generation, Sample, SampleContext, Score, scorer
from ._ask import ask
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


class StepsWithReference:
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

    templates = (STRICT_VERDICT,)

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
        if prompt not in STEP_PROMPTS:
            raise ConfigError("prompt", f"must be one of {', '.join(PROMPT_VARIANTS)}, not {prompt!r}")
        self.template: PromptTemplate = STEP_PROMPTS[prompt]
        self.prompt = prompt
        self.name = name or ("judge/steps-with-reference" + ("" if prompt == PROMPT_VARIANTS[0] else f"@{prompt}"))
        self.steps_key = steps_key
        self.role = role
        self.config = GenerateConfig(temperature=temperature, max_tokens=max_tokens, seed=seed)

    @property
    def call_templates(self) -> dict[str, tuple[PromptTemplate, ...]]:
        """Its judge questions' templates: the variant's and the strict follow-up (``ebmeval describe``)."""
        return {JUDGE.name: (self.template, *self.templates)}

    async def __call__(self, sample: Sample, generation: Generation, ctx: SampleContext) -> Score:
        """Judge every expert step against the rationale."""
        steps = expert_steps(sample, self.steps_key)
        rationale = rationale_of(generation)
        verdicts: list[dict[str, Any]] = []
        for number, step in enumerate(steps, start=1):
            prompt = self.template.render(question=sample.input, rationale=rationale, step=step)
            attempt = await ask(
                ctx,
                f"{self.name}/step-{number}",
                prompt,
                parse_verdict,
                STRICT_VERDICT.render(),
                config=self.config,
                role=self.role,
            )
            verdicts.append(
                {"step": step, "supported": attempt.value, "retried": attempt.retried, "replies": attempt.replies}
            )
        return _verdict_score(self.name, ctx, verdicts, self.template.id, ctx.model(self.role).name)


class StepsWithReferenceSingle:
    """All expert steps judged in one call, one ``<n>: YES|NO`` line each.

    Same score and metadata as :class:`StepsWithReference`: ``steps_supported`` =
    supported / expert steps, ``None`` when the verdict lines stayed unreadable.
    """

    templates = (STEPS_SINGLE, STRICT_VERDICTS)

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
        self.name = name
        self.steps_key = steps_key
        self.role = role
        self.config = GenerateConfig(temperature=temperature, max_tokens=max_tokens, seed=seed)

    async def __call__(self, sample: Sample, generation: Generation, ctx: SampleContext) -> Score:
        """Judge all expert steps in one call."""
        steps = expert_steps(sample, self.steps_key)
        prompt = STEPS_SINGLE.render(question=sample.input, rationale=rationale_of(generation), steps=numbered(steps))
        attempt = await ask(
            ctx,
            f"{self.name}/steps",
            prompt,
            lambda text: parse_verdicts(text, len(steps)),
            STRICT_VERDICTS.render(n=str(len(steps))),
            config=self.config,
            role=self.role,
        )
        found: Sequence[bool | None] = attempt.value if attempt.value is not None else [None] * len(steps)
        verdicts = [
            {"step": step, "supported": verdict, "retried": attempt.retried}
            for step, verdict in zip(steps, found, strict=True)
        ]
        score = _verdict_score(self.name, ctx, verdicts, STEPS_SINGLE.id, ctx.model(self.role).name)
        score.metadata["replies"] = attempt.replies
        return score


class StepsWithoutReference:
    """The judge estimates the steps a full answer needs and how many the rationale covers.

    score ``steps_covered`` = covered / required (the judge's own counts, 0 ≤ covered ≤
    required, required ≥ 1); ``None`` when the counts stayed unreadable.
    """

    templates = (STEPS_WITHOUT_REFERENCE, STRICT_COUNTS)

    def __init__(
        self,
        *,
        max_tokens: int = LIST_MAX_TOKENS,
        temperature: float = 0.0,
        name: str = "judge/steps-without-reference",
        role: str = "judge",
        seed: int | None = None,
    ) -> None:
        self.name = name
        self.role = role
        self.config = GenerateConfig(temperature=temperature, max_tokens=max_tokens, seed=seed)

    async def __call__(self, sample: Sample, generation: Generation, ctx: SampleContext) -> Score:
        """Ask for the required and covered step counts."""
        prompt = STEPS_WITHOUT_REFERENCE.render(question=sample.input, rationale=rationale_of(generation))
        attempt = await ask(
            ctx, f"{self.name}/counts", prompt, parse_counts, STRICT_COUNTS.render(), config=self.config, role=self.role
        )
        metadata: dict[str, Any] = {
            "prompt": STEPS_WITHOUT_REFERENCE.id,
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
