"""Grading synthesised conclusions: the 0–5 rubric judge, the judge panel, and helper scorers."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .._util.errors import ConfigError, UsageError
from ..judges import ask
from ..models import GenerateConfig
from ..prompts import PromptTemplate
from ..tasks import Generation, Sample, SampleContext, Score, scorer
from ._evidence import parse_field, parse_score
from ._prompts import EBMEVAL, RUBRIC_RETRY_SCHEMA, PromptSet, prompt_set
from ._workflows import gold_studies

RUBRIC_MAX_TOKENS = 1024
"""Default reply budget of a rubric grade: five criteria, a justification and the overall line."""

JUDGE_CONFIG = GenerateConfig(temperature=0.0, max_tokens=RUBRIC_MAX_TOKENS)
"""Judges are greedy so a grade is reproducible, with a bounded reply."""

RETRY_CONFIG = GenerateConfig(temperature=0.0, max_tokens=64, response_schema=RUBRIC_RETRY_SCHEMA)
"""The retry asks for ``{"overall": 0..5}``, enforced while decoding where the provider can."""

CRITERIA = ("Main findings", "Specifics", "Nuance", "Implications", "Safety")
"""The rubric's criteria; ``Overall`` is the score."""


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
    prompts: PromptSet = EBMEVAL,
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


class RubricJudge:
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
        prompts: PromptSet = EBMEVAL,
    ) -> None:
        self.role = role
        self.config = GenerateConfig(temperature=temperature, max_tokens=max_tokens)
        self.retry_config = RETRY_CONFIG
        self._prompts = prompts

    @property
    def templates(self) -> tuple[PromptTemplate, ...]:
        """The rubric and its retry, recorded in the scorer's spec."""
        return self._prompts.rubric, self._prompts.rubric_retry

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


class RubricPanel:
    """``judge/rubric-panel``: several judges grade with the rubric; their mean is the score.

    ``judges`` are model roles of the task (``judge``, ``judge2`` …), each given its model with
    ``--role judge2=SPEC`` like any role (so its calls are cached, configured and recorded in the
    run's provenance). Values: ``rubric/<judge>`` per judge and ``rubric_mean`` = (1/m) Σ_j s_j
    over the m judges whose score parsed. Agreement across items is computed from the stored
    per-judge values by :func:`ebmeval.judges.panel_agreement`.
    """

    name = "judge/rubric-panel"

    def __init__(
        self,
        judges: Sequence[str] = ("judge", "judge2"),
        *,
        max_tokens: int = RUBRIC_MAX_TOKENS,
        temperature: float = 0.0,
        prompts: PromptSet = EBMEVAL,
    ) -> None:
        if len(judges) < 2:
            raise ConfigError("judges", f"a judge panel needs at least two judges, got {list(judges)}")
        self.judges = list(judges)
        self.config = GenerateConfig(temperature=temperature, max_tokens=max_tokens)
        self.retry_config = RETRY_CONFIG
        self._prompts = prompts

    @property
    def templates(self) -> tuple[PromptTemplate, ...]:
        """The rubric and its retry, recorded in the scorer's spec."""
        return self._prompts.rubric, self._prompts.rubric_retry

    @property
    def roles(self) -> list[str]:
        """The model roles of the panel's judges."""
        return self.judges

    def _role(self, ctx: SampleContext, judge: str) -> str:
        if judge not in ctx.models:
            raise UsageError(f"panel judge '{judge}' has no model: give one with --role {judge}=SPEC")
        return judge

    async def __call__(self, sample: Sample, generation: Generation, ctx: SampleContext) -> Score:
        """Grade the generation with every judge."""
        grades = {}
        for judge in self.judges:
            grades[judge] = await rubric_grade(
                ctx,
                f"{self.name}/{judge}",
                self._role(ctx, judge),
                sample,
                generation.output,
                self.config,
                self._prompts,
            )
        parsed = [g.overall for g in grades.values() if g.overall is not None]
        values: dict[str, float | None] = {f"rubric/{j}": g.overall for j, g in grades.items()}
        values["rubric_mean"] = statistics.fmean(parsed) if parsed else None
        return Score(
            values=values,
            metadata={
                "judges": {j: g.judge for j, g in grades.items()},
                "criteria": {j: g.criteria for j, g in grades.items()},
                "justifications": {j: g.justification for j, g in grades.items()},
                "raw": {j: g.raw for j, g in grades.items()},
                "prompt": self._prompts.rubric.id,
            },
        )


class RetrievalRecall:
    """``synthesis/retrieval-recall``: how many gold studies the retrieval put in the top k.

    recall = |gold ∩ retrieved| / |gold|, precision = |gold ∩ retrieved| / |retrieved|;
    ``None`` for a generation without retrieval. Gold is the item's studies; over a shared index
    (S-RAG's ``index`` design) its listed study PMIDs, a study counted once however many of its
    chunks were retrieved.
    """

    name = "synthesis/retrieval-recall"

    async def __call__(self, sample: Sample, generation: Generation, ctx: SampleContext) -> Score:
        """Count the gold documents among the retrieved ones."""
        index = generation.metadata.get("design") == "index"
        gold = gold_studies(sample) if index else {d.id for d in sample.documents}
        if generation.retrieved is None or not gold:
            return Score(values={"recall": None, "precision": None})
        hits = [r for r in generation.retrieved if r.document.id in gold or (index and r.gold)]
        found = len({str(r.document.metadata.get("pmid", r.document.id)) for r in hits}) if index else len(hits)
        precision = len(hits) / len(generation.retrieved) if generation.retrieved else None
        return Score(values={"recall": found / len(gold), "precision": precision})


class FeasibilityScore:
    """``synthesis/feasibility``: the mean 0–5 rating the ``feasibility`` workflow recorded."""

    name = "synthesis/feasibility"

    async def __call__(self, sample: Sample, generation: Generation, ctx: SampleContext) -> Score:
        """Read ``metadata["feasibility"]``."""
        value: Any = generation.metadata.get("feasibility")
        return Score(values={"feasibility": None if value is None else float(value)})


@scorer("judge/rubric-0-5")
def rubric_judge(
    role: str = "judge", max_tokens: int = RUBRIC_MAX_TOKENS, temperature: float = 0.0, prompts: str = "ebmeval"
) -> RubricJudge:
    """The 0–5 rubric judge playing ``role``, with its reply budget, temperature and prompt set."""
    return RubricJudge(role, max_tokens=max_tokens, temperature=temperature, prompts=prompt_set(prompts))


@scorer("judge/rubric-panel")
def rubric_panel(
    judges: Sequence[str] = ("judge", "judge2"),
    max_tokens: int = RUBRIC_MAX_TOKENS,
    temperature: float = 0.0,
    prompts: str = "ebmeval",
) -> RubricPanel:
    """A panel of rubric judges (roles), each with the reply budget, temperature and prompt set given."""
    return RubricPanel(judges, max_tokens=max_tokens, temperature=temperature, prompts=prompt_set(prompts))


@scorer("synthesis/retrieval-recall")
def retrieval_recall() -> RetrievalRecall:
    """Recall and precision of the gold studies among the retrieved documents."""
    return RetrievalRecall()


@scorer("synthesis/feasibility")
def feasibility_score() -> FeasibilityScore:
    """The feasibility workflow's mean rating as a score."""
    return FeasibilityScore()
