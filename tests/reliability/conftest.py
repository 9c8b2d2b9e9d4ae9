"""Fixtures of the reliability tests."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ._support import ROOT, wait_for


@pytest.fixture(scope="module")
def delay_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The root URL of a delay server (20 ms per answer) in its own process."""
    port_file = tmp_path_factory.mktemp("delay") / "port"
    server = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "_delay_server.py"),
            "--delay",
            "0.02",
            "--port-file",
            str(port_file),
        ],
        stdout=subprocess.DEVNULL,
    )
    try:
        assert wait_for(port_file.exists, 60), "the delay server did not start"
        yield f"http://127.0.0.1:{port_file.read_text()}"
    finally:
        server.terminate()
        server.wait(10)


@pytest.fixture
def questions(tmp_path: Path) -> Path:
    """A 40-question ``mcq-file`` dataset."""
    from ._support import write_questions

    return write_questions(tmp_path / "questions.jsonl", 40)
