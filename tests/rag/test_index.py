from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from ebmeval._util.errors import ConfigError, DataError, UnknownNameError
from ebmeval.rag import IndexMismatchError, build_index, index_identity, ingest, load_index, search
from ebmeval.rag.corpus import DocumentStore
from ebmeval.rag.index import FORMAT_VERSION, read_manifest
from ebmeval.tasks import Document


def test_build_load_search_roundtrip(corpus: list[Document], tmp_path: Path) -> None:
    manifest = build_index(corpus, tmp_path / "ix", "bm25", k1=1.2)
    assert manifest.retriever == "bm25"
    assert manifest.params["k1"] == 1.2
    assert manifest.corpus.n_documents == 5
    assert manifest.format_version == FORMAT_VERSION
    assert "bm25s" in manifest.libraries and manifest.created.endswith("+00:00")
    assert set(manifest.arrays) >= {"data.csc.index.npy", "documents.offsets.npy"}
    assert manifest.corpus_path == "."
    assert read_manifest(tmp_path / "ix") == manifest
    assert isinstance(load_index(tmp_path / "ix").documents, DocumentStore)
    retriever = load_index(tmp_path / "ix", corpus=corpus)
    hits = search(retriever, "metformin", k=2)
    assert [h.document for h in hits] == [corpus[2]]
    assert [h.document.id for h in search(tmp_path / "ix", "aspirin bleeding")] == ["d2"]


def test_index_from_ingested_corpus_folder(tmp_path: Path) -> None:
    source = tmp_path / "a.jsonl"
    source.write_text('{"id": "1", "text": "insulin pumps"}\n{"id": "2", "text": "hip fracture surgery"}\n')
    ingest([source], tmp_path / "corpus")
    build_index(tmp_path / "corpus", tmp_path / "ix")
    retriever = load_index(tmp_path / "ix", corpus=tmp_path / "corpus")
    assert [h.document.id for h in retriever.retrieve(["fracture"], 1)[0]] == ["2"]


def test_corpus_mismatch_is_refused(corpus: list[Document], tmp_path: Path) -> None:
    build_index(corpus, tmp_path / "ix")
    changed = [*corpus[:4], corpus[4].model_copy(update={"text": "edited"})]
    with pytest.raises(IndexMismatchError, match="built from a corpus of 5 documents with hash .* but the corpus"):
        load_index(tmp_path / "ix", corpus=changed)


def test_tampered_folder_is_refused(corpus: list[Document], tmp_path: Path) -> None:
    build_index(corpus, tmp_path / "ix")
    data = tmp_path / "ix" / "data.csc.index.npy"
    np.save(data, np.load(data)[:-1])
    with pytest.raises(IndexMismatchError, match="the manifest records float32"):
        load_index(tmp_path / "ix")
    data.unlink()
    with pytest.raises(IndexMismatchError, match="missing"):
        load_index(tmp_path / "ix")


def test_edited_documents_are_refused(corpus: list[Document], tmp_path: Path) -> None:
    build_index(corpus, tmp_path / "ix")
    info = json.loads((tmp_path / "ix" / "corpus.json").read_text())
    info["fingerprint"]["hash"] = "0" * 64
    (tmp_path / "ix" / "corpus.json").write_text(json.dumps(info))
    with pytest.raises(IndexMismatchError, match="corpus given has 5 documents with hash 000000000000"):
        load_index(tmp_path / "ix")


def test_other_format_version_is_refused(corpus: list[Document], tmp_path: Path) -> None:
    build_index(corpus, tmp_path / "ix")
    file = tmp_path / "ix" / "manifest.json"
    file.write_text(file.read_text().replace(f'"format_version": {FORMAT_VERSION}', '"format_version": 999'))
    with pytest.raises(IndexMismatchError, match="format version 999"):
        load_index(tmp_path / "ix")


def test_output_folder_rules(corpus: list[Document], tmp_path: Path) -> None:
    build_index(corpus, tmp_path / "ix")
    with pytest.raises(ConfigError, match="already holds an index"):
        build_index(corpus, tmp_path / "ix")
    build_index(corpus[:2], tmp_path / "ix", overwrite=True)
    assert read_manifest(tmp_path / "ix").corpus.n_documents == 2
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match="not an index folder"):
        build_index(corpus, tmp_path / "other", overwrite=True)
    with pytest.raises(DataError, match="no manifest.json"):
        load_index(tmp_path / "other")


def test_duplicate_ids_and_bad_names(corpus: list[Document], tmp_path: Path) -> None:
    with pytest.raises(DataError, match="'d1' occurs at positions 0 and 5"):
        build_index([*corpus, corpus[0]], tmp_path / "ix")
    with pytest.raises(UnknownNameError, match="Did you mean 'bm25'"):
        build_index(corpus, tmp_path / "ix", "bm52")
    with pytest.raises(ConfigError, match="retriever 'bm25' takes no such option"):
        build_index(corpus, tmp_path / "ix", "bm25", k=3)


def _corpus_folder(tmp_path: Path, corpus: list[Document]) -> Path:
    from ebmeval.rag.corpus import write_store

    write_store(corpus, tmp_path / "corpus").close()
    return tmp_path / "corpus"


def test_index_names_its_corpus_instead_of_copying_it(corpus: list[Document], tmp_path: Path) -> None:
    folder = _corpus_folder(tmp_path, corpus)
    manifest = build_index(folder, tmp_path / "ix", "bm25")
    assert manifest.corpus_path == str(folder.resolve())
    assert not list((tmp_path / "ix").glob("documents*")) and not (tmp_path / "ix" / "corpus.json").exists()
    retriever = load_index(tmp_path / "ix")
    assert isinstance(retriever.documents, DocumentStore) and retriever.documents.path == folder.resolve()
    assert [h.document.id for h in retriever.retrieve(["metformin"], 1)[0]] == ["d3"]
    # moved: found again with corpus=, refused without
    folder.rename(tmp_path / "moved")
    with pytest.raises(IndexMismatchError, match="corpus folder .* is gone .* pass corpus="):
        load_index(tmp_path / "ix")
    assert len(load_index(tmp_path / "ix", corpus=tmp_path / "moved").documents) == 5
    with pytest.raises(ConfigError, match="is the corpus folder"):
        build_index(tmp_path / "moved", tmp_path / "moved", overwrite=True)


def test_changed_corpus_content_is_refused_touched_corpus_is_not(corpus: list[Document], tmp_path: Path) -> None:
    from ebmeval._util.errors import UsageError

    folder = _corpus_folder(tmp_path, corpus)
    build_index(folder, tmp_path / "ix", "bm25")
    documents = folder / "documents.jsonl"
    os.utime(documents)  # same bytes, new mtime: hashed again and accepted
    assert len(load_index(tmp_path / "ix").documents) == 5
    # same length, one letter changed, corpus.json left as it was
    documents.write_bytes(documents.read_bytes().replace(b"Metformin", b"Metformon"))
    with pytest.raises(UsageError, match="documents changed since the index was built .* rebuild the index"):
        load_index(tmp_path / "ix")


def test_build_refuses_a_corpus_that_differs_from_its_fingerprint(corpus: list[Document], tmp_path: Path) -> None:
    folder = _corpus_folder(tmp_path, corpus)
    documents = folder / "documents.jsonl"
    documents.write_bytes(documents.read_bytes().replace(b"Metformin", b"Metformon"))
    with pytest.raises(IndexMismatchError, match="differ from the fingerprint in corpus.json"):
        build_index(folder, tmp_path / "ix", "bm25")
    assert not (tmp_path / "ix").exists()


def test_index_identity(corpus: list[Document], tmp_path: Path) -> None:
    folder = _corpus_folder(tmp_path, corpus)
    first = index_identity(build_index(folder, tmp_path / "a", "bm25") and tmp_path / "a")
    assert first["retriever"] == "bm25" and first["n_documents"] == 5
    assert first["corpus_hash"] == read_manifest(tmp_path / "a").corpus.hash
    assert first["params"]["k1"] == 1.5 and len(first["hash"]) == 64
    build_index(corpus, tmp_path / "b", "bm25")  # same documents given in memory: same identity
    assert index_identity(tmp_path / "b") == first
    build_index(folder, tmp_path / "c", "bm25", k1=1.2)
    assert index_identity(tmp_path / "c")["hash"] != first["hash"]
    build_index(corpus[:4], tmp_path / "d", "bm25")
    assert index_identity(tmp_path / "d")["corpus_hash"] != first["corpus_hash"]
