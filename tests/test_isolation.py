"""The root conftest keeps every test away from the user's cache and run store."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from ebmeval.cli._app import app
from ebmeval.models import ResponseCache, default_cache_dir
from tests.conftest import _USER_MODELS


def test_cache_and_default_store_live_in_the_tests_own_folder(tmp_path: Path) -> None:
    assert default_cache_dir().is_relative_to(tmp_path)
    cache = ResponseCache()
    try:
        assert Path(cache.path).is_relative_to(tmp_path)
    finally:
        cache.close()
    assert (default_cache_dir() / "models").resolve() == _USER_MODELS.resolve()  # the large model files are shared
    done = CliRunner().invoke(app, ["run", "--task", "pubmedqa", "--model", "baseline/first-option", "--limit", "2"])
    assert done.exit_code == 0, done.output
    assert (tmp_path / "runs" / "ebmeval.sqlite").is_file()
