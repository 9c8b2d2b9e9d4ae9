"""One call path: every step's settings are declared, scaled for thinking models, and its replies checked."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from ebmeval.models import ChatMessage, DegenerateReplyError, GenerateConfig, Model, ModelOutput
from ebmeval.models.providers.scripted import ScriptedModel
from ebmeval.rag.rerank import LLMPointwiseReranker
from ebmeval.synthesis import NegationStore
from ebmeval.synthesis._negation import negate_documents
from ebmeval.synthesis._workflows import Feasibility, ParametricCoT
from ebmeval.tasks import THINKING_BUDGET, MemoryMemo, RetrievedDocument, SampleContext

from .helpers import SAMPLE, reply_by_prompt

THRESHOLD = 3000
REFUSAL = "I'm sorry, but I can't help with that."


def thinker(reasoning: bool = True) -> ScriptedModel:
    """A model that spends its whole budget thinking unless it gets at least ``THRESHOLD`` tokens."""
    respond = reply_by_prompt()

    def reply(messages: Sequence[ChatMessage], config: GenerateConfig) -> ModelOutput:
        if (config.max_tokens or 10_000) < THRESHOLD:
            return ModelOutput(text="", reasoning="hmm " * 50, model="scripted/thinker", finish_reason="length")
        return ModelOutput(
            text=respond(messages, config), reasoning="hmm", model="scripted/thinker", finish_reason="stop"
        )

    api = ScriptedModel(reply, name="scripted/thinker")
    api.reasoning = reasoning
    return api


async def test_a_thinking_negator_gets_room_to_think_and_no_empty_negation_is_stored(tmp_path: Path) -> None:
    store = NegationStore(tmp_path / "negations.sqlite")
    api = thinker()
    documents, _records = await negate_documents(SampleContext({"negator": Model(api)}), SAMPLE.documents, store)
    assert all(d.text.startswith("NEGATED: ") for d in documents)
    abstract_tokens = Model(api).count_tokens(SAMPLE.documents[0].text)
    assert api.requests[0][1].max_tokens == 2 * abstract_tokens + 64 + THINKING_BUDGET
    # the same model not declared as thinking: the cut-off rewrite is an error and nothing is stored
    fresh = NegationStore(tmp_path / "fresh.sqlite")
    with pytest.raises(DegenerateReplyError, match="synthesis/negate"):
        await negate_documents(SampleContext({"negator": Model(thinker(reasoning=False))}), SAMPLE.documents, fresh)
    assert len(fresh) == 0


async def test_a_refused_negation_is_an_error_never_stored_and_a_stored_refusal_is_made_again(tmp_path: Path) -> None:
    store = NegationStore(tmp_path / "negations.sqlite")
    memo = MemoryMemo()
    refusing = Model(ScriptedModel(lambda _m, _c: REFUSAL))
    with pytest.raises(DegenerateReplyError, match="refusal"):
        await negate_documents(SampleContext({"negator": refusing}, memo), SAMPLE.documents, store)
    assert len(store) == 0 and not memo.steps
    # a refusal stored by an older release is not reused
    from ebmeval.synthesis._negation import Negation

    api = ScriptedModel(reply_by_prompt())
    model = Model(api)
    from ebmeval._util.hashing import stable_hash
    from ebmeval.synthesis._prompts import NEGATE

    for document in SAMPLE.documents:
        store.put(
            Negation(
                abstract_hash=stable_hash(document.text),
                negator=model.name,
                negator_key=stable_hash(model.api.describe(), 16),
                prompt=NEGATE.id,
                document_id=document.id,
                abstract=document.text,
                negated=REFUSAL,
                created_at="2026-01-01T00:00:00+00:00",
            )
        )
    documents, records = await negate_documents(SampleContext({"negator": model}), SAMPLE.documents, store)
    assert all(d.text.startswith("NEGATED: ") for d in documents) and not any(r["cached"] for r in records)
    assert all(n.negated.startswith("NEGATED: ") for n in store)


async def test_a_thinking_reranker_gets_room_and_a_cut_off_relevance_is_an_error() -> None:
    candidates = [RetrievedDocument(document=d, score=1.0, rank=i) for i, d in enumerate(SAMPLE.documents, 1)]

    def yes(messages: Sequence[ChatMessage], config: GenerateConfig) -> ModelOutput:
        if (config.max_tokens or 0) < THRESHOLD:
            return ModelOutput(text="", model="scripted/thinker", finish_reason="length")
        return ModelOutput(text="yes", model="scripted/thinker", finish_reason="stop")

    api = ScriptedModel(yes, name="scripted/thinker")
    api.reasoning = True
    judgments = await LLMPointwiseReranker(Model(api)).judge(SAMPLE.input, candidates)
    assert [j.relevance for j in judgments] == [1.0, 1.0]
    assert api.requests[0][1].max_tokens == 3 + THINKING_BUDGET
    plain = ScriptedModel(yes, name="scripted/plain")
    with pytest.raises(DegenerateReplyError, match="rerank/llm-pointwise"):
        await LLMPointwiseReranker(Model(plain)).judge(SAMPLE.input, candidates)


async def test_the_run_temperature_reaches_the_feasibility_rater_and_the_evaluator_sends_its_settings() -> None:
    api = ScriptedModel(reply_by_prompt())
    ctx = SampleContext({"model": Model(api)}, run_settings=GenerateConfig(temperature=0.9))
    await Feasibility(runs=2)(SAMPLE, ctx)
    assert [config.temperature for _m, config in api.requests] == [0.9, 0.9]
    default = ScriptedModel(reply_by_prompt())
    await Feasibility(runs=1)(SAMPLE, SampleContext({"model": Model(default)}))
    assert default.requests[0][1].temperature == 0.5  # MedMeta's rating temperature
    evaluator = ScriptedModel(reply_by_prompt())
    models = {"model": Model(ScriptedModel(reply_by_prompt())), "evaluator": Model(evaluator)}
    await ParametricCoT(max_iterations=1)(SAMPLE, SampleContext(models))
    (sent,) = [config for _m, config in evaluator.requests]
    assert (sent.temperature, sent.max_tokens) == (0.0, 512)


async def test_a_step_override_wins_and_the_step_records_what_was_sent() -> None:
    api = ScriptedModel(reply_by_prompt())
    memo = MemoryMemo()
    overrides = {"synthesis/feasibility": GenerateConfig(temperature=0.2, max_tokens=99)}
    await Feasibility(runs=1)(SAMPLE, SampleContext({"model": Model(api)}, memo, overrides=overrides))
    assert (api.requests[0][1].temperature, api.requests[0][1].max_tokens) == (0.2, 99)
    ((step, _request), payload) = next((k, v) for k, v in memo.steps.items() if k[0] == "rate/1")
    assert payload["call"] == "synthesis/feasibility"
    assert payload["settings"]["temperature"] == 0.2 and payload["settings"]["max_tokens"] == 99


async def test_a_judge_reply_cut_off_is_an_error_but_a_relevance_word_cut_after_it_is_read() -> None:
    from ebmeval.judges import ask
    from ebmeval.rag.rerank import relevance

    cut = ModelOutput(text="Overall: 4 because the", model="scripted/j", finish_reason="length")
    memo = MemoryMemo()
    ctx = SampleContext({"judge": Model(ScriptedModel([cut]))}, memo)
    with pytest.raises(DegenerateReplyError, match="stopped at the token limit mid-reply"):
        await ask(ctx, "q", "Grade it.", lambda t: 4, "Only the grade.", config=GenerateConfig(max_tokens=8))
    assert not memo.steps  # nothing recorded for a resumed sample to replay
    word = ModelOutput(text="Yes, the", model="scripted/r", finish_reason="length")
    candidates = [RetrievedDocument(document=SAMPLE.documents[0], score=1.0, rank=1)]
    (judgment,) = await LLMPointwiseReranker(Model(ScriptedModel([word]))).judge(SAMPLE.input, candidates)
    assert judgment.relevance == relevance(word)[0] == 1.0


async def test_a_refusal_recorded_by_an_older_release_is_sent_again_not_replayed() -> None:
    from ebmeval.synthesis._negation import NEGATE_CALL
    from ebmeval.tasks import ANSWER

    memo = MemoryMemo()
    api = ScriptedModel([REFUSAL, "NEGATED: the rewrite"])
    greedy = GenerateConfig(temperature=0.0)
    old = SampleContext({"negator": Model(api)}, memo)
    await old.generate("negate/s1", "Rewrite it.", greedy, role="negator", call=ANSWER)  # kept as it once was
    resumed = SampleContext({"negator": Model(api)}, memo)
    output = await resumed.generate("negate/s1", "Rewrite it.", greedy, role="negator", call=NEGATE_CALL)
    assert output.text == "NEGATED: the rewrite" and len(api.requests) == 2
