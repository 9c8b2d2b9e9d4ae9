"""The real native build (``ebmeval engine build``) serving the bundled SmolLM2 model.

Skipped unless a native build for this CPU is installed in the user's cache; the build
takes minutes, so tests never start one.
"""

import asyncio
from collections.abc import Iterator

import pytest

from ebmeval._util.errors import ModelError
from ebmeval.models import GenerateConfig, user
from ebmeval.models._engine import binary_version, build_variants, load_native_engine, native_dir
from ebmeval.models._local_files import resolve_local_model
from ebmeval.models.providers.llamacpp import LlamaCppModel
from tests.models import GRADE_SCHEMA, is_grade, requires_small_model

# Read at import, before the session fixture points the cache at a temporary directory.
NATIVE = load_native_engine(native_dir())

pytestmark = [
    requires_small_model,
    pytest.mark.slow,
    pytest.mark.server,
    pytest.mark.skipif(NATIVE is None, reason="no native engine built for this CPU (ebmeval engine build)"),
]

GREEDY = GenerateConfig(temperature=0.0, max_tokens=8, seed=1)


@pytest.fixture(scope="module")
def native_smollm2() -> Iterator[LlamaCppModel]:
    assert NATIVE is not None
    api = LlamaCppModel(resolve_local_model("smollm2"), n_ctx=256, n_threads=1, native=NATIVE)
    yield api
    asyncio.run(api.aclose())


def test_the_installed_binary_is_the_recorded_build() -> None:
    assert NATIVE is not None
    assert binary_version(NATIVE.binary) == NATIVE.llama_cpp_version
    assert NATIVE.verified_reply.strip()


def test_the_installed_variant_is_the_first_of_this_cpu_that_was_not_refused() -> None:
    assert NATIVE is not None
    if NATIVE.speed is None:
        # built before variants and speed checks: one configuration, not the default until measured
        assert NATIVE.variant == "native" and NATIVE.refused == () and not NATIVE.measured_faster
        return
    names = [variant.name for variant in build_variants(NATIVE.cpu_features)]
    tried = names[: names.index(NATIVE.variant) + 1]
    assert [refusal.variant for refusal in NATIVE.refused] == tried[:-1]
    assert all(refusal.reason for refusal in NATIVE.refused)
    assert NATIVE.cmake_options == build_variants(NATIVE.cpu_features)[len(tried) - 1].cmake_options
    assert NATIVE.speed.native.prompt_tokens_per_s > 0 and NATIVE.speed.native.decode_tokens_per_s > 0
    assert NATIVE.speed.xllamacpp is None or NATIVE.speed.xllamacpp.prompt_tokens_per_s > 0


async def test_native_engine_answers_with_logprobs_usage_and_reproducibly(native_smollm2: LlamaCppModel) -> None:
    config = GREEDY.model_copy(update={"logprobs": True, "top_logprobs": 3})
    first = await native_smollm2.generate([user("What is the capital of France?")], config)
    second = await native_smollm2.generate([user("What is the capital of France?")], config)
    assert first.text.strip() and first.text == second.text and first.logprobs == second.logprobs
    assert first.model == "llamacpp/smollm2-135m-instruct-q4_1"
    assert first.usage.input_tokens > 5 and 0 < first.usage.output_tokens <= 8
    assert first.logprobs is not None and "".join(t.token for t in first.logprobs) == first.text
    assert all(len(t.top) == 3 for t in first.logprobs)
    assert native_smollm2.provenance()["engine"].startswith("llama.cpp native ")


async def test_native_engine_follows_a_response_schema(native_smollm2: LlamaCppModel) -> None:
    config = GREEDY.model_copy(update={"max_tokens": 60, "response_schema": GRADE_SCHEMA})
    output = await native_smollm2.generate([user("Tell me a story about a dragon.")], config)
    assert is_grade(output.text)


async def test_native_engine_reports_a_prompt_over_the_window(native_smollm2: LlamaCppModel) -> None:
    with pytest.raises(ModelError, match=r"takes \d+ tokens but the context window is 256"):
        await native_smollm2.generate([user("word " * 600)], GREEDY)


def test_native_engine_tokenizes(native_smollm2: LlamaCppModel) -> None:
    assert native_smollm2.count_tokens("Hello world, how are you?") == 7
