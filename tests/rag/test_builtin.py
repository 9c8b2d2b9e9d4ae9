from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from ebmeval._util.errors import DataError, UnknownNameError
from ebmeval.rag.corpus import Duplicate, builtin_corpus, corpora, deduplicate
from ebmeval.tasks import Document

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
needs_data = pytest.mark.skipif(not DATA.exists(), reason="needs the project's shared data folder")


def test_deduplicate_reports_what_it_drops() -> None:
    docs = [Document(id="1", text="A b"), Document(id="1", text="other"), Document(id="2", text="a  B")]
    report: list[Duplicate] = []
    assert [d.id for d in deduplicate(docs, report)] == ["1"]
    assert [(d.id, d.of, d.kind) for d in report] == [("1", "1", "id"), ("2", "1", "text")]


def test_names_and_paths(tmp_path: Path) -> None:
    assert set(corpora) == {"pubmed-abstracts", "evidence-inference", "pubmedqa-contexts", "medquad", "bioasq-snippets"}
    with pytest.raises(UnknownNameError, match="Did you mean 'medquad'"):
        builtin_corpus("medquat", tmp_path)
    with pytest.raises(DataError, match="corpus 'medquad' expects this file"):
        builtin_corpus("medquad", tmp_path)


@needs_data
@pytest.mark.parametrize(
    ("name", "count", "unique"),
    [
        ("pubmedqa-contexts", 1000, 1000),
        ("evidence-inference", 3260, 3259),
        ("pubmed-abstracts", 9412, 7748),
        ("medquad", 16407, 15775),
    ],
)
def test_real_corpora(name: str, count: int, unique: int) -> None:
    docs = list(builtin_corpus(name, DATA))
    assert len(docs) == count
    assert len(list(deduplicate(docs))) == unique
    assert all(d.text.strip() for d in docs)


@needs_data
def test_real_corpus_records() -> None:
    evidence = next(builtin_corpus("evidence-inference", DATA))
    assert evidence.id == "PMC101395" and evidence.text.startswith("BACKGROUND: Previously, we have demonstrated")
    assert (
        evidence.title == "Diclofenac does not interact with codeine metabolism in vivo: A study in healthy volunteers"
    )
    medquad = next(builtin_corpus("medquad", DATA))
    assert "/" in medquad.id and medquad.metadata["corpus"] == "medquad" and medquad.title
    kinds = Counter(d.metadata["section"] for d in builtin_corpus("bioasq-snippets", DATA))
    assert set(kinds) >= {"title", "abstract"}


def test_builtin_ingest_chunks_and_drops_duplicate_ids(tmp_path: Path) -> None:
    import json

    from tests.helpers.cli import ebmeval

    records = [
        {"collection": "c", "qid": "1", "answer": " ".join(f"w{i}" for i in range(30)), "focus": "F"},
        {"collection": "c", "qid": "1", "answer": "a later answer under the same id"},
        {"collection": "c", "qid": "2", "answer": "short answer"},
    ]
    (tmp_path / "medquad").mkdir()
    (tmp_path / "medquad" / "medquad_qa.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    args = ["--builtin", "medquad", "--data-root", str(tmp_path), "--out", "corpus", "--chunk-by", "tokens"]
    done = ebmeval("corpus", "ingest", *args, "--chunk-size", "10", "--chunk-overlap", "0", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "3 read, 2 kept, 4 chunks, 1 duplicate ids" in " ".join(done.stderr.split())  # the console is stderr
    ids = [json.loads(line)["id"] for line in (tmp_path / "corpus" / "documents.jsonl").read_text().splitlines()]
    assert ids == ["c/1#0", "c/1#1", "c/1#2", "c/2#0"]
    built = ebmeval("index", "build", "corpus", "--out", "ix", cwd=tmp_path, timeout=300)
    assert built.returncode == 0, built.stderr


@needs_data
@pytest.mark.slow
@pytest.mark.parametrize(("name", "kept"), [("medquad", 15775), ("pubmed-abstracts", 7748)])
def test_real_builtin_corpora_with_duplicate_ids_build_an_index(name: str, kept: int, tmp_path: Path) -> None:
    from ebmeval.rag import build_index, ingest_builtin

    stats = ingest_builtin(name, DATA, tmp_path / "corpus")
    assert stats.documents_kept == kept and stats.duplicate_ids > 0
    assert build_index(tmp_path / "corpus", tmp_path / "ix", "bm25").corpus.n_documents == kept
