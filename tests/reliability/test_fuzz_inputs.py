"""Malformed dataset files and configs end in a ``UsageError`` naming the place, never a traceback or a hang."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ebmeval._util.errors import UsageError
from ebmeval.builtin_tasks.mcq_file import load_mcq_file
from ebmeval.factuality._importers import read_generated, read_targets
from ebmeval.rag.corpus._readers import read_documents, read_pubmed_xml
from ebmeval.runner import load_config

BOUNDED = settings(
    max_examples=100, deadline=2000, suppress_health_check=[HealthCheck.too_slow, HealthCheck.large_base_example]
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=10,
)
broken_bytes = st.sampled_from([b"\xff\xfe", b"\xc3\x28", b"\x00", b"\xe2\x82", b"\r", b"\x1b[0m"])
huge_line = st.integers(min_value=200_000, max_value=1_000_000).map(lambda n: b"x" * n)


def mcq_records() -> st.SearchStrategy[bytes]:
    """One JSONL line: a near-valid question with fields dropped or retyped, or junk."""
    good = {"id": "q1", "question": "Which?", "options": ["a", "b"], "answer": "A"}
    mutated = st.builds(
        lambda drop, key, value: json.dumps(
            {k: (value if k == key else v) for k, v in good.items() if k not in drop}
        ).encode(),
        st.sets(st.sampled_from(list(good)), max_size=2),
        st.sampled_from([*good, "context", "metadata"]),
        json_values,
    )
    return (
        mutated | json_values.map(lambda v: json.dumps(v).encode()) | broken_bytes | huge_line | st.binary(max_size=40)
    )


def file_from(lines: list[bytes], suffix: str) -> Path:
    handle = tempfile.NamedTemporaryFile(suffix=suffix, delete=False)
    with handle:
        handle.write(b"\n".join(lines))
    return Path(handle.name)


def only_usage_errors(read: Callable[[Path], Any], path: Path) -> None:
    """``read(path)`` either works or raises a ``UsageError`` that names the file."""
    try:
        read(path)
    except UsageError as exc:
        assert str(path) in str(exc), f"the error does not name the file: {exc}"
    finally:
        path.unlink()


@BOUNDED
@given(st.lists(mcq_records(), min_size=0, max_size=5))
def test_mcq_file_loader(lines: list[bytes]) -> None:
    only_usage_errors(load_mcq_file, file_from(lines, ".jsonl"))


csv_cells = st.text(max_size=12) | st.sampled_from(['"', '""', "a,b", "\n", "<s>x</s>"])
csv_lines = st.lists(csv_cells, min_size=0, max_size=4).map(lambda cells: ",".join(cells).encode())


@pytest.mark.filterwarnings("ignore:Generating overly large repr")
@BOUNDED
@given(
    header=st.sampled_from([b"ReviewID,Generated", b",ReviewID,Generated", b"ReviewID", b"", b"ReviewID,Target"]),
    rows=st.lists(csv_lines | broken_bytes | huge_line, max_size=5),
)
def test_factuality_csv_importers(header: bytes, rows: list[bytes]) -> None:
    only_usage_errors(read_generated, file_from([header, *rows], ".csv"))
    only_usage_errors(read_targets, file_from([header.replace(b"Generated", b"Target"), *rows], ".csv"))


ARTICLE = (
    b"<PubmedArticle><MedlineCitation><PMID>1</PMID><Article><ArticleTitle>T</ArticleTitle>"
    b"<Abstract><AbstractText>A</AbstractText></Abstract></Article></MedlineCitation></PubmedArticle>"
)
xml_pieces = st.sampled_from(
    [ARTICLE, ARTICLE[: len(ARTICLE) // 2], b"<PubmedArticle>", b"</PubmedArticle>", b"<PMID>x</PMID>", b"&bogus;"]
)


@BOUNDED
@given(st.lists(xml_pieces | broken_bytes | st.binary(max_size=30) | huge_line, max_size=6))
def test_pubmed_xml_reader(pieces: list[bytes]) -> None:
    body = [b'<?xml version="1.0"?>', b"<PubmedArticleSet>", *pieces, b"</PubmedArticleSet>"]
    only_usage_errors(lambda path: list(read_pubmed_xml(path)), file_from(body, ".xml"))


@BOUNDED
@given(rows=st.lists(csv_lines | broken_bytes | huge_line, max_size=5))
def test_rag_csv_reader(rows: list[bytes]) -> None:
    only_usage_errors(lambda path: list(read_documents(path)), file_from([b"id,title,text", *rows], ".csv"))


config_fields = st.dictionaries(
    st.sampled_from(["task", "task_args", "model", "model_args", "roles", "generate", "seed", "epochs", "limit"])
    | st.text(max_size=6),
    json_values,
    max_size=5,
)


@BOUNDED
@given(config_fields, st.sampled_from([b"", b"\x00", b": [", b"- a\n- b", b'\t"unclosed']))
def test_run_config_loader(fields: dict[str, Any], tail: bytes) -> None:
    path = file_from([yaml.safe_dump(fields).encode() + tail], ".yaml")
    try:
        load_config(path)
    except UsageError as exc:
        message = str(exc)
        assert str(path) in message or "field 'config'" in message, message
    finally:
        path.unlink()


def test_run_config_loader_rejects_non_utf8(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    path.write_bytes(b"task: mcq-file\nmodel: caf\xe9\n")
    only_usage_errors(load_config, path)
