"""Lax inputs are refused with the file and line, and a command that did nothing says so in its exit code."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from ebmeval._util.errors import ConfigError, DataError
from ebmeval.benchmarks.mcq_file import load_mcq_file
from ebmeval.runner import config_from_flags, load_config
from ebmeval.store import RunStore

from ._support import EBMEVAL, cli_env


@pytest.mark.parametrize("field", ["limit", "seed", "epochs", "concurrency"])
def test_a_boolean_is_not_a_number_in_a_config_file(tmp_path: Path, field: str) -> None:
    path = tmp_path / "run.yaml"
    path.write_text(f"task: pubmedqa\nmodel: scripted:A\n{field}: true\n")
    with pytest.raises(ConfigError, match=rf"run.yaml:3: field '{field}': Input should be a valid integer"):
        load_config(path)
    with pytest.raises(ConfigError, match=rf"field '{field}'"):
        config_from_flags(task="pubmedqa", model="scripted:A", **{field: True})


@pytest.mark.parametrize(
    ("text", "where", "field"),
    [
        ("task: pubmedqa\nmodel: scripted:A\nlimit: 5\nlimit: 6\n", "run.yaml:4", "limit"),
        ("task: pubmedqa\ngenerate:\n  temperature: 0\n  temperature: 1\n", "run.yaml:4", "generate.temperature"),
    ],
)
def test_a_key_given_twice_in_a_config_file_is_refused(tmp_path: Path, text: str, where: str, field: str) -> None:
    path = tmp_path / "run.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=rf"{where}: field '{field}': given twice"):
        load_config(path)


GOOD = {"id": "q1", "question": "Which?", "options": ["x", "y"], "answer": "A"}


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"answer": []}, "answer", "non-empty list of letters"),
        ({"id": None}, "id", "non-empty string or an integer"),
        ({"id": True}, "id", "non-empty string or an integer"),
        ({"id": 1.5}, "id", "non-empty string or an integer"),
        ({"id": ""}, "id", "non-empty string or an integer"),
        ({"question": {"text": "Which?"}}, "question", "non-empty string"),
        ({"question": float("nan")}, "question", "non-empty string"),
        ({"question": 7}, "question", "non-empty string"),
        ({"question": "  "}, "question", "non-empty string"),
    ],
)
def test_an_mcq_record_with_a_lax_value_is_refused_at_its_line(
    tmp_path: Path, change: dict[str, object], field: str, message: str
) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps(GOOD | {"id": "q0"}) + "\n" + json.dumps(GOOD | change) + "\n")  # NaN is written as NaN
    with pytest.raises(DataError, match=rf"q.jsonl:2: field '{field}': .*{message}"):
        load_mcq_file(path)


def test_an_integer_mcq_id_is_kept_as_its_digits(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps(GOOD | {"id": 17}) + "\n")
    assert [s.id for s in load_mcq_file(path)] == ["17"]


def test_ingesting_a_corpus_that_keeps_no_document_exits_non_zero(tmp_path: Path) -> None:
    source = tmp_path / "docs.jsonl"
    source.write_text(json.dumps({"id": "d1", "body": "text under another field"}) + "\n")
    done = subprocess.run(
        [EBMEVAL, "corpus", "ingest", str(source), "--out", str(tmp_path / "corpus")],
        env=cli_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    assert "0 kept" in done.stderr and "no document was kept" in done.stderr


def test_exporting_a_run_without_generations_exits_non_zero(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.sqlite")
    store.begin_run(run_id="empty-run", config_hash="h", config={}, task="t", model="m", seed=0, provenance={})
    store.close()
    done = subprocess.run(
        [EBMEVAL, "export", "empty-run", "--store", "runs.sqlite"],
        cwd=tmp_path,
        env=cli_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1 and "nothing to export" in done.stderr
