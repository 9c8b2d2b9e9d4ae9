"""Bring your own data: mcq-file reads JSONL, JSON, CSV, Parquet and datasets folders, with a field mapping.

Each format is run from the command line as a user would. ``tests/fixtures/hf_mcq`` was written by
``datasets`` 5.2 (``DatasetDict.save_to_disk``, splits train and test); ebmeval reads it without ``datasets``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ebmeval._util.errors import DataError
from ebmeval.builtin_tasks.mcq_file import load_mcq_file
from ebmeval.store import RunStore
from tests.helpers.cli import ebmeval

HF_FOLDER = Path(__file__).resolve().parents[1] / "fixtures" / "hf_mcq"
CSV = (
    "id,question,A,B,C,answer\n"
    'c1,"Which drug is a statin?",atorvastatin,metformin,warfarin,Atorvastatin\n'
    'c2,"Which is an anticoagulant?",atorvastatin,metformin,warfarin,C\n'
)


def run_cli(tmp_path: Path, *args: str) -> tuple[str, list[tuple[str, str]]]:
    """``ebmeval run --task mcq-file ARGS`` with the first-option baseline; its output and (sample, target) pairs."""
    result = ebmeval(
        "run", "--task", "mcq-file", "--model", "baseline/first-option", "--store", "s.sqlite", *args, cwd=tmp_path
    )
    assert result.returncode == 0, result.stdout + result.stderr
    store = RunStore(tmp_path / "s.sqlite", read_only=True)
    run = store.list_runs()[0]
    return result.stdout, [(s.id, str(s.target)) for s, _g in store.generations(run.run_id)]


def test_csv_with_option_columns_and_option_text_answers_from_the_cli(tmp_path: Path) -> None:
    (tmp_path / "q.csv").write_text(CSV)
    out, samples = run_cli(tmp_path, "--task-arg", "path=q.csv")
    assert sorted(samples) == [("c1", "A"), ("c2", "C")]  # "Atorvastatin" read as option A
    assert "accuracy" in out


def test_yes_no_json_without_options_from_the_cli(tmp_path: Path) -> None:
    items = [
        {"id": "y1", "question": "Does exercise lower blood pressure?", "answer": "yes"},
        {"id": "y2", "question": "Is influenza caused by bacteria?", "answer": "No"},
    ]
    (tmp_path / "yn.json").write_text(json.dumps({"data": items}))
    _out, samples = run_cli(tmp_path, "--task-arg", "path=yn.json")
    assert sorted(samples) == [("y1", "A"), ("y2", "B")]
    assert load_mcq_file(tmp_path / "yn.json")[0].choices == {"A": "yes", "B": "no"}
    items.append({"id": "y3", "question": "Does coffee cause arrhythmia?", "answer": "maybe"})
    (tmp_path / "ynm.json").write_text(json.dumps(items))
    assert load_mcq_file(tmp_path / "ynm.json")[0].choices == {"A": "yes", "B": "no", "C": "maybe"}


def test_parquet_with_a_field_mapping_from_the_cli(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    table = pa.table(
        {
            "qid": ["p1", "p2"],
            "prompt": ["Pick the loop diuretic", "Pick the two statins"],
            "choices": [["furosemide", "spironolactone"], ["simvastatin", "aspirin", "rosuvastatin"]],
            "gold": [["furosemide"], ["A", "rosuvastatin"]],
        }
    )
    pq.write_table(table, tmp_path / "q.parquet")
    fields = "fields={id: qid, question: prompt, options: choices, answer: gold}"
    _out, samples = run_cli(tmp_path, "--task-arg", "path=q.parquet", "--task-arg", fields, "--task-arg", "multi=true")
    assert sorted(samples) == [("p1", "['A']"), ("p2", "['A', 'C']")]


def test_local_datasets_folder_from_the_cli(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    fields = "fields={id: qid, question: prompt, options: choices, answer: label}"
    _out, samples = run_cli(
        tmp_path, "--task-arg", f"path={HF_FOLDER}", "--task-arg", fields, "--task-arg", "split=test"
    )
    assert sorted(samples) == [("d1", "A"), ("d2", "B"), ("d3", "B")]
    refused = ebmeval(
        "run", "--task", "mcq-file", "--task-arg", f"path={HF_FOLDER}", "--task-arg", fields, cwd=tmp_path
    )
    assert (
        refused.returncode == 2 and "holds the splits ['train', 'test']; choose one with split=NAME" in refused.stderr
    )


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("q.csv", CSV + "c3,Which?,x,y,z,D\n", r"q.csv:4: field 'answer': not one of the options"),
        ("q.csv", CSV + "c3,,x,y,z,A\n", r"q.csv:4: field 'question': missing field"),
        ("q.csv", CSV + "c3,Which?,x,y,z,A,extra\n", r"q.csv:4: more cells than the header has columns"),
        ("q.csv", CSV + f"c3,{'y' * 140_000},x,y,z,A\n", r"q.csv:4: invalid CSV \(field larger than field limit"),
        ("q.json", json.dumps([{"id": "j1", "question": "?", "answer": "perhaps"}]), r"q.json: row 1: field 'answer'"),
        ("q.json", json.dumps([{"id": "j1", "question": "?", "answer": "yes"}, 3]), r"q.json: row 2: expected a JSON"),
        ("q.json", "{not json", r"q.json: invalid JSON"),
        ("q.txt", "hello", r"q.txt: cannot tell the format from the name"),
    ],
)
def test_errors_name_file_row_and_field(tmp_path: Path, name: str, content: str, expected: str) -> None:
    (tmp_path / name).write_text(content)
    with pytest.raises(DataError, match=expected):
        load_mcq_file(tmp_path / name)
    result = ebmeval("run", "--task", "mcq-file", "--task-arg", f"path={name}", cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr


def test_a_mapped_field_missing_from_the_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "q.csv").write_text(CSV)
    with pytest.raises(DataError, match=r"q.csv:2: field 'prompt': missing field \(mapped to 'question'\)"):
        load_mcq_file(tmp_path / "q.csv", fields={"question": "prompt"})
    with pytest.raises(Exception, match="unknown item field 'questoin'"):
        load_mcq_file(tmp_path / "q.csv", fields={"questoin": "question"})


FREE_TEXT = (
    "qid,prompt,answer\n"
    'f1,"How does metformin lower blood glucose?","It reduces hepatic glucose production."\n'
    'f2,"What is the first-line treatment of anaphylaxis?","Intramuscular adrenaline."\n'
)


def test_free_text_csv_scored_by_a_judge_from_the_cli(tmp_path: Path) -> None:
    (tmp_path / "free.csv").write_text(FREE_TEXT)
    result = ebmeval(
        "run", "--task", "text-file", "--task-arg", "path=free.csv", "--task-arg", "judge=true",
        "--task-arg", "fields={id: qid, question: prompt, reference: answer}",
        "--model", "scripted:It lowers hepatic glucose output.",
        "--role", "judge=scripted:Rationale: Same mechanism, stated more briefly.\nScore: 4",
        "--store", "s.sqlite", "--json", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    metrics = {m["metric"]: m for m in json.loads(result.stdout)["metrics"] if m["group"] is None}
    assert metrics["reference"]["value"] == 4.0 and metrics["reference"]["n"] == 2
    assert 0 < metrics["rougeL"]["value"] < 1
    store = RunStore(tmp_path / "s.sqlite", read_only=True)
    (run,) = store.list_runs()
    judged = [s for _id, _e, label, s in store.scores(run.run_id) if label.startswith("judge/reference-0-5")]
    assert judged and judged[0].explanation == "Same mechanism, stated more briefly."


def test_free_text_file_errors_name_the_row_and_field(tmp_path: Path) -> None:
    (tmp_path / "free.json").write_text(json.dumps([{"id": "a", "question": "Why?"}]))
    result = ebmeval("run", "--task", "text-file", "--task-arg", "path=free.json", cwd=tmp_path)
    assert result.returncode == 2 and "free.json: row 1: field 'reference': missing field" in result.stderr
