"""The retriever protocol, the base class of persistable retrievers, and their registry."""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, Self, runtime_checkable

import numpy as np
import numpy.typing as npt

from ..._util.errors import ConfigError, DataError
from ..._util.options import check_options as typed_options
from ..._util.registry import Registry
from ...tasks import Document, RetrievedDocument

if TYPE_CHECKING:
    from ._dense import Encoder, EncoderInfo


class IndexMismatchError(DataError):
    """An index does not match the corpus or encoder it is loaded with, or its own files."""


@runtime_checkable
class Retriever(Protocol):
    """Anything that ranks documents for queries."""

    def retrieve(self, queries: list[str], k: int) -> list[list[RetrievedDocument]]:
        """The top ``k`` documents for each query, best first (rank 1), fewer when fewer match."""


def index_text(document: Document) -> str:
    """The text a retriever indexes for ``document``: the title (when known), a newline, then the text."""
    return f"{document.title}\n{document.text}" if document.title else document.text


def ranked_results(
    documents: Sequence[Document], indices: npt.NDArray[np.integer[Any]], scores: npt.NDArray[np.floating[Any]]
) -> list[RetrievedDocument]:
    """Retrieved documents for one query from parallel arrays of corpus positions and scores (best first)."""
    return [
        RetrievedDocument(document=documents[int(i)], score=float(s), rank=rank)
        for rank, (i, s) in enumerate(zip(indices.tolist(), scores.tolist(), strict=True), start=1)
    ]


class IndexedRetriever(ABC):
    """A retriever over a fixed corpus whose index can be saved as plain arrays and loaded back."""

    documents: Sequence[Document]
    """The indexed corpus, in index order."""

    @classmethod
    @abstractmethod
    def build(cls, *args: Any, **params: Any) -> Self:
        """Index ``documents`` (the first argument) in memory; ``params`` are the retriever's options."""

    @classmethod
    def build_on_disk(cls, *args: Any, **params: Any) -> Self:
        """Index ``documents`` (first argument) writing the arrays into ``folder`` (second); returns the retriever.

        The default builds in memory and saves; retrievers whose index outgrows memory
        (``bm25``, ``dense``) override it to stream.
        """
        documents, folder = args
        built = cls.build(documents, **params)
        built.save(folder)
        return built

    @classmethod
    def disk_options(cls) -> Callable[..., Any]:
        """The callable whose keyword-only parameters are this retriever's options when built on disk."""
        return cls.build_on_disk if "build_on_disk" in vars(cls) else cls.build

    @classmethod
    def reports_progress(cls) -> bool:
        """Whether its disk build takes ``progress``, a ``(done, total)`` callback of the documents encoded."""
        return "progress" in inspect.signature(cls.disk_options()).parameters

    @abstractmethod
    def params(self) -> dict[str, Any]:
        """The build parameters, JSON-serialisable; ``load`` receives them back."""

    @abstractmethod
    def save(self, folder: Path) -> None:
        """Write the index arrays (``.npy``, plus small JSON files) into ``folder``; not the documents."""

    @classmethod
    @abstractmethod
    def load(
        cls,
        folder: Path,
        documents: Sequence[Document],
        params: dict[str, Any],
        *,
        encoder: Encoder | None = None,
    ) -> Self:
        """Open an index written by :meth:`save`, memory-mapping its arrays.

        ``encoder`` replaces the encoder recorded in ``params`` (dense indexes); it must
        be the same model, or loading is refused.
        """

    @abstractmethod
    def retrieve(self, queries: list[str], k: int) -> list[list[RetrievedDocument]]:
        """The top ``k`` documents for each query, best first."""

    def encoders(self) -> list[EncoderInfo]:
        """The text encoders this index depends on (none for lexical indexes)."""
        return []

    def report(self) -> dict[str, Any]:
        """What building measured, recorded in the manifest (none by default)."""
        return {}


retrievers: Registry[type[IndexedRetriever]] = Registry("retriever")
"""Built-in and user retrievers by namespaced id (``bm25``, ``dense/minilm``, ``hybrid`` …)."""


def retriever(name: str) -> Callable[[type[IndexedRetriever]], type[IndexedRetriever]]:
    """Register an :class:`IndexedRetriever` subclass under ``name``."""
    return retrievers.register(name)


def check_options(name: str, build: Callable[..., Any], options: dict[str, Any]) -> dict[str, Any]:
    """``options`` read and checked by the types of ``build``'s keyword-only parameters.

    Raises :class:`ConfigError` for an option ``build`` does not take or a value of the wrong type
    (command-line text is read by the declared type, see :mod:`ebmeval._util.options`).
    """
    accepted = [p for p, spec in inspect.signature(build).parameters.items() if spec.kind == spec.KEYWORD_ONLY]
    for key in options:
        if key not in accepted:
            raise ConfigError(
                f"retriever.{key}", f"retriever '{name}' takes no such option (options: {', '.join(accepted)})"
            )
    return typed_options(build, options, kind="retriever", name=name, prefix="retriever")


def get_retriever(name: str, documents: Sequence[Document], **options: Any) -> IndexedRetriever:
    """Build the registered retriever ``name`` over ``documents`` in memory.

    Raises ``UnknownNameError`` for an unknown name and :class:`ConfigError` for an
    option the retriever does not take.
    """
    cls = retrievers.get(name)
    return cls.build(documents, **check_options(name, cls.build, options))
