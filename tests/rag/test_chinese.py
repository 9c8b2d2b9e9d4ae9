"""Chinese retrieval: BM25 over segmented words, the character splitter, stemmer and stop words off from the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.helpers.cli import ebmeval

from ebmeval.rag import get_retriever
from ebmeval.rag.corpus import Chunking, chunk_document
from ebmeval.tasks import Document

pytest.importorskip("bm25s")
pytest.importorskip("rjieba")

ZH = [
    Document(id="metformin", text="二甲双胍是治疗2型糖尿病的一线药物，可以降低血糖。"),
    Document(id="aspirin", text="阿司匹林可以降低心血管事件的风险。"),
    Document(id="flu", text="老年人每年应该接种流感疫苗。"),
    Document(id="statin", text="他汀类药物降低低密度脂蛋白胆固醇。"),
]


def test_chinese_bm25_finds_a_word_inside_a_longer_run_of_characters() -> None:
    plain = get_retriever("bm25", ZH, stemmer=None, stopwords=None)
    assert plain.retrieve(["二甲双胍"], 2) == [[]]  # whole clauses are the only "words"
    segmented = get_retriever("bm25", ZH, tokenizer="zh", stemmer=None, stopwords=None)
    ((first, *_),) = segmented.retrieve(["二甲双胍"], 2)
    assert first.document.id == "metformin"
    ((first, *_),) = segmented.retrieve(["流感疫苗有什么用？"], 2)
    assert first.document.id == "flu"


def test_chinese_bm25_on_disk_equals_in_memory(tmp_path: Path) -> None:
    from ebmeval.rag.retrievers import BM25Options, BM25Retriever

    memory = BM25Retriever.build(ZH, BM25Options(tokenizer="zh", stemmer=None, stopwords=None))
    disk = BM25Retriever.build_on_disk(ZH, tmp_path / "ix", BM25Options(tokenizer="zh", stemmer=None, stopwords=None))
    assert disk.params() == memory.params() and disk.params()["tokenizer"] == "zh"
    for query in ("二甲双胍", "降低血糖", "疫苗"):
        assert disk.retrieve([query], 3) == memory.retrieve([query], 3)


def test_the_default_tokenizer_keeps_the_earlier_index_identity() -> None:
    assert "tokenizer" not in get_retriever("bm25", ZH).params()


@pytest.mark.parametrize(
    "text",
    [
        "二甲双胍是治疗2型糖尿病的一线药物。" * 350,  # ~6,000 characters, sentence ends only
        "二甲双胍" * 1500,  # no separator at all
        ("Metformin is first-line therapy for type 2 diabetes. It lowers glucose.\n\n" * 80)
        + "x" * 2500,  # paragraphs, sentences and one 2,500-character word
    ],
    ids=["chinese", "chinese-unbroken", "english"],
)
def test_character_splitter_keeps_every_chunk_within_the_limit(text: str) -> None:
    chunks = chunk_document(Document(id="d", text=text), Chunking(by="characters", size=100, overlap=20))
    assert len(chunks) > 1 and all(0 < len(c.text) <= 100 for c in chunks)
    assert all(text[c.metadata["start"] : c.metadata["end"]] == c.text for c in chunks)
    covered = {i for c in chunks for i in range(c.metadata["start"], c.metadata["end"])}
    assert all(i in covered for i, char in enumerate(text) if not char.isspace())


def test_character_splitter_cuts_at_sentence_ends_before_characters() -> None:
    text = "第一句话很短。" + "第二句话也不长。" * 3
    chunks = chunk_document(Document(id="d", text=text), Chunking(by="characters", size=20, overlap=0))
    assert all(c.text.endswith("。") for c in chunks)
    assert "".join(c.text for c in chunks) == text


def test_chinese_mcq_file_end_to_end_through_the_command_line(tmp_path: Path) -> None:
    long_text = "".join(d.text for d in ZH) * 100  # one 6,000-character document
    (tmp_path / "docs.jsonl").write_text(
        json.dumps({"id": "book", "text": long_text}, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    chunking = ["--chunk-by", "characters", "--chunk-size", "100", "--chunk-overlap", "0"]
    done = ebmeval("corpus", "ingest", "docs.jsonl", "--out", "corpus", *chunking, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    chunks = [json.loads(line) for line in (tmp_path / "corpus" / "documents.jsonl").read_text().splitlines()]
    assert len(chunks) >= 60 and all(len(c["text"]) <= 100 for c in chunks)
    options = ["--option", "tokenizer=zh", "--option", "stemmer=None", "--option", "stopwords=None"]
    done = ebmeval("index", "build", "corpus", "--out", "ix", *options, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    manifest = json.loads((tmp_path / "ix" / "manifest.json").read_text())
    assert manifest["params"]["stemmer"] is None and manifest["params"]["stopwords"] is None
    found = ebmeval("search", "二甲双胍", "--index", "ix", "--json", cwd=tmp_path)
    assert "二甲双胍" in json.loads(found.stdout)[0]["document"]["text"]
    question = {
        "id": "q1",
        "question": "哪种药物是2型糖尿病的一线治疗？",
        "options": ["二甲双胍", "阿司匹林"],
        "answer": "A",
    }
    (tmp_path / "zh.jsonl").write_text(json.dumps(question, ensure_ascii=False) + "\n", encoding="utf-8")
    args = ["--task-arg", "path=zh.jsonl", "--task-arg", "retrieval=ix", "--task-arg", "k=3"]
    args += ["--model", "baseline/random", "--store", "r.sqlite", "--json"]
    done = ebmeval("run", "--task", "mcq-file", *args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    run_id = json.loads(done.stdout)["run_id"]
    shown = json.loads(ebmeval("show", run_id, "--store", "r.sqlite", "--sample", "q1", "--json", cwd=tmp_path).stdout)
    assert len(shown["retrieved"]) == 3 and "糖尿病" in shown["retrieved"][0]["text"]
    (call,) = [step for step in shown["steps"] if step["step"] != "retrieve"]
    assert '<document number="3" id="book#' in call["messages"][-1]["content"]
