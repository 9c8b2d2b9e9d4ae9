import asyncio
import time
from collections.abc import Iterator

import pytest

from ebmeval._util.errors import ConfigError, ModelError
from ebmeval.models import GenerateConfig, get_model, user
from ebmeval.models._local_files import DEFAULT_SHA256, SMOLLM2_SHA256
from ebmeval.models.providers.llamacpp import LlamaCppModel, local
from tests.models import GRADE_SCHEMA, is_grade, requires_small_model

pytestmark = requires_small_model

GREEDY = GenerateConfig(temperature=0.0, max_tokens=8, seed=1)
# One thread: llama.cpp's threads wait on each other, which collapses throughput when the
# machine's cores are shared with other test processes.


def test_building_a_local_model_is_fast_and_loads_nothing() -> None:
    start = time.monotonic()
    model = get_model("local:smollm2")
    assert time.monotonic() - start < 0.5
    api = model.api
    assert isinstance(api, LlamaCppModel)
    assert api.name == "llamacpp/smollm2-135m-instruct-q4_1"
    assert api.context_length == 8192 and api.max_concurrency == 1
    assert api.describe()["sha256"] == SMOLLM2_SHA256
    assert api.describe()["engine"] == api.provenance()["engine"] and api.describe()["n_ctx"] == 8192
    assert api.provenance()["engine"].startswith("xllamacpp ") and "n_threads" not in api.describe()
    assert api._server is None


def test_default_model_is_named_without_assembling_it() -> None:
    for spec in ("local", "local:qwen2.5-coder-1.5b"):
        api = get_model(spec).api
        assert isinstance(api, LlamaCppModel)
        assert api.name == "llamacpp/qwen2.5-coder-1.5b-instruct-q4"
        assert api.context_length == 8192
        assert api.describe()["sha256"] == DEFAULT_SHA256
        assert "path" not in vars(api.file)


def test_options() -> None:
    api = local("smollm2", n_ctx="1024", n_parallel=2, n_threads=1)
    assert isinstance(api, LlamaCppModel)
    assert (api.context_length, api.max_concurrency, api.n_threads) == (1024, 2, 1)
    with pytest.raises(ConfigError, match=r"n_ctx.*more than the 8192 tokens"):
        local("smollm2", n_ctx=16384)
    with pytest.raises(ConfigError, match=r"'ctx'.*known: n_ctx, n_parallel, n_threads, engine"):
        local("smollm2", ctx=512)
    with pytest.raises(ConfigError, match="n_parallel"):
        local("smollm2", n_parallel=0)


@pytest.fixture(scope="module")
def smollm2() -> Iterator[LlamaCppModel]:
    """One loaded model shared by the module (it holds no event-loop state)."""
    api = local("smollm2", n_ctx=256, n_threads=1)
    assert isinstance(api, LlamaCppModel)
    yield api
    asyncio.run(api.aclose())


@pytest.mark.local_model
async def test_answers_with_logprobs_and_usage(smollm2: LlamaCppModel) -> None:
    config = GREEDY.model_copy(update={"logprobs": True, "top_logprobs": 3})
    output = await smollm2.generate([user("What is the capital of France?")], config)
    assert output.text.strip()
    assert output.model == "llamacpp/smollm2-135m-instruct-q4_1"
    assert output.finish_reason in ("stop", "length")
    assert output.usage.input_tokens > 5 and 0 < output.usage.output_tokens <= 8
    assert output.latency > 0 and output.raw is not None
    assert output.logprobs is not None and len(output.logprobs) == output.usage.output_tokens
    assert "".join(t.token for t in output.logprobs) == output.text
    for token in output.logprobs:
        assert token.logprob <= 0 and len(token.top) == 3
        assert token.top[0].logprob >= token.top[-1].logprob


@pytest.mark.local_model
async def test_same_seed_same_output(smollm2: LlamaCppModel) -> None:
    messages = [user("Name a colour.")]
    first = await smollm2.generate(messages, GREEDY.model_copy(update={"logprobs": True}))
    again = await smollm2.generate(messages, GREEDY.model_copy(update={"logprobs": True}))
    assert first.text == again.text and first.logprobs == again.logprobs
    sampled = GenerateConfig(temperature=1.0, max_tokens=8, seed=123)
    texts = {(await smollm2.generate(messages, sampled)).text for _ in range(2)}
    assert len(texts) == 1


@pytest.mark.local_model
async def test_response_schema_constrains_the_reply(smollm2: LlamaCppModel) -> None:
    config = GREEDY.model_copy(update={"max_tokens": 60, "response_schema": GRADE_SCHEMA})
    output = await smollm2.generate([user("Tell me a story about a dragon.")], config)
    assert is_grade(output.text)


async def test_stop_strings_end_generation(smollm2: LlamaCppModel) -> None:
    config = GenerateConfig(temperature=0.0, max_tokens=30, stop=(" ",))
    output = await smollm2.generate([user("Write a sentence about cats.")], config)
    assert " " not in output.text.strip() and output.finish_reason == "stop"


@pytest.mark.local_model
async def test_prompt_longer_than_the_context_is_a_model_error(smollm2: LlamaCppModel) -> None:
    with pytest.raises(ModelError, match=r"takes \d+ tokens but the context window is 256"):
        await smollm2.generate([user("word " * 400)], GREEDY)


@pytest.mark.local_model
def test_count_tokens_uses_the_real_tokenizer(smollm2: LlamaCppModel) -> None:
    assert smollm2.count_tokens("Hello world, how are you?") == 7
    assert smollm2.count_tokens("") == 0


@pytest.mark.local_model
async def test_close_frees_and_a_later_call_reloads() -> None:
    api = local("smollm2", n_ctx=128, n_threads=1)
    assert isinstance(api, LlamaCppModel)
    await api.generate([user("Hi")], GREEDY)
    await api.aclose()
    assert api._server is None
    assert (await api.generate([user("Hi")], GREEDY)).text
    await api.aclose()
