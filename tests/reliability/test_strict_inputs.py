"""Lax inputs are refused with the file and line, and a command that did nothing says so in its exit code."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from ebmeval._util.errors import ConfigError, DataError
from ebmeval.builtin_tasks.mcq_file import load_mcq_file
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


def refused_in_one_line(tmp_path: Path, *args: str) -> str:
    """The one error line of ``ebmeval ARGS`` run in ``tmp_path``: exit 2, no traceback."""
    done = subprocess.run(
        [EBMEVAL, *args], cwd=tmp_path, env=cli_env(tmp_path), capture_output=True, text=True, timeout=120
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert lines[0].startswith("error: "), lines
    assert not (tmp_path / "runs").exists()  # nothing was run
    return lines[0]


@pytest.mark.parametrize(
    ("record", "needle"),
    [
        (GOOD | {"options": {"A": "x", "a": "y", "B": "z"}}, "q.jsonl:2: field 'options': two options are letter A"),
        (GOOD | {"options": {" b": "x", "B": "y"}}, "q.jsonl:2: field 'options': two options are letter B"),
        ('{"id": "q2", "metadata": ' + "[" * 100_000 + "]" * 100_000 + "}", "q.jsonl:2: JSON nested more than 64"),
        (GOOD | {"metadata": {"x": json.loads("[" * 65 + "]" * 65)}}, "q.jsonl:2: JSON nested more than 64"),
    ],
    ids=["case-collision", "space-collision", "nested-100000", "nested-66"],
)
def test_a_bad_mcq_line_is_one_line_with_exit_2(tmp_path: Path, record: object, needle: str) -> None:
    line = record if isinstance(record, str) else json.dumps(record)
    (tmp_path / "q.jsonl").write_text(json.dumps(GOOD | {"id": "q0"}) + "\n" + line + "\n")
    args = ["run", "--task", "mcq-file", "--task-arg", "path=q.jsonl", "--model", "scripted:A"]
    message = refused_in_one_line(tmp_path, *args)
    assert needle in message, message


def test_mcq_option_letters_that_do_not_collide_still_ignore_case(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps(GOOD | {"options": {"a": "x", "B": "y"}, "answer": "b"}) + "\n")
    (sample,) = load_mcq_file(path)
    assert sample.choices == {"A": "x", "B": "y"} and sample.target == "B"


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("task: pubmedqa\nmodel: scripted:A\nseed: 100000000000000000000000\n", "run.yaml:3: field 'seed'"),
        ("task: pubmedqa\nmodel: scripted:A\nseed: 1e23\n", "run.yaml:3: field 'seed'"),
        ("task: pubmedqa\nmodel: scripted:A\nseed: 1.0e+23\n", "run.yaml:3: field 'seed'"),
        ("task: pubmedqa\nmodel: scripted:A\nepochs: 100000000000000000000000\n", "run.yaml:3: field 'epochs'"),
        ("task: pubmedqa\nmodel: scripted:A\ngenerate:\n  seed: 1" + "0" * 30 + "\n", "run.yaml:4: field 'generate.se"),
        ('task: pubmedqa\nmodel: scripted:A\nstore: ""\n', "run.yaml:3: field 'store'"),
        ('task: pubmedqa\nstore: ""\n', "run.yaml:2: field 'store'"),
        ("task: pubmedqa\nlimit: 2\n", "run.yaml: field 'model': missing"),
    ],
    ids=["seed-int", "seed-1e23", "seed-float", "epochs", "generate-seed", "empty-store", "empty-store-no-model",
         "no-model"],
)  # fmt: skip
def test_a_bad_config_value_is_one_line_with_exit_2(tmp_path: Path, text: str, needle: str) -> None:
    (tmp_path / "run.yaml").write_text(text)
    message = refused_in_one_line(tmp_path, "run", "run.yaml")
    assert needle in message, message


def test_flags_alone_still_run_the_default_model_and_a_flag_can_name_it(tmp_path: Path) -> None:
    assert config_from_flags(task="pubmedqa").model == "local"  # the README's `ebmeval run --task pubmedqa`
    (tmp_path / "run.yaml").write_text("task: pubmedqa\n")
    assert load_config(tmp_path / "run.yaml", {"model": "scripted:A"}).model == "scripted:A"
