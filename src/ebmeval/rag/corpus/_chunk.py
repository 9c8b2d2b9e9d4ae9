"""Chunking documents into passages by paragraph, section or token windows."""

from __future__ import annotations

import bisect
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ...tasks import Document

_BLOCK = re.compile(r"\S(?:.*?\S)?(?=\n\s*\n|\s*\Z)", re.DOTALL)
_HEADING = re.compile(r"([A-Z][A-Z0-9 ,/&()\-]{1,60}):\s+")
_TOKEN = re.compile(r"\S+")


class Chunking(BaseModel):
    """How to cut documents into chunks.

    ``by="paragraph"``: one chunk per paragraph (blank-line separated). ``by="section"``:
    consecutive paragraphs under the same heading (``"METHODS: …"``) form one chunk.
    ``by="tokens"``: windows of ``size`` whitespace tokens over the whole text, each
    starting ``size - overlap`` tokens after the previous one. In every mode a unit longer
    than ``size`` tokens is cut into such windows, so no chunk exceeds ``size`` tokens.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    by: Literal["paragraph", "section", "tokens"] = "tokens"
    """Unit of chunking."""
    size: int = Field(default=200, gt=0)
    """Most whitespace tokens in a chunk."""
    overlap: int = Field(default=50, ge=0)
    """Tokens shared by consecutive windows of one unit."""

    @model_validator(mode="after")
    def _overlap_below_size(self) -> Chunking:
        if self.overlap >= self.size:
            raise ValueError(f"overlap ({self.overlap}) must be smaller than size ({self.size})")
        return self


def _blocks(text: str) -> list[tuple[str | None, int, int, int]]:
    """``(section label, block start, body start, end)`` of each paragraph; the body excludes the heading."""
    blocks: list[tuple[str | None, int, int, int]] = []
    label: str | None = None
    for block in _BLOCK.finditer(text):
        start = block.start()
        heading = _HEADING.match(text, start, block.end())
        if heading:
            label = heading.group(1).strip()
            start = heading.end()
        if start < block.end():
            blocks.append((label, block.start(), start, block.end()))
    return blocks


def paragraph_spans(text: str) -> list[tuple[str | None, int, int]]:
    """``(section label, start, end)`` character spans of the paragraphs of ``text``.

    A paragraph opening with an upper-case label and a colon (``"RESULTS: …"``, the way
    structured abstracts are stored) starts a section; its span excludes the label.
    Unlabelled paragraphs inherit the label before them (``None`` at the start).
    """
    return [(label, start, end) for label, _, start, end in _blocks(text)]


def _windows(text: str, start: int, end: int, size: int, overlap: int) -> list[tuple[int, int]]:
    tokens = [(m.start(), m.end()) for m in _TOKEN.finditer(text, start, end)]
    if not tokens:
        return []
    step = size - overlap
    spans: list[tuple[int, int]] = []
    first = 0
    while True:
        last = min(first + size, len(tokens)) - 1
        spans.append((tokens[first][0], tokens[last][1]))
        if last == len(tokens) - 1:
            return spans
        first += step


def chunk_document(document: Document, chunking: Chunking) -> list[Document]:
    """Cut ``document`` into chunks that keep its title and metadata.

    Chunk ids are ``"<document id>#<n>"`` (n from 0). Each chunk's metadata adds
    ``source_id`` (the document id, e.g. the PMID), ``chunk`` (n), ``section`` (when
    known) and ``start``/``end`` (character offsets into the document text).
    """
    text = document.text
    blocks = _blocks(text)
    paragraphs = [(label, start, end) for label, _, start, end in blocks]
    units: list[tuple[str | None, int, int]]
    if chunking.by == "tokens":
        units = [(None, 0, len(text))]
    elif chunking.by == "paragraph":
        units = paragraphs
    else:
        units = []
        for label, start, end in paragraphs:
            if units and units[-1][0] == label and label is not None:
                units[-1] = (label, units[-1][1], end)
            else:
                units.append((label, start, end))
    starts = [block_start for _, block_start, _, _ in blocks]
    chunks: list[Document] = []
    for label, start, end in units:
        for begin, stop in _windows(text, start, end, chunking.size, chunking.overlap):
            section = label
            if chunking.by == "tokens" and paragraphs:
                # the window's section is the one of the paragraph it starts in
                at = bisect.bisect_right(starts, begin) - 1
                section = paragraphs[max(at, 0)][0]
            metadata: dict[str, Any] = {
                **document.metadata,
                "source_id": document.id,
                "chunk": len(chunks),
                "start": begin,
                "end": stop,
            }
            if section is not None:
                metadata["section"] = section
            chunks.append(
                Document(
                    id=f"{document.id}#{len(chunks)}", text=text[begin:stop], title=document.title, metadata=metadata
                )
            )
    return chunks
