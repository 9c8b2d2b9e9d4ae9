"""Samples and the documents that ground them."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Document(BaseModel):
    """A passage of evidence: an abstract, an article, a snippet, a chunk."""

    model_config = ConfigDict(frozen=True)

    id: str
    """Stable identifier (PMID, PMCID, chunk id …)."""
    text: str
    """The passage."""
    title: str | None = None
    """Title of the source, when known."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Anything else worth keeping (year, section, source corpus …)."""


class Sample(BaseModel):
    """One evaluation item."""

    model_config = ConfigDict(frozen=True)

    id: str
    """Unique within its dataset; the run store keys results by it."""
    input: str
    """The question or instruction."""
    target: str | list[str] = ""
    """Gold answer: option letters for multiple choice, text for generation."""
    choices: dict[str, str] | None = None
    """Answer options by letter, in display order."""
    documents: list[Document] = Field(default_factory=list)
    """Context the item is grounded in (abstracts, article, primary studies)."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Labels for breakdowns and scoring (skill, source dataset, essential answers …)."""

    @property
    def targets(self) -> list[str]:
        """``target`` as a list."""
        return [self.target] if isinstance(self.target, str) else list(self.target)

    @property
    def data_issue(self) -> str | None:
        """What is wrong with this item's key, when its dataset flags it (``metadata["data_issue"]``).

        Summaries that include the item name it in their notes (:meth:`data_issue_note`).
        """
        issue = self.metadata.get("data_issue")
        return str(issue) if issue else None

    def data_issue_note(self) -> str | None:
        """``sample ID: ISSUE`` for a flagged item, else ``None``."""
        return f"sample {self.id}: {self.data_issue}" if self.data_issue else None


class ParsedAnswer(BaseModel):
    """An answer extracted from model output, or the record that none could be."""

    model_config = ConfigDict(frozen=True)

    value: Any = None
    """The answer in the task's form (a letter, a set of letters, a label, text)."""
    parsed: bool = True
    """False when nothing usable was found; the raw output is kept alongside."""
    method: str = ""
    """How it was found (e.g. ``answer-line``, ``json``, ``logprobs``), for audits."""

    @classmethod
    def unparsed(cls, method: str = "") -> ParsedAnswer:
        """The marker for output that yielded no answer."""
        return cls(value=None, parsed=False, method=method)


class RetrievedDocument(BaseModel):
    """A document returned by a retriever for one query, with its score and rank."""

    model_config = ConfigDict(frozen=True)

    document: Document
    score: float
    rank: int
    """1-based position in the final ranked list."""
    gold: bool | None = None
    """Whether the document is one of the sample's gold documents, when known."""
