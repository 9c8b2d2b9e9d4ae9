"""A small typed name → object registry with "did you mean" lookups."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from .errors import UnknownNameError
from .plugins import KEYS, ensure_plugins

T = TypeVar("T")


class Registry(Generic[T]):
    """Named components of one kind (tasks, model providers, scorers…).

    Entries are registered by decorator; ``get`` raises ``UnknownNameError``
    listing close matches when a name is unknown. Registries of a kind in
    :data:`~ebmeval._util.plugins.KEYS` import the built-in and installed plugin modules
    of that kind when a lookup misses or the names are listed.
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}
        self._plugins = KEYS.get(kind)

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator registering ``obj`` under ``name``; duplicate names are an error."""

        def add(obj: T) -> T:
            if name in self._items and self._items[name] is not obj:
                raise ValueError(f"{self.kind} '{name}' is registered twice")
            self._items[name] = obj
            return obj

        return add

    def get(self, name: str) -> T:
        """The entry registered as ``name``."""
        if name not in self._items:
            self._load()
        try:
            return self._items[name]
        except KeyError:
            raise UnknownNameError(self.kind, name, self._items) from None

    def __contains__(self, name: object) -> bool:
        if name not in self._items:
            self._load()
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        self._load()
        return iter(sorted(self._items))

    def __len__(self) -> int:
        self._load()
        return len(self._items)

    def _load(self) -> None:
        if self._plugins is not None:
            ensure_plugins(self._plugins)
