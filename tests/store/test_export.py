import csv
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from ebmeval.runner import RunConfig, run
from ebmeval.store import RunStore, export_run
from tests.helpers.toy import scripted_model, toy_task


@pytest.fixture
def stored(tmp_path: Path) -> tuple[RunStore, str]:
    config = RunConfig.model_validate({"task": "toy", "store": str(tmp_path / "runs.sqlite"), "cache": False})
    result = run(config, task=toy_task(4), models={"model": scripted_model()})
    return RunStore(tmp_path / "runs.sqlite"), result.run.run_id


def test_every_export_format_holds_the_same_rows(stored: tuple[RunStore, str], tmp_path: Path) -> None:
    store, run_id = stored
    assert export_run(store, run_id, "jsonl", tmp_path / "r.jsonl") == 4
    assert export_run(store, run_id, "csv", tmp_path / "r.csv") == 4
    assert export_run(store, run_id, "parquet", tmp_path / "r.parquet") == 4
    jsonl = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    with (tmp_path / "r.csv").open() as handle:
        table = list(csv.DictReader(handle))
    parquet = pq.read_table(tmp_path / "r.parquet").to_pylist()
    for rows in (jsonl, table, parquet):
        accuracy = {row["sample_id"]: float(row["exact.accuracy"]) for row in rows}
        assert accuracy == {"q0": 1.0, "q1": 0.0, "q2": 1.0, "q3": 0.0}
    assert parquet == jsonl


def test_failed_samples_are_exported_with_their_error(tmp_path: Path) -> None:
    config = RunConfig.model_validate({"task": "toy", "store": str(tmp_path / "runs.sqlite"), "cache": False})
    result = run(config, task=toy_task(4), models={"model": scripted_model(fail_on={"question 1"})})
    store, run_id = RunStore(tmp_path / "runs.sqlite"), result.run.run_id
    assert result.progress.errors == 1
    for fmt in ("jsonl", "csv", "parquet"):
        assert export_run(store, run_id, fmt, tmp_path / f"r.{fmt}") == 4  # 3 answered, 1 failed: none dropped
    jsonl = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    with (tmp_path / "r.csv").open() as handle:
        table = list(csv.DictReader(handle))
    parquet = pq.read_table(tmp_path / "r.parquet").to_pylist()
    for rows in (jsonl, table, parquet):
        errors = {row["sample_id"]: row["error"] for row in rows}
        assert set(errors) == {"q0", "q1", "q2", "q3"}
        assert "scripted failure on question 1" in errors["q1"] and not errors["q0"]
        assert [row["error_stage"] for row in rows if row["sample_id"] == "q1"] != [""]
