"""The judge core: one vocabulary, one JSON reader, one ask-and-retry, used by every judge."""

from __future__ import annotations

import pytest

from ebmeval.judges import NO_WORDS, YES_WORDS, ask, json_in_text, read_verdict
from ebmeval.judges._factuality import parse_reply, yes_no
from ebmeval.models import GenerateConfig, Model, ModelOutput
from ebmeval.models.providers.scripted import ScriptedModel
from ebmeval.rag.rerank._llm import relevance
from ebmeval.scorers.judges import parse_verdict
from ebmeval.tasks import SampleContext

WORDS = sorted(w for w in YES_WORDS | NO_WORDS if len(w) > 1 and not w.isdigit())


def _verdict_readers() -> dict[str, object]:
    def rerank(word: str) -> bool | None:
        value, _method = relevance(ModelOutput(text=f"{word}.", model="m"))
        return None if value is None else value == 1.0

    return {
        "steps (Verdict: line)": lambda word: parse_verdict(f"Some reasoning.\nVerdict: {word.upper()}"),
        "steps (JSON)": lambda word: parse_verdict(f'{{"supported": "{word}"}}'),
        "factuality": lambda word: yes_no(f"{word}, it does"),
        "rerank": rerank,
    }


@pytest.mark.parametrize("reader", list(_verdict_readers()))
@pytest.mark.parametrize("word", WORDS)
def test_every_judge_reads_the_same_vocabulary(reader: str, word: str) -> None:
    expected = read_verdict(word)
    assert expected is (word in YES_WORDS)
    read = _verdict_readers()[reader](word)  # type: ignore[operator]
    if reader.startswith("steps (Verdict") and " " in word:
        word = word.replace(" ", "_")  # a labelled line holds one token: not_supported
        read = _verdict_readers()[reader](word)  # type: ignore[operator]
    assert read is expected, f"{reader} read {word!r} as {read!r}"


def test_json_in_text_reads_nested_and_fenced_objects() -> None:
    nested = 'Here: {"answer": {"choice": "B"}, "why": "x"} done'
    assert json_in_text(nested) == {"answer": {"choice": "B"}, "why": "x"}
    assert json_in_text('```json\n{"overall": 4}\n```') == {"overall": 4}
    assert parse_reply('Result: {"direction": {"value": "positive"}, "modality": "weak"}')["modality"] == "weak"


async def test_ask_retries_once_and_records_how_the_value_was_obtained() -> None:
    judge = ScriptedModel(["hmm", '{"overall": 3}'], name="scripted/j")
    ctx = SampleContext({"judge": Model(judge)})
    schema = GenerateConfig(response_schema={"type": "object"})
    attempt = await ask(
        ctx,
        "q",
        "Grade it.",
        lambda t: (json_in_text(t) or {}).get("overall"),
        "Only JSON.",
        config=GenerateConfig(),
        retry_config=schema,
    )
    assert attempt.value == 3 and attempt.retried and attempt.forced
    assert attempt.metadata() == {"replies": ["hmm", '{"overall": 3}'], "retried": True, "forced_by_schema": True}
    assert judge.requests[1][1].response_schema == {"type": "object"}


async def test_a_thinking_judge_gets_room_to_think_and_settings_are_part_of_the_score_set() -> None:
    from ebmeval.scorers.judges import StepsWithReference
    from ebmeval.tasks import THINKING_BUDGET, scorer_spec

    thinker = ScriptedModel(["Verdict: YES"], name="scripted/thinker")
    thinker.reasoning = True
    ctx = SampleContext({"judge": Model(thinker)})
    await ask(ctx, "q", "Is it so?", parse_verdict, "Say YES or NO.", config=GenerateConfig(max_tokens=128))
    assert thinker.requests[0][1].max_tokens == 128 + THINKING_BUDGET  # the trace first, then the verdict
    models = {"judge": Model(ScriptedModel(name="scripted/j"))}
    default = scorer_spec(StepsWithReference(), models)
    warmer = scorer_spec(StepsWithReference(temperature=0.7, max_tokens=512), models)
    assert default != warmer and warmer["args"]["config"] == {"temperature": 0.7, "max_tokens": 512, "logprobs": False}
