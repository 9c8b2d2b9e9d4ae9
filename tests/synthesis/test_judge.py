from __future__ import annotations

import pytest

from ebmeval._util.errors import ConfigError, UsageError
from ebmeval.models.providers.scripted import ScriptedModel
from ebmeval.prompts import RUBRIC_RETRY_SCHEMA
from ebmeval.synthesis import RubricJudge, RubricPanel, parse_questions, parse_score, water_fill
from ebmeval.tasks import Generation, ParsedAnswer

from .helpers import SAMPLE, context, scripted

GENERATION = Generation(sample_id="r1", output="Statins help.", answer=ParsedAnswer(value="Statins help."))


def test_parse_score_takes_the_last_labelled_value() -> None:
    assert parse_score("Score: 2\n...\n**Score:** 4/5", "Score") == 4.0
    assert parse_score("Overall: 3.5", "Overall") == 3.5
    assert parse_score("Overall: 7", "Overall") is None
    assert parse_score("no score", "Score") is None


def test_parse_questions_numbered_bulleted_or_question_lines() -> None:
    assert parse_questions("1. A?\n2) B?\n- C?\n3. A?", 5) == ["A?", "B?", "C?"]
    assert parse_questions("Is X safe?\nsome text", 3) == ["Is X safe?"]
    assert parse_questions("1. a\n2. b\n3. c", 2) == ["a", "b"]


def test_water_fill_share_solves_the_budget() -> None:
    assert water_fill([10, 50, 100], 1000) == 100
    share = water_fill([10, 50, 100], 90)
    assert share == 40 and min(10, share) + min(50, share) + min(100, share) == 90


async def test_rubric_judge_scores_and_keeps_criteria() -> None:
    api = scripted()
    ctx = context(api)
    score = await RubricJudge()(SAMPLE, GENERATION, ctx)
    assert score.values == {"rubric": 4.0}
    assert score.metadata["criteria"]["Safety"] == 5.0
    assert score.explanation == "close."
    assert ctx.steps == ["judge/rubric-0-5"]
    assert api.requests[0][1].temperature == 0.0
    prompt = api.requests[0][0][-1].content
    assert "Statins reduce cardiovascular events" in prompt and "Statins help." in prompt


async def test_unparseable_rubric_is_retried_once_then_marked_none_with_raw_kept() -> None:
    api = ScriptedModel(["I think it is fine.", "Still fine."])
    ctx = context(api)
    score = await RubricJudge()(SAMPLE, GENERATION, ctx)
    assert score.values == {"rubric": None}
    assert ctx.steps == ["judge/rubric-0-5", "judge/rubric-0-5/retry"]
    assert "I think it is fine." in score.metadata["raw"] and "Still fine." in score.metadata["raw"]
    retry_messages = api.requests[1][0]
    assert [m.role for m in retry_messages] == ["user", "assistant", "user"]
    assert api.requests[1][1].response_schema == RUBRIC_RETRY_SCHEMA


async def test_retry_reads_the_json_score() -> None:
    api = ScriptedModel(["fine", '{\n  "overall" : 3 }'])
    score = await RubricJudge()(SAMPLE, GENERATION, context(api))
    assert score.values == {"rubric": 3.0}


async def test_retry_that_parses_gives_the_score() -> None:
    api = ScriptedModel(["fine", "Overall: 2"])
    score = await RubricJudge()(SAMPLE, GENERATION, context(api))
    assert score.values == {"rubric": 2.0} and score.metadata["retried"] is True


async def test_panel_keeps_each_judge_and_averages_the_parsed_ones() -> None:
    judge2 = ScriptedModel(["nonsense", "nonsense again"], name="scripted/j2")
    judge3 = ScriptedModel(["Overall: 2"], name="scripted/j3")
    ctx = context(scripted(), judge2=judge2, judge3=judge3)
    score = await RubricPanel(["judge", "judge2", "judge3"])(SAMPLE, GENERATION, ctx)
    assert score.values == {"rubric/judge": 4.0, "rubric/judge2": None, "rubric/judge3": 2.0, "rubric_mean": 3.0}
    assert "judge/rubric-panel/judge2/retry" in ctx.steps


async def test_panel_judges_come_from_roles_only() -> None:
    ctx = context(scripted())
    with pytest.raises(UsageError, match="--role scripted:Overall: 1=SPEC"):
        await RubricPanel(["judge", "scripted:Overall: 1"])(SAMPLE, GENERATION, ctx)


def test_panel_needs_two_judges() -> None:
    with pytest.raises(ConfigError, match="at least two"):
        RubricPanel(["judge"])


async def test_retrieval_recall_counts_gold_among_retrieved() -> None:
    from ebmeval.synthesis import RetrievalRecall
    from ebmeval.tasks import Document, RetrievedDocument

    retrieved = [
        RetrievedDocument(document=Document(id=i, text="t"), score=1.0, rank=r)
        for r, i in enumerate(["s1", "n1", "n2", "n3"], start=1)
    ]
    generation = GENERATION.model_copy(update={"retrieved": retrieved})
    score = await RetrievalRecall()(SAMPLE, generation, context(scripted()))
    assert score.values == {"recall": 0.5, "precision": 0.25}
    assert (await RetrievalRecall()(SAMPLE, GENERATION, context(scripted()))).values == {
        "recall": None,
        "precision": None,
    }


PAPER_REPLY = (
    "1. Justification: The generated conclusion keeps the main finding and most specifics but omits the "
    "certainty of the evidence.\n2. Score: 4"
)


async def test_medmeta_paper_rubric_is_the_papers_and_its_reply_format_parses_without_a_retry() -> None:
    from ebmeval.synthesis import MEDMETA_PAPER

    api = ScriptedModel([PAPER_REPLY])
    ctx = context(api)
    score = await RubricJudge(prompts=MEDMETA_PAPER)(SAMPLE, GENERATION, ctx)
    assert score.values == {"rubric": 4.0} and ctx.steps == ["judge/rubric-0-5"]  # no retry
    assert score.explanation.startswith("The generated conclusion keeps the main finding")
    assert score.metadata["prompt"] == "synthesis/medmeta-paper/rubric@v1"
    prompt = api.requests[0][0][-1].content
    for text in (  # MedMeta Appendix E.1 and E.2
        "You are an expert **Clinical Research Scientist and Critical Appraiser**",
        "5 = Excellent Equivalent (all criteria met)",
        "4 = High Equivalent (main findings + most specifics)",
        "3 = Moderate Equivalent (main findings but missing details)",
        "2 = Low Related (some elements, misrepresents core)",
        "1 = Very Low Related (substantially different)",
        "0 = Contradictory",
        "(5) Safety/Tolerability - adverse effects if applicable;",
        "(6) Overall Semantic Equivalence - core message preservation.",
        "1. Justification: [Your detailed explanation]\n2. Score: [Your score from 0-5]",
    ):
        assert text in prompt
    assert "Statins reduce cardiovascular events" in prompt and "Statins help." in prompt


def test_parse_score_reads_numbered_lines() -> None:
    assert parse_score(PAPER_REPLY, "Score") == 4.0
    assert parse_score("**2. Score:** 3/5", "Score") == 3.0
