"""Every test runs away from the user's files: its own response cache, negation store and default run store.

Only what is large and built once is shared: each test's cache directory links ``models/`` (the
default model is 1.1 GB, assembled once) and ``engines/`` (a llama.cpp build) to the real ones.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ebmeval.models import default_cache_dir

_USER_CACHE = default_cache_dir()
"""The real cache directory, read before any test changes the environment."""
_USER_MODELS = _USER_CACHE / "models"
SHARED = ("models", "engines")
"""Cache subfolders every test sees in place: large files built once."""


@pytest.fixture(autouse=True)
def _isolated_files(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Point ``EBMEVAL_CACHE_DIR`` at a fresh folder and run the test from ``tmp_path`` (default store there).

    The tests of ``tests/models`` keep the cache of their own session fixture (``_isolated_cache``),
    which holds the model files they assemble and hash.
    """
    monkeypatch.chdir(tmp_path)
    if "_isolated_cache" not in request.fixturenames:
        cache = tmp_path / "ebmeval-cache"
        cache.mkdir()
        for name in SHARED:
            (_USER_CACHE / name).mkdir(parents=True, exist_ok=True)
            (cache / name).symlink_to(_USER_CACHE / name, target_is_directory=True)
        monkeypatch.setenv("EBMEVAL_CACHE_DIR", str(cache))
    yield
