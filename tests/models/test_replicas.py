"""Replicas of one model behind several OpenAI-compatible base URLs: identity and spec parsing."""

from __future__ import annotations

import pytest

from ebmeval._util.errors import ConfigError
from ebmeval.models.providers.openai_compatible import OpenAICompatibleModel, openai_compatible
from ebmeval.runner import RunConfig, run_identity
from ebmeval.runner._runner import build_models
from tests.helpers.toy import toy_task


def test_replicas_in_any_order_are_one_model_and_one_url_is_described_as_before() -> None:
    one = openai_compatible("m@http://h1:8000/v1")
    assert isinstance(one, OpenAICompatibleModel)
    assert one.describe() == {"name": "openai-compatible/m", "base_url": "http://h1:8000/v1"}
    ab = openai_compatible("m@http://h1:8000/v1,http://h2:8000/v1/", max_concurrency=3)
    ba = openai_compatible("m", base_url="http://h2:8000/v1, http://h1:8000/v1")
    assert isinstance(ab, OpenAICompatibleModel) and isinstance(ba, OpenAICompatibleModel)
    assert (
        ab.describe()
        == ba.describe()
        == {
            "name": "openai-compatible/m",
            "base_urls": ["http://h1:8000/v1", "http://h2:8000/v1"],
        }
    )
    assert ab.base_urls == ["http://h1:8000/v1", "http://h2:8000/v1"]
    assert (ab.replica_concurrency, ab.max_concurrency) == (3, 6)  # a bound per replica


def test_replica_order_does_not_change_the_run_identity() -> None:
    task = toy_task(2)

    def identity(spec: str) -> object:
        cfg = RunConfig(task="toy", model=spec, cache=False)
        return run_identity(cfg, task, build_models(cfg, task))

    assert identity("openai-compatible:m@http://a:1/v1,http://b:1/v1") == identity(
        "openai-compatible:m@http://b:1/v1,http://a:1/v1"
    )
    assert identity("openai-compatible:m@http://a:1/v1,http://b:1/v1") != identity("openai-compatible:m@http://a:1/v1")
    # a trailing slash names the same server, so the same run
    assert identity("openai-compatible:m@http://a:1/v1/") == identity("openai-compatible:m@http://a:1/v1")
    assert identity("openai-compatible:m@http://a:1/v1/,http://b:1/v1") == identity(
        "openai-compatible:m@http://b:1/v1,http://a:1/v1"
    )


@pytest.mark.parametrize("urls", ["http://h:1/v1,ftp://h:2/v1", "http://h:1/v1,http://h:1/v1/", "http://h:1/v1,"])
def test_a_bad_or_repeated_replica_url_is_a_config_error(urls: str) -> None:
    with pytest.raises(ConfigError, match="base_url"):
        openai_compatible("m", base_url=urls)
