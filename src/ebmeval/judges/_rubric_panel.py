"""The rubric panel (``judge/rubric-panel``): several judges grade with the 0–5 rubric; their mean is the score."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from .._util.errors import ConfigError, UsageError
from ..prompts import EBMEVAL_RUBRIC, rubric_wording
from ..tasks import Generation, Sample, SampleContext, Score, scorer
from ._rubric import RUBRIC_MAX_TOKENS, RubricGrader, RubricPrompts, rubric_grade


class RubricPanel(RubricGrader):
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
        prompts: RubricPrompts = EBMEVAL_RUBRIC,
    ) -> None:
        if len(judges) < 2:
            raise ConfigError("judges", f"a judge panel needs at least two judges, got {list(judges)}")
        super().__init__(max_tokens=max_tokens, temperature=temperature, prompts=prompts)
        self.judges = list(judges)

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


@scorer("judge/rubric-panel")
def rubric_panel(
    judges: Sequence[str] = ("judge", "judge2"),
    max_tokens: int = RUBRIC_MAX_TOKENS,
    temperature: float = 0.0,
    prompts: str = "ebmeval",
) -> RubricPanel:
    """A panel of rubric judges (roles), each with the reply budget, temperature and prompt set given.

    Metrics:
        rubric/*: rubric/J is the overall 0–5 rubric grade of judge role J, read as judge/rubric-0-5
            reads it; None when unreadable.
        rubric_mean: (1/m) Σ_j s_j, the mean of the m judges' grades that were read; None when none was.
    """
    return RubricPanel(judges, max_tokens=max_tokens, temperature=temperature, prompts=rubric_wording(prompts))
