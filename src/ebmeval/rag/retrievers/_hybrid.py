"""Hybrid retrieval (several retrievers fused) and multi-query retrieval."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from ..._util.errors import ConfigError
from ...tasks import Document, RetrievedDocument
from ..fusion import Fusion, FusionMethod, Normalization, fusion
from ._base import IndexedRetriever, Retriever, check_options, retriever, retrievers

if TYPE_CHECKING:
    from ._dense import Encoder, EncoderInfo

DEFAULT_COMPONENTS: tuple[tuple[str, dict[str, Any]], ...] = (("bm25", {}), ("dense/minilm", {}))

_FUSION_SETTINGS = ("fusion", "rrf_k", "weights", "normalization", "depth")
"""The fusion parameters an index records beside its components (the keyword options of the constructor)."""


def _folder(position: int, name: str) -> str:
    return f"{position}-{name.replace('/', '-')}"


def _component(name: str) -> type[IndexedRetriever]:
    """The registered retriever ``name``, as a hybrid's component (another hybrid is refused)."""
    if name == "hybrid":
        raise ConfigError("components", "a hybrid retriever cannot contain another hybrid retriever")
    return retrievers.get(name)


@retriever("hybrid")
class HybridRetriever(IndexedRetriever):
    """Several retrievers over one corpus, each returning ``depth`` candidates, fused into one list.

    ``fusion="rrf"``: reciprocal rank fusion, ``Σ_i w_i / (rrf_k + rank_i(d))``;
    ``fusion="weighted"``: ``Σ_i w_i · norm_i(d)`` over normalised scores (see
    :mod:`ebmeval.rag.fusion`). The default pairs ``bm25`` with ``dense/minilm``.
    """

    def __init__(
        self,
        components: Sequence[tuple[str, IndexedRetriever]],
        documents: Sequence[Document],
        *,
        fusion: FusionMethod = "rrf",
        rrf_k: int = 60,
        weights: Sequence[float] | None = None,
        normalization: Normalization = "minmax",
        depth: int = 100,
    ) -> None:
        if not components:
            raise ConfigError("components", "a hybrid retriever needs at least one component")
        if weights is not None and len(weights) != len(components):
            raise ConfigError("weights", f"{len(weights)} weights for {len(components)} components")
        self.components = list(components)
        self.documents = documents
        self.fusion: FusionMethod = fusion
        self.rrf_k = rrf_k
        self.weights = list(weights) if weights is not None else None
        self.normalization: Normalization = normalization
        self.depth = depth

    @classmethod
    def build(
        cls,
        documents: Sequence[Document],
        *,
        components: Sequence[tuple[str, dict[str, Any]]] = DEFAULT_COMPONENTS,
        fusion: FusionMethod = "rrf",
        rrf_k: int = 60,
        weights: Sequence[float] | None = None,
        normalization: Normalization = "minmax",
        depth: int = 100,
    ) -> Self:
        """Build each ``(retriever name, options)`` component over ``documents``."""
        built: list[tuple[str, IndexedRetriever]] = []
        for name, options in components:
            component = _component(name)
            built.append((name, component.build(documents, **check_options(name, component.build, options))))
        return cls(
            built, documents, fusion=fusion, rrf_k=rrf_k, weights=weights, normalization=normalization, depth=depth
        )

    @classmethod
    def build_on_disk(
        cls,
        documents: Sequence[Document],
        folder: Path,
        *,
        components: Sequence[tuple[str, dict[str, Any]]] = DEFAULT_COMPONENTS,
        fusion: FusionMethod = "rrf",
        rrf_k: int = 60,
        weights: Sequence[float] | None = None,
        normalization: Normalization = "minmax",
        depth: int = 100,
        progress: Callable[[int, int], None] | None = None,
    ) -> Self:
        """Build each component on disk (streamed where it streams) in its sub-folder ``<position>-<name>``.

        ``progress`` goes to the components that report it (the dense encoders).
        """
        built: list[tuple[str, IndexedRetriever]] = []
        for position, (name, options) in enumerate(components):
            component = _component(name)
            checked = check_options(name, component.disk_options(), options)
            if progress is not None and component.reports_progress():
                checked["progress"] = progress
            sub = folder / _folder(position, name)
            sub.mkdir(parents=True, exist_ok=True)
            built.append((name, component.build_on_disk(documents, sub, **checked)))
        return cls(
            built, documents, fusion=fusion, rrf_k=rrf_k, weights=weights, normalization=normalization, depth=depth
        )

    def report(self) -> dict[str, Any]:
        """Each component's build report, by sub-folder."""
        reports = {_folder(i, name): component.report() for i, (name, component) in enumerate(self.components)}
        return {folder: found for folder, found in reports.items() if found}

    def params(self) -> dict[str, Any]:
        """Fusion settings and each component's parameters."""
        components = [[name, component.params()] for name, component in self.components]
        return {"components": components, **{key: getattr(self, key) for key in _FUSION_SETTINGS}}

    def encoders(self) -> list[EncoderInfo]:
        """Encoders of the dense components."""
        return [info for _, component in self.components for info in component.encoders()]

    def retrieve(self, queries: list[str], k: int) -> list[list[RetrievedDocument]]:
        """Fuse each component's top ``max(k, depth)`` into the top ``k``."""
        depth = max(k, self.depth)
        per_component = [component.retrieve(queries, depth) for _, component in self.components]
        fuse = fusion(self.fusion, rrf_k=self.rrf_k, weights=self.weights, normalization=self.normalization, limit=k)
        return [fuse([lists[q] for lists in per_component]) for q in range(len(queries))]

    def save(self, folder: Path) -> None:
        """Each component's arrays in a sub-folder ``<position>-<name>``."""
        for position, (name, component) in enumerate(self.components):
            sub = folder / _folder(position, name)
            sub.mkdir(parents=True, exist_ok=True)
            component.save(sub)

    @classmethod
    def load(
        cls,
        folder: Path,
        documents: Sequence[Document],
        params: dict[str, Any],
        *,
        encoder: Encoder | None = None,
    ) -> Self:
        """Open every component from its sub-folder."""
        loaded: list[tuple[str, IndexedRetriever]] = []
        for position, (name, component_params) in enumerate(params["components"]):
            sub = folder / _folder(position, name)
            loaded.append((name, retrievers.get(name).load(sub, documents, component_params, encoder=encoder)))
        options = {key: params[key] for key in _FUSION_SETTINGS}
        return cls(loaded, documents, **options)


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
