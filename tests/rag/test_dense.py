from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ebmeval._util.errors import ConfigError, MissingDependencyError
from ebmeval.rag import IndexMismatchError, build_index, load_index
from ebmeval.rag.retrievers import (
    BUNDLED_ENCODER_ID,
    DenseOptions,
    DenseRetriever,
    Encoder,
    index_text,
    model_fingerprint,
)
from ebmeval.tasks import Document

pytest.importorskip("sentence_transformers")
pytest.importorskip("faiss")


def exact_ranking(encoder: Encoder, corpus: list[Document], query: str) -> list[str]:
    docs = encoder.encode([index_text(d) for d in corpus])
    scores = docs @ encoder.encode([query])[0]
    return [corpus[i].id for i in np.argsort(-scores, kind="stable")]


def test_encoder_vectors_are_unit_length(tiny_encoder: Path) -> None:
    encoder = Encoder(tiny_encoder, batch_size=2)
    seen: list[tuple[int, int]] = []
    vectors = encoder.encode(["a", "b c", "d e f"], progress=lambda done, total: seen.append((done, total)))
    assert vectors.shape == (3, 32) and vectors.dtype == np.float32
    assert np.linalg.norm(vectors, axis=1) == pytest.approx(1.0, abs=1e-5)
    assert seen == [(3, 3)]
    assert encoder.info.id == tiny_encoder.name and encoder.info.fingerprint == model_fingerprint(tiny_encoder)
    assert encoder.encode([]).shape == (0, 32)


def test_loading_prints_no_progress_bar_and_leaves_the_setting_alone(
    tiny_encoder: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    from transformers.utils import logging as hf_logging

    Encoder(tiny_encoder)
    assert "Loading weights" not in capfd.readouterr().err
    assert hf_logging.is_progress_bar_enabled()


@pytest.mark.parametrize("index", ["flat", "hnsw"])
def test_retrieval_is_cosine_ranking(tiny_encoder: Path, corpus: list[Document], index: str) -> None:
    retriever = DenseRetriever.build(corpus, DenseOptions(model=str(tiny_encoder), index=index))  # type: ignore[arg-type]
    query = "statins and cholesterol"
    [hits] = retriever.retrieve([query], k=5)
    assert [h.document.id for h in hits] == exact_ranking(retriever.encoder, corpus, query)
    assert [h.rank for h in hits] == [1, 2, 3, 4, 5]
    assert hits[0].score == pytest.approx(
        float(retriever.embeddings[int(hits[0].document.id[1]) - 1] @ retriever.encoder.encode([query])[0]), abs=1e-5
    )
    assert len(retriever.retrieve([query, "aspirin"], k=2)[1]) == 2


def test_prefixes_reach_the_encoder(
    tiny_encoder: Path, corpus: list[Document], monkeypatch: pytest.MonkeyPatch
) -> None:
    retriever = DenseRetriever.build(
        corpus, DenseOptions(model=str(tiny_encoder), query_prefix="query: ", document_prefix="doc: ")
    )
    sent: list[str] = []
    encode = retriever.encoder.encode

    def spy(texts: list[str], **options: Any) -> Any:
        sent.extend(texts)
        return encode(texts, **options)

    monkeypatch.setattr(retriever.encoder, "encode", spy)
    retriever.retrieve(["aspirin"], 1)
    assert sent == ["query: aspirin"]
    expected = retriever.encoder.model.encode(["doc: " + index_text(corpus[0])], normalize_embeddings=True)[0]
    assert retriever.embeddings[0] == pytest.approx(expected, abs=1e-5)


@pytest.mark.parametrize("index", ["flat", "hnsw"])
def test_index_roundtrip(tiny_encoder: Path, corpus: list[Document], tmp_path: Path, index: str) -> None:
    manifest = build_index(corpus, tmp_path / "ix", "dense", model=str(tiny_encoder), index=index)
    [info] = manifest.encoders
    assert info.fingerprint == model_fingerprint(tiny_encoder) and info.dim == 32
    assert "embeddings.npy" in manifest.arrays
    assert ("hnsw.faiss.npy" in manifest.arrays) == (index == "hnsw")
    loaded = load_index(tmp_path / "ix", corpus=corpus)
    assert isinstance(loaded, DenseRetriever)
    assert isinstance(loaded.embeddings, np.memmap)
    built = DenseRetriever.build(corpus, DenseOptions(model=str(tiny_encoder), index=index))  # type: ignore[arg-type]
    query = ["influenza vaccine in the elderly"]
    assert [h.document.id for h in loaded.retrieve(query, 3)[0]] == [h.document.id for h in built.retrieve(query, 3)[0]]


def test_other_encoder_is_refused(tiny_encoder: Path, corpus: list[Document], tmp_path: Path) -> None:
    import sentence_transformers

    build_index(corpus, tmp_path / "ix", "dense", model=str(tiny_encoder))
    other = sentence_transformers.SentenceTransformer(str(tiny_encoder), device="cpu")
    for parameter in other.parameters():
        parameter.data.add_(0.01)
        break
    other.save(str(tmp_path / "other"))
    with pytest.raises(IndexMismatchError, match=r"built with encoder .* but the encoder given is 'other'"):
        load_index(tmp_path / "ix", encoder=tmp_path / "other")


def test_moved_encoder_is_refused(tiny_encoder: Path, corpus: list[Document], tmp_path: Path) -> None:
    moved = tmp_path / "model"
    shutil.copytree(tiny_encoder, moved)
    build_index(corpus, tmp_path / "ix", "dense", model=str(moved))
    shutil.rmtree(moved)
    with pytest.raises(IndexMismatchError, match="no longer exists; pass encoder="):
        load_index(tmp_path / "ix")
    assert isinstance(load_index(tmp_path / "ix", encoder=tiny_encoder), DenseRetriever)


def test_bad_options(tiny_encoder: Path, corpus: list[Document], tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown index type 'ivf'"):
        DenseRetriever.build(corpus, DenseOptions(model=str(tiny_encoder), index="ivf"))  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="not a sentence-transformers model folder"):
        Encoder(tmp_path)


def test_missing_faiss_names_the_extra(
    tiny_encoder: Path, corpus: list[Document], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "faiss", None)
    with pytest.raises(MissingDependencyError, match="faiss-cpu") as info:
        DenseRetriever.build(corpus, DenseOptions(model=str(tiny_encoder)))
    assert info.value.extra == "rag"


@pytest.mark.slow
def test_bundled_minilm_finds_the_paraphrase(corpus: list[Document], tmp_path: Path) -> None:
    build_index(corpus, tmp_path / "ix", "dense/minilm")
    retriever = load_index(tmp_path / "ix")
    assert retriever.encoders()[0].id == BUNDLED_ENCODER_ID
    # no word in common with d4 ("Myocardial infarction is treated with early reperfusion")
    [hits] = retriever.retrieve(["how do doctors manage a heart attack"], k=2)
    assert hits[0].document.id == "d4"
