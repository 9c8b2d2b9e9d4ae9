from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from ebmeval._util.errors import DataError
from ebmeval.builtin_tasks.mcq_file import load_mcq_file
from ebmeval.tasks import create_task

GOOD = [
    {"id": "q1", "question": "Aspirin is an NSAID?", "options": ["yes", "no"], "answer": "A"},
    {
        "id": "q2",
        "question": "Pick two",
        "options": {"a": "x", "b": "y", "c": "z"},
        "answer": ["a", "c"],
        "context": "ctx",
    },
]


def write(tmp_path: Path, lines: list[str], name: str = "qs.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def test_loads_lists_mappings_and_context(tmp_path: Path) -> None:
    samples = load_mcq_file(write(tmp_path, [json.dumps(r) for r in GOOD]))
    assert samples[0].choices == {"A": "yes", "B": "no"} and samples[0].target == "A"
    assert samples[1].choices == {"A": "x", "B": "y", "C": "z"} and samples[1].target == ["A", "C"]
    assert [d.text for d in samples[1].documents] == ["ctx"]


def test_gzip_and_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "qs.jsonl.gz"
    with gzip.open(path, "wt") as handle:
        handle.write(json.dumps(GOOD[0]) + "\n\n")
    assert [s.id for s in load_mcq_file(path)] == ["q1"]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('{"id": "q3", "question": "?", "options": ["a"]}', r"qs.jsonl:3: field 'answer': missing field"),
        ('{"id": "q3", "question": "?", "options": ["a"], "answer": "C"}', r"qs.jsonl:3: field 'answer': not one of"),
        ('{"id": "q1", "question": "?", "options": ["a"], "answer": "A"}', r"qs.jsonl:3: field 'id': duplicate id"),
        ('{"id": "q3", "question": "?", "options": 5, "answer": "A"}', r"qs.jsonl:3: field 'options'"),
        ('{"id": "q3", "question": "?"', r"qs.jsonl:3: invalid JSON"),
        ("[1, 2]", r"qs.jsonl:3: expected a JSON object"),
    ],
)
def test_malformed_lines_name_file_line_and_field(tmp_path: Path, line: str, expected: str) -> None:
    path = write(tmp_path, [json.dumps(r) for r in GOOD] + [line])
    with pytest.raises(DataError, match=expected):
        load_mcq_file(path)


def test_bad_encoding_is_a_data_error(tmp_path: Path) -> None:
    path = tmp_path / "qs.jsonl"
    path.write_bytes(json.dumps(GOOD[0]).encode() + b"\n\xff\xfe bad\n")
    with pytest.raises(DataError, match="qs.jsonl:2: not UTF-8"):
        load_mcq_file(path)


def test_task_version_follows_file_content(tmp_path: Path) -> None:
    path = write(tmp_path, [json.dumps(GOOD[0])])
    first = create_task("mcq-file", path=str(path)).version
    write(tmp_path, [json.dumps({**GOOD[0], "answer": "B"})])
    assert create_task("mcq-file", path=str(path)).version != first


def test_cli_exits_2_on_a_malformed_dataset_line(tmp_path: Path) -> None:
    write(tmp_path, [json.dumps(GOOD[0]), '{"id": "q2", "question": "?", "options": ["a"], "answer": "Z"}'])
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from ebmeval.cli import main; main()",
            "run",
            "--task",
            "mcq-file",
            "--task-arg",
            "path=qs.jsonl",
            "--model",
            "scripted:A",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "qs.jsonl:2: field 'answer': not one of the options ['A']" in done.stderr
    assert "Traceback" not in done.stderr
