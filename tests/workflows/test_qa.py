from __future__ import annotations

from collections.abc import Sequence

import pytest

from ebmeval._util.errors import ConfigError, ModelError, UsageError
from ebmeval.models import ChatMessage, GenerateConfig, Model, ModelOutput, TokenLogprob, TopLogprob
from ebmeval.models.providers.scripted import ScriptedModel
from ebmeval.tasks import Document, MemoryMemo, Sample, SampleContext, Task
from ebmeval.workflows import (
    ChainOfThoughtRefine,
    Direct,
    letter_probabilities,
    list_templates,
    qa_workflow,
    render_prompts,
    templates,
)

SAMPLE = Sample(
    id="q1",
    input="Is the sky blue?",
    target="A",
    choices={"A": "yes", "B": "no", "C": "maybe"},
    documents=[Document(id="d1", text="The sky is blue on clear days.", title="Sky")],
)


def context(api: ScriptedModel, memo: MemoryMemo | None = None) -> SampleContext:
    return SampleContext({"model": Model(api)}, memo)


async def test_direct_sends_question_block_and_short_budget() -> None:
    api = ScriptedModel(["A"])
    workflow = qa_workflow("direct")
    result = await workflow(SAMPLE, context(api))
    assert result.output == "A"
    ((messages, _config),) = api.requests
    assert [m.role for m in messages] == ["user"]
    prompt = messages[0].content
    assert prompt.startswith(
        'Context documents:\n<document number="1" id="d1">\nSky\nThe sky is blue on clear days.\n</document>\n\n'
        "Question: Is the sky blue?"
    )
    assert "A. yes\nB. no\nC. maybe" in prompt
    assert "Exactly one option is correct" in prompt
    assert workflow.generate_config.max_tokens == 32


async def test_multi_answer_instruction_and_system_prompt_and_thinking_switch() -> None:
    api = ScriptedModel(["A, C"])
    workflow = qa_workflow("direct", multi_answer=True, system_prompt="You are an epidemiologist.", thinking=False)
    await workflow(SAMPLE, context(api))
    messages = api.requests[0][0]
    assert messages[0] == ChatMessage(role="system", content="You are an epidemiologist.")
    assert "One or more options are correct" in messages[1].content
    assert messages[1].content.endswith("\n\n/no_think")
    thinking = qa_workflow("direct", thinking=True)
    assert thinking.messages("Q")[-1].content.endswith("/think")
    assert thinking.generate_config.max_tokens == 4096
    assert qa_workflow("cot").generate_config.max_tokens == 1024


async def test_cot_asks_for_answer_line() -> None:
    api = ScriptedModel(["Blue sky.\nAnswer: A"])
    result = await qa_workflow("cot")(SAMPLE, context(api))
    assert result.output.endswith("Answer: A")
    assert 'final line of the form "Answer: <answer>"' in api.requests[0][0][-1].content


async def test_cot_refine_makes_two_calls_conditioned_on_first_answer() -> None:
    api = ScriptedModel(["<think>hmm</think>First reasoning.\nAnswer: B", "Corrected.\nAnswer: A"])
    ctx = context(api)
    result = await qa_workflow("cot-refine")(SAMPLE, ctx)
    assert result.output == "Corrected.\nAnswer: A"
    assert result.metadata["initial_output"].endswith("Answer: B")
    assert ctx.steps == ["cot-refine/initial", "cot-refine/refine"]
    refine_prompt = api.requests[1][0][-1].content
    assert "<first_answer>\nFirst reasoning.\nAnswer: B\n</first_answer>" in refine_prompt
    assert "hmm" not in refine_prompt
    assert "Question: Is the sky blue?" in refine_prompt


async def test_cot_refine_resumes_without_repeating_finished_call() -> None:
    memo = MemoryMemo()
    first = ScriptedModel(["R0\nAnswer: B"])
    with pytest.raises(ModelError, match="no scripted reply"):
        await qa_workflow("cot-refine")(SAMPLE, context(first, memo))
    second = ScriptedModel(["R1\nAnswer: A"])
    result = await qa_workflow("cot-refine")(SAMPLE, context(second, memo))
    assert result.output == "R1\nAnswer: A"
    assert len(second.requests) == 1


class LimitedModel(ScriptedModel):
    def __init__(self, replies: list[str], context_length: int) -> None:
        super().__init__(replies)
        self.context_length = context_length

    def count_tokens(self, text: str) -> int:
        return len(text.split())


def long_sample(words: int) -> Sample:
    text = " ".join(f"w{i}" for i in range(words))
    return SAMPLE.model_copy(update={"documents": [Document(id="long", text=text)]})


async def test_long_documents_are_truncated_and_recorded() -> None:
    api = LimitedModel(["A"], context_length=400)
    result = await qa_workflow("direct")(long_sample(1000), context(api))
    record = result.metadata["context"]
    assert record["truncated"] is True and record["policy"] == "head"
    assert record["document_tokens"] == 1004  # the words and the document tags
    assert 0 < record["kept_tokens"] <= record["budget_tokens"] < 400
    prompt = api.requests[0][0][-1].content
    assert "w0 w1" in prompt and "w999" not in prompt
    assert "does not fit the model's context window" in prompt
    assert api.count_tokens(prompt) <= 400 - 32


async def test_documents_that_fit_are_not_cut() -> None:
    api = LimitedModel(["A"], context_length=4000)
    result = await qa_workflow("direct")(long_sample(100), context(api))
    assert result.metadata["context"]["truncated"] is False
    assert "w99" in api.requests[0][0][-1].content


async def test_overflow_error_policy_raises() -> None:
    api = LimitedModel(["A"], context_length=400)
    with pytest.raises(ConfigError, match="take 1004 tokens"):
        await qa_workflow("direct", overflow="error")(long_sample(1000), context(api))


async def test_cot_refine_reserves_room_for_both_replies() -> None:
    direct = Direct().reserved_tokens(Model(LimitedModel([], 10_000)))
    refine = ChainOfThoughtRefine().reserved_tokens(Model(LimitedModel([], 10_000)))
    assert (direct, refine) == (32, 2048)


def logprob_output(tokens: list[tuple[str, float, dict[str, float]]]) -> ModelOutput:
    return ModelOutput(
        text="".join(token for token, _, _ in tokens),
        model="m",
        logprobs=[
            TokenLogprob(token=token, logprob=lp, top=[TopLogprob(token=t, logprob=v) for t, v in top.items()])
            for token, lp, top in tokens
        ],
    )


def test_letter_probabilities_sum_variants_at_first_letter_position() -> None:
    output = logprob_output(
        [("(", -0.1, {}), (" B", -0.5, {" B": -0.5, "B": -2.0, " A": -1.0, "C": -3.0, "yes": -0.2}), (")", -0.1, {})]
    )
    found = letter_probabilities(output, ["A", "B", "C"])
    assert found is not None
    position, probs = found
    assert position == 1
    assert probs["B"] == pytest.approx(0.6065 + 0.1353, abs=1e-3)
    assert probs["A"] == pytest.approx(0.3679, abs=1e-3)
    assert letter_probabilities(logprob_output([("yes", -0.1, {})]), ["A", "B"]) is None


async def test_direct_logprobs_answer_is_most_probable_letter() -> None:
    def reply(messages: Sequence[ChatMessage], config: GenerateConfig) -> ModelOutput:
        assert config.logprobs and config.top_logprobs == 20
        return logprob_output([("A", -0.9, {"A": -0.9, "C": -0.6})])

    result = await qa_workflow("direct", answer_from="logprobs")(SAMPLE, context(ScriptedModel(reply)))
    assert result.output == "C"
    assert not result.from_reply  # a reply cut at its token limit leaves this answer whole
    assert result.metadata["generated"] == "A"
    assert result.metadata["letter_probabilities"]["C"] > result.metadata["letter_probabilities"]["A"]


def test_bad_options_are_config_errors() -> None:
    with pytest.raises(ConfigError):
        qa_workflow("socratic")  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        qa_workflow("cot", answer_from="logprobs")
    with pytest.raises(ConfigError):
        qa_workflow("direct", multi_answer=True, answer_from="logprobs")


def test_templates_are_named_versioned_and_listed() -> None:
    names = [t.name for t in list_templates()]
    assert {"mcq/direct", "mcq/cot", "mcq/refine", "question"} <= set(names)
    assert templates.get("mcq/cot").id == "mcq/cot@v1"
    assert qa_workflow("direct").version != qa_workflow("cot").version
    assert qa_workflow("direct").version != qa_workflow("direct", thinking=False).version
    assert qa_workflow("direct").version != qa_workflow("direct", answer_from="logprobs").version


def test_render_prompts_shows_every_step() -> None:
    workflow = qa_workflow("cot-refine", system_prompt="Be careful.")
    task = Task(name="toy", dataset=[SAMPLE], workflow=workflow, scorers=[])
    shown = render_prompts(task, "q1")
    assert list(shown) == ["cot-refine/initial", "cot-refine/refine"]
    assert shown["cot-refine/initial"].startswith("[system]\nBe careful.\n\n[user]\nContext documents:\n<document ")
    assert "<the reply to the first call>" in shown["cot-refine/refine"]
    with pytest.raises(UsageError, match="no sample"):
        render_prompts(task, "nope")
    with pytest.raises(UsageError, match="out of range"):
        render_prompts(task, 3)


async def test_reply_reserve_is_capped_at_half_a_small_window() -> None:
    api = LimitedModel(["R0\nAnswer: A", "R1\nAnswer: A"], context_length=1000)
    result = await qa_workflow("cot-refine")(long_sample(3000), context(api))
    record = result.metadata["context"]
    assert record["reserved_tokens"] == 500 and record["truncated"] is True
    assert 0 < record["kept_tokens"] <= record["budget_tokens"] < 500


def test_a_run_counts_inputs_cut_to_fit_beside_reply_truncations(tmp_path) -> None:
    from ebmeval.report import collect
    from ebmeval.runner import RunConfig, run, summarize
    from ebmeval.scorers import accuracy, choice_parser
    from ebmeval.store import RunStore

    samples = [long_sample(1000).model_copy(update={"id": "cut"}), long_sample(10).model_copy(update={"id": "kept"})]
    task = Task(
        name="docs", dataset=samples, workflow=qa_workflow("direct"), scorers=[accuracy()], parser=choice_parser()
    )
    api = LimitedModel(["A", "A"], context_length=400)
    store = tmp_path / "runs.sqlite"
    result = run(RunConfig(task="docs", store=str(store), cache=False), task=task, models={"model": Model(api)})
    summary = summarize(RunStore(store), result.run.run_id)
    assert (summary.input_truncated, summary.truncated, summary.generations) == (1, 0, 2)
    assert summary.as_dict()["input_truncated"] == 1
    table = collect(RunStore(store), [result.run.run_id]).metrics_table()
    assert "inputs cut" in table.markdown() and any("inputs cut:" in note for note in table.notes)


async def test_a_prompt_set_words_the_truncation_note_too() -> None:
    from ebmeval.prompts import CAREMEDEVAL_FR

    api = LimitedModel(["A"], context_length=400)
    multi = long_sample(1000).model_copy(update={"target": ["A", "B"]})
    await qa_workflow("direct", multi_answer=True, prompt_set=CAREMEDEVAL_FR)(multi, context(api))
    prompt = api.requests[0][0][-1].content
    assert "la suite de cet article est omise" in prompt and "context window" not in prompt
