from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ebmeval._util.errors import ConfigError, DataError, UsageError
from ebmeval.cli._app import app
from ebmeval.models.providers.scripted import ScriptedModel
from ebmeval.synthesis import (
    Feasibility,
    GoldenRAG,
    NegatedRAG,
    NegationStore,
    ParametricCoT,
    ParametricZeroShot,
    StandardRAG,
    read_negations,
)
from ebmeval.tasks import Document, MemoryMemo, Sample

from .helpers import SAMPLE, context, prompts, scripted


async def test_zero_shot_sends_title_and_background_only() -> None:
    api = scripted()
    result = await ParametricZeroShot()(SAMPLE, context(api))
    (prompt,) = prompts(api)
    assert SAMPLE.input in prompt and "Cardiovascular disease is common." in prompt
    assert "myocardial" not in prompt
    assert result.output == "Statins reduce events."


async def test_cot_stops_when_the_evaluator_reaches_the_threshold() -> None:
    api = scripted(["Score: 2\nFeedback: no harms", "Score: 4\nFeedback: good"])
    ctx = context(api)
    result = await ParametricCoT(max_iterations=5, threshold=4)(SAMPLE, ctx)
    assert ctx.steps == [
        "plan",
        "answer/1/1",
        "answer/1/2",
        "draft/1",
        "evaluate/1",
        "replan/1",
        "answer/2/1",
        "answer/2/2",
        "draft/2",
        "evaluate/2",
    ]
    assert result.metadata["stopped_by"] == "threshold"
    assert [h["score"] for h in result.metadata["history"]] == [2.0, 4.0]
    revision = prompts(api)[8]
    assert "Your previous draft was" in revision and "no harms" in revision


async def test_cot_plans_five_sub_questions_by_default_as_the_paper() -> None:
    api = scripted()
    await ParametricCoT(max_iterations=1)(SAMPLE, context(api))
    assert "at most 5 focused sub-questions" in prompts(api)[0]


async def test_cot_stops_at_the_iteration_bound_and_unparsed_scores_do_not_pass() -> None:
    api = scripted(["I cannot score this."])
    ctx = context(api)
    result = await ParametricCoT(max_iterations=2, threshold=4, n_questions=1)(SAMPLE, ctx)
    assert [s for s in ctx.steps if s.startswith(("draft", "evaluate", "replan"))] == [
        "draft/1",
        "evaluate/1",
        "replan/1",
        "draft/2",
        "evaluate/2",
    ]
    assert result.metadata["stopped_by"] == "max_iterations"
    assert result.metadata["iterations"] == 2
    assert result.metadata["history"][0]["score"] is None


async def test_cot_resume_replays_finished_steps() -> None:
    memo = MemoryMemo()
    first = ScriptedModel(["1. Q one?", "A one", "Draft one"])
    with pytest.raises(Exception, match="no scripted reply left"):
        await ParametricCoT(n_questions=1)(SAMPLE, context(first, memo))
    assert {step for step, _request in memo.steps} == {"plan", "answer/1/1", "draft/1"}
    second = scripted()
    result = await ParametricCoT(n_questions=1)(SAMPLE, context(second, memo))
    assert len(second.requests) == 1 and "rate how complete" in prompts(second)[0]
    assert result.output == "Draft one"


def test_cot_rejects_bad_bounds() -> None:
    with pytest.raises(ConfigError, match="max_iterations"):
        ParametricCoT(max_iterations=0)


def test_counts_below_one_are_refused_naming_the_field() -> None:
    with pytest.raises(ConfigError, match="field 'max_iterations': must be at least 1, not 0"):
        ParametricCoT(max_iterations=0)
    with pytest.raises(ConfigError, match="field 'k': must be at least 1, not 0"):
        StandardRAG([], k=0)
    with pytest.raises(ConfigError, match="field 'feasibility_runs': must be at least 1, not -1"):
        Feasibility(runs=-1)


async def test_golden_rag_sends_every_abstract_and_records_no_overflow() -> None:
    api = scripted()
    result = await GoldenRAG()(SAMPLE, context(api))
    (prompt,) = prompts(api)
    assert "Study 1 (s1): Trial A" in prompt and "Study 2 (s2): Trial B" in prompt
    assert result.metadata["overflow"]["applied"] is False


async def test_golden_rag_needs_studies() -> None:
    with pytest.raises(UsageError, match="no study abstracts"):
        await GoldenRAG()(Sample(id="e", input="t", target="c"), context(scripted()))


LONG = Sample(
    id="long",
    input="Topic",
    target="c",
    documents=[Document(id=f"d{i}", text=("word " * (50 if i == 0 else 400)).strip()) for i in range(3)],
)


async def test_truncate_policy_cuts_long_abstracts_evenly_and_records_it() -> None:
    api = scripted()
    api.context_length = 1200
    result = await GoldenRAG(overflow="truncate")(LONG, context(api))
    record = result.metadata["overflow"]
    assert record["applied"] is True and record["truncated"] == ["d1", "d2"]
    prompt = prompts(api)[0]
    assert prompt.count("[… truncated to fit the context window]") == 2
    assert api.count_tokens(prompt) + 256 <= 1200 or api.count_tokens(prompt) <= record["budget_tokens"] + 400


async def test_map_reduce_policy_summarises_groups_then_synthesises() -> None:
    api = scripted()
    api.context_length = 1200
    ctx = context(api)
    result = await GoldenRAG(overflow="map-reduce")(LONG, ctx)
    record = result.metadata["overflow"]
    assert record["policy"] == "map-reduce" and len(record["groups"]) >= 2
    assert ctx.steps[-1] == "synthesise" and all(s.startswith("map/") for s in ctx.steps[:-1])
    assert "Partial summary." in prompts(api)[-1]


async def test_negations_are_generated_once_reused_across_models_and_exported(tmp_path: Path) -> None:
    store = NegationStore(tmp_path / "negations.sqlite")
    negator = scripted(name="scripted/negator")
    first = scripted(name="scripted/a")
    result = await NegatedRAG(store)(SAMPLE, context(first, negator=negator))
    assert len(negator.requests) == 2
    config = negator.requests[0][1]
    assert config.temperature == 0.0 and config.max_tokens == 2 * negator.count_tokens(SAMPLE.documents[0].text) + 64
    assert "NEGATED: Statins reduced" in prompts(first)[0]
    assert [r["cached"] for r in result.metadata["negations"]] == [False, False]
    second = scripted(name="scripted/b")
    ctx = context(second, negator=negator)
    again = await NegatedRAG(store)(SAMPLE, ctx)
    assert len(negator.requests) == 2
    assert [r["cached"] for r in again.metadata["negations"]] == [True, True]
    assert "negation/s1" in ctx.steps and "negate/s1" not in ctx.steps
    other = scripted(name="scripted/other-negator")
    await NegatedRAG(store)(SAMPLE, context(second, negator=other))
    assert len(other.requests) == 2 and len(store) == 4
    path = tmp_path / "negations.jsonl"
    assert store.export(path, negator="scripted/negator") == 2
    exported = read_negations(path)
    assert {n.document_id for n in exported} == {"s1", "s2"}
    assert exported[0].prompt == "synthesis/negate@v1"
    assert json.loads(path.read_text().splitlines()[0])["negated"].startswith("NEGATED:")
    store.close()
    by_cli = tmp_path / "all.jsonl"
    args = ["synthesis", "negations", str(by_cli), "--negation-store", str(tmp_path / "negations.sqlite")]
    shown = CliRunner().invoke(app, args)
    assert shown.exit_code == 0 and "4 negations" in shown.output and len(read_negations(by_cli)) == 4
    missing = CliRunner().invoke(app, ["synthesis", "negations", str(by_cli), "--negation-store", "nope.sqlite"])
    assert isinstance(missing.exception, DataError) and not Path("nope.sqlite").exists()


async def test_feasibility_averages_ratings_with_distinct_seeds() -> None:
    api = scripted()
    result = await Feasibility(runs=3)(SAMPLE, context(api))
    seeds = [config.seed for _, config in api.requests]
    assert seeds == [0, 1, 2]
    assert {config.temperature for _, config in api.requests} == {0.5}  # MedMeta's feasibility temperature
    assert result.metadata["ratings"] == [3.0, 4.0, 3.0]
    assert result.metadata["feasibility"] == pytest.approx(10 / 3)
    assert "Reference conclusion:\nStatins reduce cardiovascular events" in prompts(api)[0]


POOL = [Document(id=f"n{i}", text=f"Noise document {i} about dermatology and acne creams.") for i in range(30)]


async def test_standard_rag_retrieves_gold_among_noise_and_records_it() -> None:
    api = scripted()
    ctx = context(api)
    workflow = StandardRAG(POOL, k=3, n_distractors=20, rerank_top_n=0)
    result = await workflow(SAMPLE, ctx)
    assert result.retrieved is not None and len(result.retrieved) == 3
    assert {r.document.id for r in result.retrieved if r.gold} == {"s1", "s2"}
    assert result.metadata["recall"] == 1.0
    assert ctx.steps == ["plan", "retrieve", "synthesise"]
    recorded = ctx.memo.get_step("retrieve")
    assert recorded is not None and recorded["queries"][0] == SAMPLE.input
    assert "Trial A" in prompts(api)[-1]


async def test_standard_rag_reranks_with_the_model_through_named_steps() -> None:
    def respond(messages, config):  # type: ignore[no-untyped-def]
        prompt = messages[-1].content
        if "List at most" in prompt:
            return "1. Statin events?"
        return "Yes" if "Statin" in prompt and "Document" in prompt else "No"

    api = ScriptedModel(respond)
    ctx = context(api)
    result = await StandardRAG(POOL, k=2, n_distractors=10, rerank_top_n=4)(SAMPLE, ctx)
    assert sum(1 for s in ctx.steps if s.startswith("rerank/llm-pointwise/")) == 4
    assert result.retrieved is not None and [r.rank for r in result.retrieved] == [1, 2]
