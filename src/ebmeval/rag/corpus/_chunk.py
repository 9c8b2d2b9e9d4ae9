"""Chunking documents into passages by paragraph, section, token windows or characters (any language)."""

from __future__ import annotations

import bisect
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ...tasks import Document

_BLOCK = re.compile(r"\S(?:.*?\S)?(?=\n\s*\n|\s*\Z)", re.DOTALL)
_HEADING = re.compile(r"([A-Z][A-Z0-9 ,/&()\-]{1,60}):\s+")
_TOKEN = re.compile(r"\S+")
SEPARATORS = ("\n\n", "\n", "。", "！", "？", "；", ". ", "! ", "? ", "; ", "，", "、", ", ", " ", "")
"""Where ``by="characters"`` cuts, tried in order: paragraphs, lines, sentence ends (Chinese and
Latin), clauses, words, and at last any character."""


class Chunking(BaseModel):
    """How to cut documents into chunks.

    ``by="paragraph"``: one chunk per paragraph (blank-line separated). ``by="section"``:
    consecutive paragraphs under the same heading (``"METHODS: …"``) form one chunk.
    ``by="tokens"``: windows of ``size`` whitespace tokens over the whole text, each
    starting ``size - overlap`` tokens after the previous one. In these modes a unit longer
    than ``size`` tokens is cut into such windows, so no chunk exceeds ``size`` tokens.

    ``by="characters"`` (MRAG's recursive character splitter, for any language, Chinese
    included): ``size`` and ``overlap`` count characters. The text is cut at the first of
    ``SEPARATORS`` it contains, pieces still longer than ``size`` at the next ones, and the
    pieces are packed in order into chunks of at most ``size`` characters, each new chunk
    repeating up to ``overlap`` characters of whole pieces from the end of the previous one.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    by: Literal["paragraph", "section", "tokens", "characters"] = "tokens"
    """Unit of chunking."""
    size: int = Field(default=200, gt=0)
    """Most whitespace tokens (characters with ``by="characters"``) in a chunk."""
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


def _pieces(text: str, start: int, end: int, size: int, separators: tuple[str, ...]) -> list[tuple[int, int]]:
    """``[start, end)`` cut at the first separator it contains, longer pieces at the next ones (each ≤ ``size``)."""
    if end - start <= size:
        return [(start, end)]
    at = next(i for i, sep in enumerate(separators) if sep == "" or text.find(sep, start, end) >= 0)
    sep, rest = separators[at], separators[at + 1 :]
    if not sep:
        return [(i, min(i + size, end)) for i in range(start, end, size)]
    pieces: list[tuple[int, int]] = []
    begin = start
    while begin < end:
        found = text.find(sep, begin, end)
        stop = end if found < 0 else found + len(sep)  # the separator stays with the piece before it
        pieces.extend(_pieces(text, begin, stop, size, rest))
        begin = stop
    return pieces


def _trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _character_chunks(text: str, start: int, end: int, size: int, overlap: int) -> list[tuple[int, int]]:
    """Spans of at most ``size`` characters packed from :func:`_pieces`, overlapping by whole pieces."""
    spans: list[tuple[int, int]] = []
    current: list[tuple[int, int]] = []
    for piece in _pieces(text, start, end, size, SEPARATORS):
        if current and piece[1] - current[0][0] > size:
            spans.append((current[0][0], current[-1][1]))
            while current and (current[-1][1] - current[0][0] > overlap or piece[1] - current[0][0] > size):
                current.pop(0)
        current.append(piece)
    if current:
        spans.append((current[0][0], current[-1][1]))
    trimmed = (_trimmed(text, begin, stop) for begin, stop in spans)
    return [(begin, stop) for begin, stop in trimmed if stop > begin]


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
    if chunking.by in ("tokens", "characters"):
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
        cut = _character_chunks if chunking.by == "characters" else _windows
        for begin, stop in cut(text, start, end, chunking.size, chunking.overlap):
            section = label
            if chunking.by in ("tokens", "characters") and paragraphs:
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
