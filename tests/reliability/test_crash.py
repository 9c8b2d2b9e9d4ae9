"""SIGKILL during ``ebmeval run``: the store stays sound and a re-run finishes every sample once."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from .crash_loop import crash_once


@pytest.mark.slow
def test_five_random_kills_leave_a_sound_store_and_resumable_run(delay_url: str, tmp_path: Path) -> None:
    rng = random.Random(5)
    outcomes = []
    for repeat in range(5):
        work = tmp_path / f"r{repeat}"
        work.mkdir()
        outcomes.append(crash_once(delay_url, work, 30, rng))
    assert [o.integrity_after_kill for o in outcomes] == ["ok"] * 5
    assert [(o.rerun_exit, o.status) for o in outcomes] == [(0, "complete")] * 5
    assert [(o.generations, o.distinct_generations, o.scores, o.distinct_scores) for o in outcomes] == [(30,) * 4] * 5
    # The kills really interrupted runs part-way (not all before or after the work).
    assert any(0 < o.stored_at_kill < 30 for o in outcomes)
