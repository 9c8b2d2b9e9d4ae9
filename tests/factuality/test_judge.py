import json
from collections.abc import Sequence

from ebmeval.factuality import FactualityJudge, closest_statement, jaccard, label_claim, parse_reply
from ebmeval.models import ChatMessage, GenerateConfig, Model
from ebmeval.models.providers.scripted import ScriptedModel
from ebmeval.tasks import Generation, ParsedAnswer, Sample, SampleContext, create_scorer

COMPARE_OK = json.dumps(
    {f: "yes" for f in ("population", "intervention", "outcome", "grammar", "lexical", "non_redundancy")}
    | {"reason": "same PICO"}
)


def ctx_with(replies: object) -> tuple[SampleContext, ScriptedModel]:
    api = ScriptedModel(replies)  # type: ignore[arg-type]
    return SampleContext({"model": Model(api), "judge": Model(api)}), api


def test_parse_reply_json_and_lines() -> None:
    assert parse_reply('Sure: {"Direction": "positive", "modality": "weak"} done') == {
        "direction": "positive",
        "modality": "weak",
    }
    assert parse_reply("- Direction: no effect\n**Modality**: Strong claim\nnoise") == {
        "direction": "no effect",
        "modality": "Strong claim",
    }
    assert parse_reply("nothing here") == {}


def test_closest_statement_uses_jaccard() -> None:
    assert jaccard("a b c", "b c d") == 0.5
    target = "Statins reduce mortality in adults. Aspirin has no effect on stroke."
    sentence, similarity = closest_statement("aspirin has no effect on stroke risk", target)
    assert sentence == "Aspirin has no effect on stroke."
    assert similarity == 6 / 7


async def test_label_claim_retries_once_then_gives_up_keeping_raw() -> None:
    ctx, api = ctx_with(["I think it is good", '{"direction": "positive", "modality": "moderate"}'])
    label = await label_claim(ctx, "s", "X improves Y.")
    assert (label.direction, label.modality, label.parsed) == ("positive", "moderate", True)
    assert ctx.steps == ["s", "s/retry"]
    # The retry shows the model its unreadable reply and asks again.
    assert [m.role for m in api.requests[1][0]] == ["user", "assistant", "user"]

    ctx, _ = ctx_with(["no idea", "still no idea"])
    label = await label_claim(ctx, "s", "X improves Y.")
    assert label.parsed is False and label.modality is None and label.raw == ("no idea", "still no idea")


async def test_label_claim_drops_direction_without_a_claim_and_maps_change_scheme() -> None:
    ctx, _ = ctx_with(['{"direction": "positive", "modality": "no evidence"}'])
    assert (await label_claim(ctx, "s", "Evidence is insufficient.")).direction is None
    ctx, api = ctx_with(['{"direction": "decreased", "modality": "moderate"}'])
    focus = {"intervention": "drug", "comparator": "placebo", "outcome": "pain"}
    label = await label_claim(ctx, "s", "abstract", focus=focus, scheme="change")
    assert label.direction == "negative"
    assert "Outcome: pain" in api.requests[0][0][0].content and '"increased"' in api.requests[0][0][0].content


def responder(messages: Sequence[ChatMessage], config: GenerateConfig) -> str:
    prompt = messages[0].content
    if prompt.startswith("You compare"):
        return COMPARE_OK.replace('"grammar": "yes"', '"grammar": "no"')
    if "Statement: Statins reduce mortality" in prompt:
        return '{"direction": "positive", "modality": "moderate", "reason": "reduces"}'
    return "direction: positive\nmodality: weak\nreason: may"


async def test_judge_scores_schema_with_reasons() -> None:
    ctx, _ = ctx_with(responder)
    sample = Sample(id="r1", input="", target="Statins reduce mortality. Nothing else is known about aspirin.")
    generation = Generation(sample_id="r1", output="Statins may reduce mortality.", answer=ParsedAnswer(value="x"))
    score = await create_scorer("judge/factuality")(sample, generation, ctx)
    assert ctx.steps == ["judge/factuality/target", "judge/factuality/generated", "judge/factuality/compare"]
    v = score.values
    assert v["population"] == 1.0 and v["direction"] == 1.0 and v["modality"] == 0.0 and v["grammar"] == 0.0
    assert v["pico"] == 1.0 and v["factually_correct"] == 0.0 and v["fully_correct"] == 0.0
    assert score.metadata["statement"] == "Statins reduce mortality."
    assert score.metadata["generated"]["modality"] == "weak"
    assert "same PICO" in (score.explanation or "")


async def test_judge_unparseable_compare_gives_none_and_keeps_raw() -> None:
    replies = ['{"direction": "positive", "modality": "moderate"}'] * 2 + ["garbage", "more garbage"]
    ctx, _ = ctx_with(replies)
    judge = FactualityJudge()
    verdict = await judge.judge(ctx, "A works.", "A works.")
    assert verdict.labels.population is None and verdict.labels.pico is None
    assert verdict.labels.direction is True and verdict.compare_raw == ("garbage", "more garbage")


async def test_the_intervention_question_leaves_the_comparator_out_as_the_paper_does() -> None:
    """The paper omits Comparison (footnote 2); the judge asked for "the same intervention (and comparator)"."""
    label = '{"direction": "positive", "modality": "moderate"}'
    ctx, api = ctx_with([label, label, COMPARE_OK])
    await FactualityJudge().judge(ctx, "Statins reduce mortality.", "Statins lower mortality.")
    compare = api.requests[2][0][-1].content
    assert compare.startswith("You compare") and "intervention: the same intervention" in compare
    assert "comparator" not in compare.lower()
