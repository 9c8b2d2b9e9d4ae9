from collections.abc import Iterator
from pathlib import Path

import pytest

from ebmeval.models._serve import model_server


@pytest.fixture(autouse=True, scope="session")
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Keep the hash memos and assembled files these tests write out of the user's cache."""
    cache = tmp_path_factory.mktemp("ebmeval-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EBMEVAL_CACHE_DIR", str(cache))
        yield cache


@pytest.fixture(scope="session")
def smollm2_server() -> Iterator[str]:
    """Base URL (``…/v1``) of a real llama.cpp server running SmolLM2 on 127.0.0.1."""
    # One thread, as in test_llamacpp: shared cores make multi-threaded decoding crawl.
    with model_server("local:smollm2", n_ctx=512, n_parallel=1, n_threads=1) as url:
        yield url
