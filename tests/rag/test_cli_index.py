"""`ebmeval index build` and `ebmeval search` through the real command line."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from tests.helpers.cli import ebmeval as run_cli

from ebmeval.rag.corpus import write_store
from ebmeval.tasks import Document

pytest.importorskip("bm25s")


def ebmeval(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, cwd=cwd, timeout=300)  # index builds take longer than most commands


def test_build_search_and_a_changed_corpus(corpus: list[Document], tmp_path: Path) -> None:
    write_store(corpus, tmp_path / "corpus").close()
    done = ebmeval("index", "build", "corpus", "--out", "ix", "--option", "memory_mb=64", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "built bm25 index of 5 documents" in done.stdout + done.stderr
    disk_bytes = json.loads((tmp_path / "ix" / "manifest.json").read_text())["disk_bytes"]
    assert f"({disk_bytes / 1024:,.0f} KiB on disk)" in done.stderr and disk_bytes > 1024
    assert not (tmp_path / "ix" / "documents.jsonl").exists()
    found = ebmeval("search", "metformin diabetes", "--index", "ix", "--json", cwd=tmp_path)
    assert [h["document"]["id"] for h in json.loads(found.stdout)] == ["d3"]
    documents = tmp_path / "corpus" / "documents.jsonl"
    documents.write_bytes(documents.read_bytes().replace(b"Metformin", b"Metformon"))
    refused = ebmeval("search", "metformin", "--index", "ix", cwd=tmp_path)
    assert refused.returncode == 2 and "documents changed since the index was built" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_bad_engine_exits_2(corpus: list[Document], tmp_path: Path) -> None:
    write_store(corpus, tmp_path / "corpus").close()
    done = ebmeval("index", "build", "corpus", "--out", "ix", "--engine", "spark", cwd=tmp_path)
    assert done.returncode == 2 and "must be local or ray" in done.stderr
    done = ebmeval("index", "build", "corpus", "--out", "ix", "--engine", "ray", cwd=tmp_path)
    assert done.returncode == 2 and "ray engine encodes dense indexes" in done.stderr


def test_an_option_named_like_an_argument_of_the_build_exits_2(corpus: list[Document], tmp_path: Path) -> None:
    write_store(corpus, tmp_path / "corpus").close()
    for option in ("progress=1", "overwrite=true"):
        done = ebmeval("index", "build", "corpus", "--out", "ix", "--option", option, cwd=tmp_path)
        key = option.split("=")[0]
        assert done.returncode == 2, done.stderr
        assert f"field 'retriever.{key}': not a retriever option" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "ix").exists()
