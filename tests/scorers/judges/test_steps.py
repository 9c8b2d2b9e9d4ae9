from __future__ import annotations

from collections.abc import Sequence

import pytest

from ebmeval._util.errors import ConfigError, DataError
from ebmeval.models import ChatMessage, GenerateConfig, Model
from ebmeval.models.providers.scripted import ScriptedModel
from ebmeval.prompts import templates
from ebmeval.scorers.judges import (
    PROMPT_VARIANTS,
    STEP_PROMPTS,
    StepsWithoutReference,
    StepsWithReference,
    StepsWithReferenceSingle,
)
from ebmeval.tasks import Generation, ParsedAnswer, Sample, SampleContext, create_scorer, scorer_registry

SAMPLE = Sample(
    id="7",
    input="Which test first for suspected acromegaly?",
    target="A. IGF1",
    metadata={"scoring_points": ["Features suggest acromegaly.", "IGF-1 is the first test.", "GH suppression test."]},
)
GENERATION = Generation(
    sample_id="7",
    output="The jaw suggests acromegaly. IGF-1 first.\nFinal answer: A",
    answer=ParsedAnswer(value="A"),
    metadata={"rationale": "The jaw suggests acromegaly. IGF-1 first."},
)


def context(replies: Sequence[str]) -> tuple[SampleContext, ScriptedModel]:
    judge = ScriptedModel(list(replies), name="scripted/judge")
    return SampleContext({"model": Model(ScriptedModel()), "judge": Model(judge)}), judge


def test_registered_under_their_names() -> None:
    names = {"judge/steps-with-reference", "judge/steps-with-reference-single", "judge/steps-without-reference"}
    assert names <= set(scorer_registry)
    assert create_scorer("judge/steps-with-reference", prompt="p3").name == "judge/steps-with-reference@p3"
    assert create_scorer("judge/steps-with-reference").name == "judge/steps-with-reference"


def test_five_distinct_prompt_variants_with_the_same_fields() -> None:
    assert PROMPT_VARIANTS == ("p1", "p2", "p3", "p4", "p5")
    texts = {STEP_PROMPTS[p].render(question="Q", rationale="R", step="S") for p in PROMPT_VARIANTS}
    assert len(texts) == 5
    assert all("Verdict: YES" in t and "\nR\n" in t and "S" in t for t in texts)
    assert "steps/p1" in templates


async def test_per_step_score_verdicts_and_steps() -> None:
    ctx, judge = context(["Verdict: YES", "It says IGF-1.\nVerdict: yes", "Verdict: NO"])
    score = await StepsWithReference()(SAMPLE, GENERATION, ctx)
    assert score.values == {"steps_supported": pytest.approx(2 / 3)}
    assert [v["supported"] for v in score.metadata["verdicts"]] == [True, True, False]
    assert score.metadata["prompt"] == "steps/p1@v1"
    assert score.metadata["judge"] == "scripted/judge"
    names = ["judge/steps-with-reference/step-1", "judge/steps-with-reference/step-2"]
    assert ctx.steps[:2] == names
    assert ctx.steps[-1] == "judge/steps-with-reference/verdicts"
    recorded = ctx.memo.get_step("judge/steps-with-reference/verdicts")
    assert recorded is not None and recorded["supported"] == 2 and recorded["steps"] == 3
    prompt = judge.requests[1][0][0].content
    assert "IGF-1 is the first test." in prompt and "The jaw suggests acromegaly. IGF-1 first." in prompt
    assert "Final answer" not in prompt
    assert judge.requests[0][1].temperature == 0.0


async def test_unreadable_reply_is_retried_once_with_a_stricter_instruction() -> None:
    ctx, judge = context(["Hmm, partly.", "Verdict: YES", "Verdict: NO", "Verdict: NO"])
    score = await StepsWithReference()(SAMPLE, GENERATION, ctx)
    assert score.values == {"steps_supported": pytest.approx(1 / 3)}
    assert score.metadata["verdicts"][0]["retried"] is True
    assert score.metadata["verdicts"][0]["replies"] == ["Hmm, partly.", "Verdict: YES"]
    assert "judge/steps-with-reference/step-1/retry" in ctx.steps
    retry: list[ChatMessage] = judge.requests[1][0]
    assert [m.role for m in retry] == ["user", "assistant", "user"]
    assert "could not be read" in retry[2].content


async def test_unreadable_twice_gives_none_not_zero() -> None:
    ctx, _judge = context(["maybe", "perhaps", "Verdict: YES", "Verdict: YES"])
    score = await StepsWithReference()(SAMPLE, GENERATION, ctx)
    assert score.values == {"steps_supported": None}
    assert score.metadata["unreadable"] == 1
    assert score.metadata["verdicts"][0]["replies"] == ["maybe", "perhaps"]
    assert score.explanation == "1 of 3 step verdicts unreadable"


async def test_finished_steps_are_replayed_not_repeated() -> None:
    ctx, judge = context(["Verdict: YES", "Verdict: YES", "Verdict: NO"])
    first = await StepsWithReference()(SAMPLE, GENERATION, ctx)
    again = SampleContext({"judge": Model(ScriptedModel([], name="scripted/judge"))}, ctx.memo)
    second = await StepsWithReference()(SAMPLE, GENERATION, again)
    assert second.values == first.values
    assert len(judge.requests) == 3


async def test_another_judge_never_replays_the_first_judges_steps() -> None:
    ctx, _judge = context(["Verdict: YES", "Verdict: YES", "Verdict: YES"])
    await StepsWithReference()(SAMPLE, GENERATION, ctx)
    other = ScriptedModel(["Verdict: NO"] * 3, name="scripted/other-judge")
    second = await StepsWithReference()(SAMPLE, GENERATION, SampleContext({"judge": Model(other)}, ctx.memo))
    assert len(other.requests) == 3
    assert second.values == {"steps_supported": 0.0}


async def test_single_call_variant() -> None:
    ctx, judge = context(["1: YES\n2: NO\n3: NO"])
    score = await StepsWithReferenceSingle()(SAMPLE, GENERATION, ctx)
    assert score.values == {"steps_supported": pytest.approx(1 / 3)}
    assert [v["supported"] for v in score.metadata["verdicts"]] == [True, False, False]
    assert "3. GH suppression test." in judge.requests[0][0][0].content
    assert ctx.steps[0] == "judge/steps-with-reference-single/steps"


async def test_single_call_unreadable_twice() -> None:
    ctx, judge = context(["1: YES", "1: YES\n2: YES"])
    score = await StepsWithReferenceSingle()(SAMPLE, GENERATION, ctx)
    assert score.values == {"steps_supported": None}
    assert score.metadata["replies"] == ["1: YES", "1: YES\n2: YES"]
    assert "exactly 3 lines" in judge.requests[1][0][2].content


async def test_without_reference_counts() -> None:
    ctx, judge = context(["Needs 4 steps.\nRequired steps: 4\nCovered steps: 1"])
    score = await StepsWithoutReference()(SAMPLE, GENERATION, ctx)
    assert score.values == {"steps_covered": pytest.approx(0.25)}
    assert score.metadata["required"] == 4 and score.metadata["covered"] == 1
    assert "Features suggest acromegaly." not in judge.requests[0][0][0].content


async def test_without_reference_inconsistent_counts_retried_then_none() -> None:
    ctx, _judge = context(["Required steps: 2\nCovered steps: 5", "Required: 2"])
    score = await StepsWithoutReference()(SAMPLE, GENERATION, ctx)
    assert score.values == {"steps_covered": None}
    assert score.metadata["retried"] is True


async def test_rationale_falls_back_to_the_output() -> None:
    ctx, judge = context(["Required steps: 1\nCovered steps: 1"])
    bare = Generation(sample_id="7", output="Only the output.", answer=ParsedAnswer(value="x"))
    await StepsWithoutReference()(SAMPLE, bare, ctx)
    assert "Only the output." in judge.requests[0][0][0].content


async def test_missing_expert_steps_is_a_data_error() -> None:
    ctx, _judge = context([])
    with pytest.raises(DataError, match="metadata.scoring_points"):
        await StepsWithReference()(Sample(id="x", input="q"), GENERATION, ctx)


def test_unknown_prompt_variant() -> None:
    with pytest.raises(ConfigError, match="p1, p2, p3, p4, p5"):
        StepsWithReference("p9")


def test_judge_config() -> None:
    assert StepsWithReference(max_tokens=50).config == GenerateConfig(temperature=0.0, max_tokens=50)
