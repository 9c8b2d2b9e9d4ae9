"""Dense indexing on a local Ray runtime with two encoder actors equals the single-process build."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ebmeval._util.errors import ConfigError
from ebmeval.rag import build_index, load_index
from ebmeval.rag.corpus import write_store
from ebmeval.rag.retrievers import DenseRetriever
from ebmeval.tasks import Document

pytest.importorskip("sentence_transformers")
pytest.importorskip("faiss")


def corpus(n: int) -> list[Document]:
    rng = np.random.default_rng(3)
    words = [f"w{i}" for i in range(300)] + "statin aspirin insulin sepsis stroke trial".split()
    return [Document(id=f"d{i}", text=" ".join(rng.choice(words, size=int(rng.integers(3, 15))))) for i in range(n)]


def test_ray_build_with_two_workers_equals_the_local_build(tiny_encoder: Path, tmp_path: Path) -> None:
    ray = pytest.importorskip("ray")
    write_store(corpus(500), tmp_path / "corpus").close()
    local = build_index(tmp_path / "corpus", tmp_path / "local", "dense", model=str(tiny_encoder), shard_size=60)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        distributed = build_index(
            tmp_path / "corpus", tmp_path / "ray", "dense", model=str(tiny_encoder), shard_size=60,
            engine="ray", ray_workers=2,
        )  # fmt: skip
    finally:
        ray.shutdown()
    assert distributed.params == local.params and distributed.corpus == local.corpus
    a, b = load_index(tmp_path / "local"), load_index(tmp_path / "ray")
    assert isinstance(a, DenseRetriever) and isinstance(b, DenseRetriever)
    assert a.embeddings is not None and b.embeddings is not None
    np.testing.assert_allclose(np.asarray(b.embeddings), np.asarray(a.embeddings), atol=1e-6)
    queries = ["statin trial", "w5 w17 sepsis", "insulin"]
    assert [[h.document.id for h in q] for q in b.retrieve(queries, 10)] == [
        [h.document.id for h in q] for q in a.retrieve(queries, 10)
    ]


def test_ray_engine_refuses_what_it_cannot_do(tmp_path: Path) -> None:
    docs = corpus(5)
    with pytest.raises(ConfigError, match="ray engine encodes dense indexes"):
        build_index(docs, tmp_path / "a", "bm25", engine="ray")
    with pytest.raises(ConfigError, match="reads a corpus folder"):
        build_index(docs, tmp_path / "b", "dense", engine="ray")
    with pytest.raises(ConfigError, match="unknown engine"):
        build_index(docs, tmp_path / "c", "bm25", engine="spark")  # type: ignore[arg-type]


def test_only_the_engine_module_imports_ray() -> None:
    code = (
        "import sys, ebmeval.rag, ebmeval.rag.index, ebmeval.cli._rag; "
        "from ebmeval.rag import build_index; assert 'ray' not in sys.modules, 'ray imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    source = Path(__file__).parents[2] / "src" / "ebmeval"
    importing = re.compile(r"^\s*(import ray\b|from ray\b)", re.MULTILINE)
    importers = sorted(
        str(p.relative_to(source)) for p in source.rglob("*.py") if importing.search(p.read_text(encoding="utf-8"))
    )
    assert importers == ["rag/index/_ray.py"]
