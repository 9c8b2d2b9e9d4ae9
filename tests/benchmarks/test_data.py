from __future__ import annotations

import gzip
import importlib.util
from pathlib import Path

import pytest

from ebmeval._util.errors import DataError
from ebmeval.builtin_tasks import _data

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "data"
SHIPPED = ROOT / "src" / "ebmeval" / "builtin_tasks" / "data"


def test_build_is_deterministic_and_matches_shipped_files(tmp_path: Path) -> None:
    if not SHARED.exists():
        pytest.skip("upstream data not available")
    spec = importlib.util.spec_from_file_location("build_data", ROOT / "scripts" / "build_data.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    counts = module.build(SHARED, tmp_path)
    assert counts["pubmedqa.jsonl.gz"] == 500 and counts["caremedeval_articles.jsonl.gz"] == 37
    assert counts["medthink.jsonl.gz"] == 499 and counts["ddi2013_test.jsonl.gz"] == 5716
    assert len(counts) == 11
    for name in counts:
        assert (tmp_path / name).read_bytes() == (SHIPPED / name).read_bytes(), name


def test_malformed_shipped_file_is_a_data_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    with gzip.open(folder / "bad.jsonl.gz", "wt") as handle:
        handle.write('{"ok": 1}\n[1, 2]\n')
    with gzip.open(folder / "broken.jsonl.gz", "wt") as handle:
        handle.write('{"ok": 1}\n{"ok": \n')

    class Files:
        def joinpath(self, *parts: str) -> Path:
            return tmp_path.joinpath(*parts)

    monkeypatch.setattr(_data.resources, "files", lambda package: Files())
    with pytest.raises(DataError, match=r"bad.jsonl.gz:2: expected a JSON object"):
        _data.read_records("bad.jsonl.gz")
    with pytest.raises(DataError, match=r"broken.jsonl.gz:2: invalid JSON"):
        _data.read_records("broken.jsonl.gz")
    with pytest.raises(DataError, match="missing"):
        _data.read_records("absent.jsonl.gz")
    with gzip.open(folder / "partial.jsonl.gz", "wt") as handle:
        handle.write('{"id": 1, "answer": "A"}\n{"id": 2}\n')
    assert len(_data.read_records("partial.jsonl.gz", ("id",))) == 2
    with pytest.raises(DataError, match=r"partial.jsonl.gz:2: field 'answer': missing field"):
        _data.read_records("partial.jsonl.gz", ("id", "answer"))
    with pytest.raises(DataError, match="field 'answer'"):
        _data.require({"id": 1}, ("id", "answer"), "x.jsonl.gz", 3)
