"""The reference judge (``judge/reference-0-5``): agreement of a free-text answer with the reference, 0–5."""

from __future__ import annotations

import re

from ..models import GenerateConfig
from ..prompts import add_judge_template
from ..tasks import Generation, Sample, SampleContext, Score, scorer
from ._ask import ask
from ._read import parse_score

REFERENCE_JUDGE = add_judge_template(
    "judge/reference",
    1,
    "You grade an answer to a question against the reference answer an expert wrote.\n\nQuestion:\n{question}\n\n"
    "Reference answer:\n{reference}\n\nCandidate answer:\n{candidate}\n\nHow well does the candidate agree with "
    "the reference, from 0 (contradicts it or unrelated) to 5 (says the same)? Reply in exactly this form:\n"
    "Rationale: <one or two sentences>\nScore: <0-5>",
    "judge/reference-0-5: agreement of a free-text answer with the reference answer.",
)
REFERENCE_RETRY = add_judge_template(
    "judge/reference-retry",
    1,
    'Your reply did not end with a line "Score: <0-5>". Give only that line.',
    "The one follow-up of an unreadable judge/reference-0-5 reply.",
)


class ReferenceJudge:
    """``judge/reference-0-5``: the judge rates agreement of the answer with the reference, 0–5.

    Value ``reference``; the rationale is the score's explanation and the raw replies are kept.
    """

    name = "judge/reference-0-5"
    templates = (REFERENCE_JUDGE, REFERENCE_RETRY)

    def __init__(self, role: str = "judge", max_tokens: int = 256) -> None:
        self.role = role
        self.config = GenerateConfig(temperature=0.0, max_tokens=max_tokens)

    async def __call__(self, sample: Sample, generation: Generation, ctx: SampleContext) -> Score:
        """Grade the generation."""
        prompt = REFERENCE_JUDGE.render(
            question=sample.input, reference=str(sample.target), candidate=generation.output
        )
        attempt = await ask(
            ctx, self.name, prompt, lambda text: parse_score(text, "Score"), REFERENCE_RETRY.text,
            config=self.config, role=self.role,
        )  # fmt: skip
        found = re.search(r"(?is)rationale\W*:\s*(.+?)\s*(?:score\W*:|$)", attempt.replies[0])
        rationale = found.group(1).strip() if found else None
        return Score(values={"reference": attempt.value}, explanation=rationale, metadata=attempt.metadata())


@scorer("judge/reference-0-5")
def reference_judge(role: str = "judge", max_tokens: int = 256) -> ReferenceJudge:
    """A judge rating a free-text answer's agreement with the reference answer, 0–5.

    Metrics:
        reference: the judge's 0–5 agreement of the answer with the reference answer (0: contradicts it
            or unrelated, 5: says the same), read from its last "Score: N" line, asked once more when
            absent; None when neither reply gives one.
    """
    return ReferenceJudge(role, max_tokens)
