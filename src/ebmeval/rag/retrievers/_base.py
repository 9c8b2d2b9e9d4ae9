"""The retriever protocol, the base class of persistable retrievers and of their options, and their registry."""

from __future__ import annotations

import copy
import inspect
import typing
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, Self, TypeVar, runtime_checkable

import numpy as np
import numpy.typing as npt

from ..._util.errors import ConfigError, DataError
from ..._util.options import read_option
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


ProgressFn = Callable[[int, int], None]
"""Called with (documents encoded so far, total)."""


_T = TypeVar("_T")


def setting(default: _T, *, recorded: bool = True, omit_default: bool = False, disk_only: bool = False) -> _T:
    """A field of :class:`RetrieverOptions` with its default and how an index records it.

    ``recorded=False``: the setting changes how an index is built (device, batch size, memory) but
    not the index, so :meth:`RetrieverOptions.params` leaves it out. ``omit_default=True``:
    recorded only when not ``default`` (a setting added later, so indexes built before it keep
    their parameters and identity). ``disk_only=True``: only a disk build applies it, so an
    in-memory build refuses any other value than ``default`` (see :meth:`RetrieverOptions.in_memory`).
    """
    return field(default=default, metadata={"recorded": recorded, "omit_default": omit_default, "disk_only": disk_only})


@dataclass(frozen=True)
class RetrieverOptions:
    """A retriever's build settings, declared once as the fields of a frozen dataclass.

    A subclass checks its values in ``__post_init__``; :meth:`params` is what an index records
    and :meth:`from_params` reads it back; :meth:`read` takes options by name, typed by the fields
    (``--option KEY=VALUE`` text included).
    """

    def params(self) -> dict[str, Any]:
        """The recorded fields by name, in declaration order (see :func:`setting`), copied from the options."""
        return {
            spec.name: copy.deepcopy(getattr(self, spec.name))
            for spec in fields(self)
            if spec.metadata.get("recorded", True)
            and not (spec.metadata.get("omit_default") and getattr(self, spec.name) == spec.default)
        }

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> Self:
        """The options an index recorded as ``params`` (unrecorded settings take their defaults; other keys ignored)."""
        recorded = [spec.name for spec in fields(cls) if spec.metadata.get("recorded", True)]
        return cls(**{name: params[name] for name in recorded if name in params})

    @classmethod
    def read(cls, retriever: str, options: Mapping[str, Any]) -> Self:
        """``options`` of the retriever named ``retriever``, each read and checked by its field's type.

        Raises :class:`ConfigError` naming ``retriever.<option>`` for an option that is not a field
        (listing the fields) or a value of the wrong type (command-line text is read by the
        declared type, see :mod:`ebmeval._util.options`), and naming the class when its field
        annotations cannot be resolved.
        """
        names = [spec.name for spec in fields(cls)]
        for key in options:
            if key not in names:
                raise ConfigError(
                    f"retriever.{key}", f"retriever '{retriever}' takes no such option (options: {', '.join(names)})"
                )
        types = cls._field_types(retriever) if options else {}
        return cls(**{key: read_option(types[key], value, f"retriever.{key}") for key, value in options.items()})

    @classmethod
    def _field_types(cls, retriever: str) -> dict[str, Any]:
        """The fields' annotations resolved; :class:`ConfigError` naming the class where one cannot be."""
        try:
            return typing.get_type_hints(cls)
        except (NameError, TypeError) as exc:
            raise ConfigError(
                "retriever",
                f"retriever '{retriever}': the field types of {cls.__module__}.{cls.__qualname__} cannot be "
                f"resolved ({exc}); import the types its annotations name at run time, not under TYPE_CHECKING",
            ) from None

    def in_memory(self) -> Self:
        """These options, for a build in memory: refused where a disk-only setting is not its default.

        Raises :class:`ConfigError` naming ``retriever.<option>``: an in-memory build would ignore it.
        """
        for spec in fields(self):
            value = getattr(self, spec.name)
            if spec.metadata.get("disk_only") and value != spec.default:
                raise ConfigError(
                    f"retriever.{spec.name}",
                    f"applies to disk builds (build_index / ebmeval index build) only, not to a build in memory "
                    f"(given {value!r})",
                )
        return self


OptionsT = TypeVar("OptionsT", bound=RetrieverOptions)


@dataclass(frozen=True)
class SavedIndex(Generic[OptionsT]):
    """An index on disk as :meth:`IndexedRetriever.load` opens it."""

    folder: Path
    """The folder :meth:`IndexedRetriever.save` (or a disk build) wrote."""
    documents: Sequence[Document]
    """The indexed corpus, in index order."""
    params: dict[str, Any]
    """The parameters the index recorded (its options, plus what the retriever records itself)."""
    options: OptionsT
    """``params`` read into the retriever's options."""
    encoder: Encoder | None
    """An encoder replacing the recorded one (dense indexes; it must be the same model)."""


class IndexedRetriever(ABC, Generic[OptionsT]):
    """A retriever over a fixed corpus whose index can be saved as plain arrays and loaded back.

    Its build settings are one :class:`RetrieverOptions` dataclass, the type parameter of its base
    (``class BM25Retriever(IndexedRetriever[BM25Options])``); what it built with is :attr:`options`,
    whose recorded fields are the index's :meth:`params`.
    """

    documents: Sequence[Document]
    """The indexed corpus, in index order."""
    options: OptionsT
    """The settings the index was built with (as it applies them: what :meth:`params` records)."""
    _options_type: ClassVar[type[Any]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for base in getattr(cls, "__orig_bases__", ()):
            if typing.get_origin(base) is IndexedRetriever and isinstance(typing.get_args(base)[0], type):
                cls._options_type = typing.get_args(base)[0]

    @classmethod
    def options_type(cls) -> type[OptionsT]:
        """The dataclass of this retriever's build settings: ``O`` of its base ``IndexedRetriever[O]``."""
        return cls._options_type

    @classmethod
    @abstractmethod
    def build(
        cls, documents: Sequence[Document], options: OptionsT | None = None, *, progress: ProgressFn | None = None
    ) -> Self:
        """Index ``documents`` in memory with ``options`` (default: the defaults of :meth:`options_type`).

        ``progress(done, total)`` is told of the documents encoded, by retrievers that encode.
        """

    @classmethod
    def build_on_disk(
        cls, documents: Sequence[Document], folder: Path, options: OptionsT, *, progress: ProgressFn | None = None
    ) -> Self:
        """Index ``documents`` with ``options`` writing the arrays into ``folder``; returns the retriever.

        The default builds in memory and saves; retrievers whose index outgrows memory
        (``bm25``, ``dense``) override it to stream.
        """
        built = cls.build(documents, options, progress=progress)
        built.save(folder)
        return built

    def params(self) -> dict[str, Any]:
        """The build parameters, JSON-serialisable; :meth:`load` receives them back."""
        return self.options.params()

    @abstractmethod
    def save(self, folder: Path) -> None:
        """Write the index arrays (``.npy``, plus small JSON files) into ``folder``; not the documents."""

    @classmethod
    def load(
        cls,
        folder: Path,
        documents: Sequence[Document],
        params: dict[str, Any],
        *,
        encoder: Encoder | None = None,
    ) -> Self:
        """Open an index written by :meth:`save` or :meth:`build_on_disk`, memory-mapping its arrays.

        ``params`` (what :meth:`params` returned) are read into :meth:`options_type`; ``encoder``
        replaces the encoder recorded in ``params`` (dense indexes); it must be the same model,
        or loading is refused.
        """
        options = cls.options_type().from_params(params)
        return cls.open(SavedIndex(folder, documents, params, options, encoder))

    @classmethod
    @abstractmethod
    def open(cls, saved: SavedIndex[OptionsT]) -> Self:
        """The retriever over the index ``saved`` (what :meth:`load` leaves to each retriever)."""

    @abstractmethod
    def retrieve(self, queries: list[str], k: int) -> list[list[RetrievedDocument]]:
        """The top ``k`` documents for each query, best first."""

    def encoders(self) -> list[EncoderInfo]:
        """The text encoders this index depends on (none for lexical indexes)."""
        return []

    def report(self) -> dict[str, Any]:
        """What building measured, recorded in the manifest (none by default)."""
        return {}


retrievers: Registry[type[IndexedRetriever[Any]]] = Registry("retriever")
"""Built-in and user retrievers by namespaced id (``bm25``, ``dense/minilm``, ``hybrid`` …)."""


_RETRIEVER_API = (
    "A retriever is an IndexedRetriever[Options] subclass, Options a frozen dataclass derived from "
    "RetrieverOptions (its settings), with build(documents, options, *, progress), save(folder), "
    "open(saved) and retrieve(queries, k); keyword options in build and an own load() are the older API. "
    "See docs/extending.md."
)


def retriever(name: str) -> Callable[[type[IndexedRetriever[Any]]], type[IndexedRetriever[Any]]]:
    """Register an :class:`IndexedRetriever` subclass under ``name`` (refused while abstract or without options)."""
    add = retrievers.register(name)

    def register(cls: type[IndexedRetriever[Any]]) -> type[IndexedRetriever[Any]]:
        missing = sorted(getattr(cls, "__abstractmethods__", ()))
        if not hasattr(cls, "_options_type"):
            missing.append("options_type (subclass IndexedRetriever[YourOptions])")
        if "options" not in inspect.signature(cls.build).parameters:
            missing.append("build(documents, options, *, progress)")
        if missing:
            raise TypeError(
                f"retriever '{name}' ({cls.__qualname__}) does not implement {', '.join(missing)}. {_RETRIEVER_API}"
            )
        return add(cls)

    return register


def get_retriever(name: str, documents: Sequence[Document], **options: Any) -> IndexedRetriever[Any]:
    """Build the registered retriever ``name`` over ``documents`` in memory.

    Raises ``UnknownNameError`` for an unknown name and :class:`ConfigError` for an
    option the retriever does not take (see :meth:`RetrieverOptions.read`) or that only a disk
    build applies (see :meth:`RetrieverOptions.in_memory`).
    """
    cls = retrievers.get(name)
    return cls.build(documents, cls.options_type().read(name, options).in_memory())
