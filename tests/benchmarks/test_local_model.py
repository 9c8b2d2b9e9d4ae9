"""The built-in prompts with the real small model: truncation to its window, letters from its logprobs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ebmeval import create_task
from ebmeval.models import GenerateConfig, Model
from ebmeval.models.providers.llamacpp import local
from ebmeval.tasks import SampleContext

pytestmark = pytest.mark.local_model


@pytest.fixture(scope="module")
def smollm2(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Model]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EBMEVAL_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        api = local("smollm2", n_ctx=1024)
        model = Model(api, config=GenerateConfig(temperature=0.0, max_tokens=32))
        yield model


async def test_long_article_is_truncated_to_the_real_window(smollm2: Model) -> None:
    task = create_task("caremedeval")
    sample = task.dataset[0]
    ctx = SampleContext({"model": smollm2})
    result = await task.workflow(sample, ctx)
    record = result.metadata["context"]
    assert record["truncated"] is True and record["document_tokens"] > 1024
    (step,) = ctx.steps
    (output,) = ctx.outputs  # the one call, recorded in the memo under its request
    assert [name for name, _request in ctx.memo.steps] == [step]  # type: ignore[attr-defined]
    assert output.usage.input_tokens + 32 <= 1024


async def test_letter_probabilities_from_real_logprobs(smollm2: Model) -> None:
    task = create_task("pubmedqa", answer_from="logprobs")
    for sample in task.dataset[:2]:
        result = await task.workflow(sample, SampleContext({"model": smollm2}))
        probabilities = result.metadata["letter_probabilities"]
        assert probabilities is not None and set(probabilities) == {"A", "B", "C"}
        assert 0 < sum(probabilities.values()) <= 1 + 1e-6
        assert result.output == max(probabilities, key=probabilities.__getitem__)
        assert task.parser(result.output, sample).value == result.output
