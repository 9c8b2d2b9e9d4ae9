import csv
import json
import subprocess
import sys
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
    # Parquet cannot hold an object without keys: the toy samples' empty metadata is written as "{}"
    assert [r | {"metadata": {}} for r in parquet] == jsonl and {r["metadata"] for r in parquet} == {"{}"}


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


def test_nested_values_keep_their_types(tmp_path: Path) -> None:
    """``answer``, ``target``, ``metadata`` and ``retrieved`` are values, not JSON inside strings."""
    from ebmeval.tasks import Generation, ParsedAnswer, Sample

    store = RunStore(tmp_path / "runs.sqlite")
    run = "r1"
    store.begin_run(run_id=run, config_hash="h", config={}, task="t", model="m", seed=0, provenance={})
    samples = [
        Sample(id="a", input="Pick two", target=["A", "C"], metadata={"skill": "drug", "year": 2020}),
        Sample(id="b", input="Pick two", target=["B"], metadata={"skill": "dose", "year": 2021}),
    ]
    store.put_generation(
        run, samples[0], Generation(sample_id="a", output="A, C", answer=ParsedAnswer(value=["A", "C"]))
    )
    store.put_generation(run, samples[1], Generation(sample_id="b", output="?", answer=ParsedAnswer.unparsed("x")))
    store.flush()
    export_run(store, run, "jsonl", tmp_path / "r.jsonl")
    export_run(store, run, "parquet", tmp_path / "r.parquet")
    export_run(store, run, "csv", tmp_path / "r.csv")
    jsonl = {row["sample_id"]: row for row in map(json.loads, (tmp_path / "r.jsonl").read_text().splitlines())}
    assert jsonl["a"]["answer"] == ["A", "C"] and jsonl["b"]["answer"] is None
    assert jsonl["a"]["target"] == ["A", "C"] and jsonl["a"]["metadata"] == {"skill": "drug", "year": 2020}
    table = pq.read_table(tmp_path / "r.parquet")
    assert str(table.schema.field("answer").type) == "list<element: string>"
    assert str(table.schema.field("metadata").type) == "struct<skill: string, year: int64>"
    parquet = {row["sample_id"]: row for row in table.to_pylist()}
    assert parquet["a"]["metadata"] == {"skill": "drug", "year": 2020} and parquet["b"]["answer"] is None
    with (tmp_path / "r.csv").open() as handle:
        csv_rows = {row["sample_id"]: row for row in csv.DictReader(handle)}
    assert json.loads(csv_rows["a"]["answer"]) == ["A", "C"] and csv_rows["b"]["answer"] == ""


def test_prompts_and_judge_rationales_are_in_jsonl_and_parquet(tmp_path: Path) -> None:
    config = RunConfig(
        task="synthesis",
        task_args={"workflow": "parametric-zero-shot", "text_metrics": False},
        model="scripted:Probably beneficial.",
        roles={"judge": "scripted:Justification: too vague to compare.\nOverall: 2"},
        store=str(tmp_path / "runs.sqlite"),
        cache=False,
        limit=2,
    )
    run_id = run(config).run.run_id
    store = RunStore(tmp_path / "runs.sqlite")
    assert export_run(store, run_id, "jsonl", tmp_path / "plain.jsonl") == 2
    plain = json.loads((tmp_path / "plain.jsonl").read_text().splitlines()[0])
    assert "calls" not in plain  # the messages are heavy: only on request
    (rationale,) = [k for k in plain if k.endswith(".explanation")]
    assert "too vague to compare" in plain[rationale]
    cli = [sys.executable, "-c", "from ebmeval.cli import main; main()", "export", run_id, "--prompts"]
    for fmt in ("jsonl", "parquet"):
        done = subprocess.run(
            [*cli, "--format", fmt, "--out", str(tmp_path / f"r.{fmt}"), "--store", str(store.path)],
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
    jsonl = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    parquet = pq.read_table(tmp_path / "r.parquet").to_pylist()
    for rows in (jsonl, parquet):
        model, judge = rows[0]["calls"]
        assert (model["role"], judge["role"]) == ("model", "judge")
        assert model["messages"][0]["role"] == "user" and "Write the conclusion" in model["messages"][0]["content"]
        assert "Candidate conclusion:\nProbably beneficial." in judge["messages"][0]["content"]
        assert judge["reply"].startswith("Justification: too vague")


def test_failed_samples_carry_their_calls_with_prompts(tmp_path: Path) -> None:
    config = RunConfig.model_validate({"task": "toy", "store": str(tmp_path / "runs.sqlite"), "cache": False})
    run(config, task=toy_task(3), models={"model": scripted_model(fail_on={"question 1"})})
    store = RunStore(tmp_path / "runs.sqlite")
    (run_record,) = store.list_runs()
    export_run(store, run_record.run_id, "jsonl", tmp_path / "r.jsonl", prompts=True)
    rows = {row["sample_id"]: row for row in map(json.loads, (tmp_path / "r.jsonl").read_text().splitlines())}
    assert rows["q1"]["error"] and isinstance(rows["q1"]["calls"], list)
    assert [c["step"] for c in rows["q0"]["calls"]] == ["draft", "final"]
