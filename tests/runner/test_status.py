"""A run is complete only when every sample it was asked for is answered: shards, partial merges
and salvaged stores are partial, with counts."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from typer.testing import CliRunner

from ebmeval.cli._app import app
from ebmeval.runner import RunConfig, run
from ebmeval.store import RunStore, merge_stores, salvage_store
from tests.helpers.toy import scripted_model, toy_task


def _run(store: Path, shard: str | None = None) -> str:
    config = RunConfig(task="toy", store=str(store), cache=False, shard=shard)
    return run(config, task=toy_task(12), models={"model": scripted_model()}).run.run_id


def _status(store: Path, run_id: str) -> tuple[str, str]:
    record = RunStore(store, read_only=True).get_run(run_id)
    return record.status, record.status_text


def test_a_shard_is_partial_with_its_counts_and_show_says_so(tmp_path: Path) -> None:
    run_id = _run(tmp_path / "a.sqlite", "1/3")
    answered = RunStore(tmp_path / "a.sqlite", read_only=True).count_generations(run_id)[0]
    assert 0 < answered < 12
    assert _status(tmp_path / "a.sqlite", run_id) == ("partial", f"partial: {answered} of 12 answered")
    shown = CliRunner().invoke(app, ["show", run_id, "--store", str(tmp_path / "a.sqlite")])
    assert f"status partial: {answered} of 12 answered" in " ".join(shown.output.split())
    listed = CliRunner().invoke(app, ["list", "runs", "--store", str(tmp_path / "a.sqlite"), "--json"])
    assert f"partial: {answered} of 12 answered" in listed.output
    assert _status(tmp_path / "whole.sqlite", _run(tmp_path / "whole.sqlite")) == ("complete", "complete")


def test_merging_two_of_three_shards_is_partial_and_all_three_complete(tmp_path: Path) -> None:
    shards = [tmp_path / f"{i}.sqlite" for i in (1, 2, 3)]
    run_id = next(iter({_run(path, f"{i}/3") for i, path in enumerate(shards, start=1)}))
    two = merge_stores(shards[:2], tmp_path / "two.sqlite")
    assert two.status == {run_id: "partial"}
    assert _status(tmp_path / "two.sqlite", run_id)[1] == f"partial: {two.runs[run_id]} of 12 answered"
    three = merge_stores(shards, tmp_path / "three.sqlite")
    assert three.status == {run_id: "complete"} and three.runs[run_id] == 12


def test_a_salvaged_store_that_lost_generations_is_partial(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    run_id = _run(store)
    with sqlite3.connect(store) as db:  # rows a damaged page took with it
        db.execute("DELETE FROM scores WHERE sample_id IN ('q1', 'q2')")
        db.execute("DELETE FROM steps WHERE sample_id IN ('q1', 'q2')")
        db.execute("DELETE FROM generations WHERE sample_id IN ('q1', 'q2')")
    salvage_store(store, tmp_path / "saved.sqlite")
    assert _status(tmp_path / "saved.sqlite", run_id) == ("partial", "partial: 10 of 12 answered")
