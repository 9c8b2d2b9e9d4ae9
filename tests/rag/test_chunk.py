from __future__ import annotations

import pytest
from pydantic import ValidationError

from ebmeval.rag.corpus import Chunking, chunk_document, paragraph_spans
from ebmeval.tasks import Document

ABSTRACT = Document(
    id="123",
    title="A trial",
    text=(
        "BACKGROUND: Why it matters.\n\nMETHODS: We randomised 40 adults.\n\nMore methods here.\n\nRESULTS: It worked."
    ),
    metadata={"year": 2020},
)


def test_paragraph_spans_carry_section_labels() -> None:
    spans = paragraph_spans(ABSTRACT.text)
    assert [(label, ABSTRACT.text[a:b]) for label, a, b in spans] == [
        ("BACKGROUND", "Why it matters."),
        ("METHODS", "We randomised 40 adults."),
        ("METHODS", "More methods here."),
        ("RESULTS", "It worked."),
    ]


def test_chunk_by_paragraph_keeps_source_fields() -> None:
    chunks = chunk_document(ABSTRACT, Chunking(by="paragraph", size=50, overlap=0))
    assert [c.id for c in chunks] == ["123#0", "123#1", "123#2", "123#3"]
    assert [c.text for c in chunks][1] == "We randomised 40 adults."
    first = chunks[0]
    assert first.title == "A trial"
    assert first.metadata == {
        "year": 2020,
        "source_id": "123",
        "chunk": 0,
        "start": 12,
        "end": 27,
        "section": "BACKGROUND",
    }
    assert all(ABSTRACT.text[c.metadata["start"] : c.metadata["end"]] == c.text for c in chunks)


def test_chunk_by_section_merges_paragraphs_of_one_section() -> None:
    chunks = chunk_document(ABSTRACT, Chunking(by="section", size=50, overlap=0))
    assert [(c.metadata["section"], c.text) for c in chunks] == [
        ("BACKGROUND", "Why it matters."),
        ("METHODS", "We randomised 40 adults.\n\nMore methods here."),
        ("RESULTS", "It worked."),
    ]


def test_chunk_by_tokens_with_overlap() -> None:
    doc = Document(id="x", text=" ".join(f"w{i}" for i in range(10)))
    chunks = chunk_document(doc, Chunking(by="tokens", size=4, overlap=2))
    assert [c.text for c in chunks] == ["w0 w1 w2 w3", "w2 w3 w4 w5", "w4 w5 w6 w7", "w6 w7 w8 w9"]
    assert "section" not in chunks[0].metadata


def test_token_windows_take_the_section_they_start_in() -> None:
    # 15 tokens; the second and fourth windows open on a heading, the third inside METHODS
    chunks = chunk_document(ABSTRACT, Chunking(by="tokens", size=4, overlap=0))
    assert [c.text.split()[0] for c in chunks] == ["BACKGROUND:", "METHODS:", "adults.", "RESULTS:"]
    assert [c.metadata.get("section") for c in chunks] == ["BACKGROUND", "METHODS", "METHODS", "RESULTS"]


def test_long_paragraph_is_windowed() -> None:
    doc = Document(id="x", text="a b c d e f g")
    assert [c.text for c in chunk_document(doc, Chunking(by="paragraph", size=3, overlap=1))] == [
        "a b c",
        "c d e",
        "e f g",
    ]


def test_overlap_must_be_below_size() -> None:
    with pytest.raises(ValidationError, match="overlap"):
        Chunking(size=5, overlap=5)
