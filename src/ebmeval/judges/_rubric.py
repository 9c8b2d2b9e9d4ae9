"""The 0–5 rubric judge (``judge/rubric-0-5``) of a synthesised conclusion against the reference.

The rubric is worded by a :class:`~ebmeval.prompts.Rubric` (or a synthesis prompt set).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ..models import GenerateConfig
from ..prompts import EBMEVAL_RUBRIC, RUBRIC_RETRY_SCHEMA, PromptTemplate, rubric_wording
from ..tasks import Generation, Sample, SampleContext, Score, scorer
from ._ask import ask
from ._read import parse_field, parse_score

RUBRIC_MAX_TOKENS = 1024
"""Default reply budget of a rubric grade: five criteria, a justification and the overall line."""

JUDGE_CONFIG = GenerateConfig(temperature=0.0, max_tokens=RUBRIC_MAX_TOKENS)
"""Judges are greedy so a grade is reproducible, with a bounded reply."""

RETRY_CONFIG = GenerateConfig(temperature=0.0, max_tokens=64, response_schema=RUBRIC_RETRY_SCHEMA)
"""The retry asks for ``{"overall": 0..5}``, enforced while decoding where the provider can."""

CRITERIA = ("Main findings", "Specifics", "Nuance", "Implications", "Safety")
"""The rubric's criteria; ``Overall`` is the score."""


class RubricPrompts(Protocol):
    """What a judge needs of a rubric wording: a :class:`~ebmeval.prompts.Rubric` or ``ebmeval.synthesis.PromptSet``."""

    @property
    def rubric(self) -> PromptTemplate: ...

    @property
    def rubric_retry(self) -> PromptTemplate: ...

    @property
    def score_label(self) -> str: ...


@dataclass
class RubricGrade:
    """One judge's grade of one candidate conclusion."""

    overall: float | None
    """0–5 overall equivalence, ``None`` when unparseable after one retry."""
    criteria: dict[str, float | None]
    justification: str
    raw: str
    """The judge's reply (both replies when it was retried)."""
    retried: bool
    judge: str


async def rubric_grade(
    ctx: SampleContext,
    step: str,
    role: str,
    sample: Sample,
    candidate: str,
    config: GenerateConfig = JUDGE_CONFIG,
    prompts: RubricPrompts = EBMEVAL_RUBRIC,
) -> RubricGrade:
    """Grade ``candidate`` against the sample's reference with the 0–5 rubric of ``prompts``.

    Step ``<step>`` asks for the rubric; when no score line (``Overall: N``, or MedMeta's
    ``Score: N``: the set's ``score_label``) parses, step ``<step>/retry`` asks once more in the
    same conversation for ``{"overall": N}`` (decoded under a JSON schema where the provider
    supports one), and a second failure gives ``overall=None`` with the raw replies kept.
    """
    rubric = prompts.rubric
    prompt = rubric.render(title=sample.input, reference=str(sample.target), candidate=candidate or "(empty)")
    attempt = await ask(
        ctx,
        step,
        prompt,
        lambda text: parse_score(text, prompts.score_label),
        prompts.rubric_retry.text,
        config=config,
        role=role,
        retry_config=RETRY_CONFIG.model_copy(update={"temperature": config.temperature}),
    )
    first = attempt.replies[0]
    return RubricGrade(
        overall=attempt.value,
        criteria={c: parse_score(first, c) for c in CRITERIA},
        justification=parse_field(first.split(prompts.score_label)[0], "Justification"),
        raw="\n---\n".join(attempt.replies),
        retried=attempt.retried,
        judge=ctx.model(role).name,
    )


class RubricGrader:
    """What the rubric judges share: greedy, bounded replies and the wording they grade in."""

    def __init__(self, *, max_tokens: int, temperature: float, prompts: RubricPrompts) -> None:
        self.config = GenerateConfig(temperature=temperature, max_tokens=max_tokens)
        self.retry_config = RETRY_CONFIG
        self._prompts = prompts

    @property
    def templates(self) -> tuple[PromptTemplate, ...]:
        """The rubric and its retry, recorded in the scorer's spec."""
        return self._prompts.rubric, self._prompts.rubric_retry


class RubricJudge(RubricGrader):
    """``judge/rubric-0-5``: one judge model grades semantic equivalence to the reference, 0–5.

    Value ``rubric`` is the judge's overall score (``None`` when unparseable after one retry);
    the per-criterion scores, justification and raw reply are in the score's metadata.
    """

    name = "judge/rubric-0-5"

    def __init__(
        self,
        role: str = "judge",
        *,
        max_tokens: int = RUBRIC_MAX_TOKENS,
        temperature: float = 0.0,
        prompts: RubricPrompts = EBMEVAL_RUBRIC,
    ) -> None:
        super().__init__(max_tokens=max_tokens, temperature=temperature, prompts=prompts)
        self.role = role

    async def __call__(self, sample: Sample, generation: Generation, ctx: SampleContext) -> Score:
        """Grade the generation."""
        grade = await rubric_grade(ctx, self.name, self.role, sample, generation.output, self.config, self._prompts)
        return Score(
            values={"rubric": grade.overall},
            explanation=grade.justification or None,
            metadata={
                "judge": grade.judge,
                "criteria": grade.criteria,
                "raw": grade.raw,
                "retried": grade.retried,
                "prompt": self._prompts.rubric.id,
            },
        )


@scorer("judge/rubric-0-5")
def rubric_judge(
    role: str = "judge", max_tokens: int = RUBRIC_MAX_TOKENS, temperature: float = 0.0, prompts: str = "ebmeval"
) -> RubricJudge:
    """The 0–5 rubric judge playing ``role``, with its reply budget, temperature and prompt set.

    Metrics:
        rubric: the judge's overall grade, 0–5, of the answer's equivalence to the reference conclusion
            (criteria: main findings, specifics, nuance, implications, safety), read from its last
            "Overall: N" line ("Score: N" with the MedMeta prompts) or, after one retry, {"overall": N};
            None when neither reply gives one.
    """
    return RubricJudge(role, max_tokens=max_tokens, temperature=temperature, prompts=rubric_wording(prompts))
