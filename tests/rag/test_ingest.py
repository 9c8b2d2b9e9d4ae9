from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ebmeval._util.errors import DataError
from ebmeval.rag.corpus import (
    Chunking,
    DocumentStore,
    FieldMap,
    Source,
    corpus_fingerprint,
    ingest,
    load_corpus,
    write_store,
)
from ebmeval.tasks import Document


def write_jsonl(path: Path, records: list[dict[str, object] | str]) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n")
    return path


def test_store_roundtrip_and_random_access(tmp_path: Path) -> None:
    docs = [
        Document(id="a", text="Ünïcode text", title="T", metadata={"year": 2001}),
        Document(id="b", text="second\nline"),
    ]
    store = write_store(docs, tmp_path / "c", info={"note": "x"})
    assert len(store) == 2
    assert store[1] == docs[1] and store[-2] == docs[0]
    assert list(store) == docs
    assert store[0:2] == docs
    assert store.fingerprint == corpus_fingerprint(docs)
    assert store.info["note"] == "x"
    assert isinstance(np.load(tmp_path / "c" / "documents.offsets.npy", mmap_mode="r"), np.memmap)
    with pytest.raises(IndexError):
        store[2]
    store.close()


def test_fingerprint_depends_on_content_and_order() -> None:
    a, b = Document(id="a", text="x"), Document(id="b", text="y")
    assert corpus_fingerprint([a, b]) != corpus_fingerprint([b, a])
    assert corpus_fingerprint([a]) != corpus_fingerprint([a.model_copy(update={"text": "z"})])
    assert corpus_fingerprint([a]) == corpus_fingerprint([a.model_copy(update={"metadata": {"k": 1}})])


def test_damaged_store_is_refused(tmp_path: Path) -> None:
    write_store([Document(id="a", text="x")], tmp_path)
    np.save(tmp_path / "documents.offsets.npy", np.array([0], dtype=np.int64))
    with pytest.raises(DataError, match="damaged"):
        DocumentStore(tmp_path)
    with pytest.raises(DataError, match="not a corpus folder"):
        load_corpus(tmp_path / "nowhere")


def test_ingest_reports_duplicates_and_errors(tmp_path: Path) -> None:
    first = write_jsonl(
        tmp_path / "a.jsonl",
        [
            {"pmid": "1", "abstract": "Statins  lower LDL.", "title": "S"},
            {"pmid": "2", "abstract": "Aspirin and bleeding."},
            "{broken",
        ],
    )
    second = write_jsonl(
        tmp_path / "b.jsonl",
        [
            {"pmid": "1", "abstract": "A later version of record 1."},
            {"pmid": "3", "abstract": "statins lower ldl."},
            {"pmid": "4", "abstract": "Metformin for diabetes."},
        ],
    )
    fields = FieldMap(id="pmid", text="abstract")
    stats = ingest([Source(path=first, fields=fields), Source(path=second, fields=fields)], tmp_path / "corpus")
    assert (stats.documents_read, stats.documents_kept, stats.chunks) == (5, 3, 3)
    assert (stats.duplicate_ids, stats.duplicate_texts) == (1, 1)
    assert [(d.id, d.of, d.kind) for d in stats.duplicates] == [("1", "1", "id"), ("3", "1", "text")]
    [issue] = stats.errors
    assert issue.line == 3 and issue.path == str(first)
    assert [(s.read, s.errors) for s in stats.sources] == [(2, 1), (3, 0)]
    store = load_corpus(tmp_path / "corpus")
    assert [d.id for d in store] == ["1", "2", "4"]
    assert store.fingerprint == stats.fingerprint
    assert len((tmp_path / "corpus" / "duplicates.jsonl").read_text().splitlines()) == 2
    recorded = json.loads((tmp_path / "corpus" / "corpus.json").read_text())
    assert recorded["stats"]["documents_kept"] == 3


def test_ingest_can_keep_text_duplicates_and_chunk(tmp_path: Path) -> None:
    source = write_jsonl(
        tmp_path / "a.jsonl",
        [{"id": "1", "text": "one two three four five"}, {"id": "2", "text": "One two three four  five"}],
    )
    stats = ingest([source], tmp_path / "c", duplicate_texts="keep", chunking=Chunking(size=3, overlap=1))
    assert stats.documents_kept == 2 and stats.duplicate_texts == 1
    assert [d.id for d in load_corpus(tmp_path / "c")] == ["1#0", "1#1", "2#0", "2#1"]
    assert stats.chunks == 4


def test_ingest_raise_mode_names_file_and_line(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "a.jsonl", [{"id": "1", "text": "x"}, "nope"])
    with pytest.raises(DataError, match=r"a\.jsonl:2"):
        ingest([source], tmp_path / "c", on_error="raise")


def test_ingest_progress(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "a.jsonl", [{"id": str(i), "text": f"t{i}"} for i in range(3)])
    seen: list[int] = []
    ingest([source], tmp_path / "c", progress=seen.append)
    assert seen == [1, 2, 3]
