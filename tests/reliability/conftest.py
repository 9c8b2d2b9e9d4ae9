"""Fixtures of the reliability tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ._support import delay_server


@pytest.fixture(scope="module")
def delay_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The root URL of a delay server (20 ms per answer) in its own process."""
    with delay_server(tmp_path_factory.mktemp("delay")) as url:
        yield url


@pytest.fixture
def questions(tmp_path: Path) -> Path:
    """A 40-question ``mcq-file`` dataset."""
    from ._support import write_questions

    return write_questions(tmp_path / "questions.jsonl", 40)
