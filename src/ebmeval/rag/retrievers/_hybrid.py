"""Hybrid retrieval (several retrievers fused) and multi-query retrieval."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from ..._util.errors import ConfigError
from ...tasks import Document, RetrievedDocument
from ..fusion import Fusion, FusionMethod, Normalization, fusion
from ._base import (
    IndexedRetriever,
    ProgressFn,
    Retriever,
    RetrieverOptions,
    SavedIndex,
    retriever,
    retrievers,
)

if TYPE_CHECKING:
    from ._dense import EncoderInfo

DEFAULT_COMPONENTS: tuple[tuple[str, dict[str, Any]], ...] = (("bm25", {}), ("dense/minilm", {}))


def _folder(position: int, name: str) -> str:
    return f"{position}-{name.replace('/', '-')}"


def _component(name: str) -> type[IndexedRetriever[Any]]:
    """The registered retriever ``name``, as a hybrid's component (another hybrid is refused)."""
    if name == "hybrid":
        raise ConfigError("components", "a hybrid retriever cannot contain another hybrid retriever")
    return retrievers.get(name)


@dataclass(frozen=True)
class HybridOptions(RetrieverOptions):
    """Settings of a ``hybrid`` index: its components and how their lists are fused."""

    components: Sequence[tuple[str, dict[str, Any]]] = DEFAULT_COMPONENTS
    """``(retriever name, options)`` of each component; once built, its recorded parameters instead of the options."""
    fusion: FusionMethod = "rrf"
    """``rrf`` (reciprocal rank fusion) or ``weighted`` (normalised scores)."""
    rrf_k: int = 60
    """The constant of reciprocal rank fusion."""
    weights: list[float] | None = None
    """One weight per component (``None``: equal)."""
    normalization: Normalization = "minmax"
    """How ``weighted`` fusion normalises each component's scores."""
    depth: int = 100
    """Candidates each component returns before fusion."""

    def __post_init__(self) -> None:
        if not self.components:
            raise ConfigError("components", "a hybrid retriever needs at least one component")
        if self.weights is not None and len(self.weights) != len(self.components):
            raise ConfigError("weights", f"{len(self.weights)} weights for {len(self.components)} components")
        object.__setattr__(self, "weights", None if self.weights is None else list(self.weights))
        object.__setattr__(self, "components", tuple((name, dict(options)) for name, options in self.components))

    def checked(self) -> list[tuple[str, type[IndexedRetriever[Any]], RetrieverOptions]]:
        """Each component's name, retriever class and options read by :meth:`RetrieverOptions.read`."""
        found = []
        for name, options in self.components:
            component = _component(name)
            found.append((name, component, component.options_type().read(name, options)))
        return found


@retriever("hybrid")
class HybridRetriever(IndexedRetriever[HybridOptions]):
    """Several retrievers over one corpus, each returning ``depth`` candidates, fused into one list.

    ``fusion="rrf"``: reciprocal rank fusion, ``Σ_i w_i / (rrf_k + rank_i(d))``;
    ``fusion="weighted"``: ``Σ_i w_i · norm_i(d)`` over normalised scores (see
    :mod:`ebmeval.rag.fusion`). The default pairs ``bm25`` with ``dense/minilm``.
    """

    def __init__(
        self,
        components: Sequence[tuple[str, IndexedRetriever[Any]]],
        documents: Sequence[Document],
        options: HybridOptions | None = None,
    ) -> None:
        given = options or HybridOptions()
        self.components = list(components)
        self.documents = documents
        self.options = replace(given, components=tuple((name, built.params()) for name, built in self.components))

    @classmethod
    def build(
        cls, documents: Sequence[Document], options: HybridOptions | None = None, *, progress: ProgressFn | None = None
    ) -> Self:
        """Build each component over ``documents`` in memory (``progress`` goes to each component).

        A component given a setting only disk builds apply is refused (see :meth:`RetrieverOptions.in_memory`).
        """
        options = options or HybridOptions()
        built = [
            (name, component.build(documents, checked.in_memory(), progress=progress))
            for name, component, checked in options.checked()
        ]
        return cls(built, documents, options)

    @classmethod
    def build_on_disk(
        cls, documents: Sequence[Document], folder: Path, options: HybridOptions, *, progress: ProgressFn | None = None
    ) -> Self:
        """Build each component on disk (streamed where it streams) in its sub-folder ``<position>-<name>``.

        ``progress`` goes to each component (those that encode call it).
        """
        built: list[tuple[str, IndexedRetriever[Any]]] = []
        for position, (name, component, checked) in enumerate(options.checked()):
            sub = folder / _folder(position, name)
            sub.mkdir(parents=True, exist_ok=True)
            built.append((name, component.build_on_disk(documents, sub, checked, progress=progress)))
        return cls(built, documents, options)

    def report(self) -> dict[str, Any]:
        """Each component's build report, by sub-folder."""
        reports = {_folder(i, name): component.report() for i, (name, component) in enumerate(self.components)}
        return {folder: found for folder, found in reports.items() if found}

    def params(self) -> dict[str, Any]:
        """Each component's ``[name, parameters]``, then the fusion settings (a copy the retriever does not share)."""
        params = self.options.params()
        return {**params, "components": [list(component) for component in params["components"]]}

    def encoders(self) -> list[EncoderInfo]:
        """Encoders of the dense components."""
        return [info for _, component in self.components for info in component.encoders()]

    def retrieve(self, queries: list[str], k: int) -> list[list[RetrievedDocument]]:
        """Fuse each component's top ``max(k, depth)`` into the top ``k``."""
        depth = max(k, self.options.depth)
        per_component = [component.retrieve(queries, depth) for _, component in self.components]
        options = self.options
        fuse = fusion(
            options.fusion, rrf_k=options.rrf_k, weights=options.weights, normalization=options.normalization, limit=k
        )
        return [fuse([lists[q] for lists in per_component]) for q in range(len(queries))]

    def save(self, folder: Path) -> None:
        """Each component's arrays in a sub-folder ``<position>-<name>``."""
        for position, (name, component) in enumerate(self.components):
            sub = folder / _folder(position, name)
            sub.mkdir(parents=True, exist_ok=True)
            component.save(sub)

    @classmethod
    def open(cls, saved: SavedIndex[HybridOptions]) -> Self:
        """Open every component from its sub-folder."""
        loaded: list[tuple[str, IndexedRetriever[Any]]] = []
        for position, (name, params) in enumerate(saved.options.components):
            sub = saved.folder / _folder(position, name)
            loaded.append((name, retrievers.get(name).load(sub, saved.documents, params, encoder=saved.encoder)))
        return cls(loaded, saved.documents, saved.options)


def multi_query_retrieve(
    retriever: Retriever,
    query_groups: Sequence[Sequence[str]],
    k: int,
    *,
    fuse: Fusion | None = None,
    depth: int | None = None,
) -> list[list[RetrievedDocument]]:
    """One ranked list per group of queries (e.g. one query per sub-question of an item).

    All queries go to ``retriever`` in one batch, each returning ``depth`` (default
    ``k``) documents; the lists of a group are merged by ``fuse`` (default: reciprocal
    rank fusion with k = 60) and cut to ``k``.
    """
    merge = fuse or fusion("rrf", limit=k)
    flat = [query for group in query_groups for query in group]
    found = retriever.retrieve(flat, depth or k)
    merged: list[list[RetrievedDocument]] = []
    start = 0
    for group in query_groups:
        merged.append(merge(found[start : start + len(group)])[:k])
        start += len(group)
    return merged
