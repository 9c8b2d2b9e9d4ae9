"""Components from modules named by the ``ebmeval`` entry-point group, imported when a registry needs them.

A package adds tasks, scorers, model providers or retrievers by declaring the modules that
register them::

    [project.entry-points.ebmeval]
    tasks = "my_package.tasks"
    scorers = "my_package.scorers"

The keys are :data:`KEYS`. The built-in components come the same way, from
:data:`BUILTIN`: nothing is imported until a registry lookup misses or a listing is asked
for, so the low-level registries import no high-level package.
"""

from __future__ import annotations

import importlib
import warnings
from importlib.metadata import entry_points

GROUP = "ebmeval"
"""The entry-point group."""

KEYS = {
    "task": "tasks",
    "scorer": "scorers",
    "model provider": "providers",
    "retriever": "retrievers",
    "preset": "presets",
}
"""Registry kind → the entry-point name whose modules register components of that kind."""

BUILTIN: dict[str, tuple[str, ...]] = {
    "tasks": ("ebmeval.builtin_tasks",),
    "scorers": ("ebmeval.scorers", "ebmeval.builtin_tasks"),
    "providers": ("ebmeval.models.providers",),
    "retrievers": ("ebmeval.rag.retrievers",),
    "presets": ("ebmeval.reproduce.presets",),
}
"""The modules that register the built-in components, by entry-point name."""

_loaded: set[str] = set()


def ensure_plugins(key: str) -> bool:
    """Import, once per process, the built-in and installed modules registered under ``key``.

    Returns whether this call imported anything (so a failed lookup is worth repeating).
    A plugin module that fails to import is reported with a warning and skipped.
    """
    if key in _loaded:
        return False
    _loaded.add(key)  # before importing: a module being imported may look names up itself
    for module in BUILTIN.get(key, ()):
        importlib.import_module(module)
    for point in entry_points(group=GROUP, name=key):
        try:
            point.load()
        except Exception as exc:  # noqa: BLE001  (one broken plugin must not take down the others)
            warnings.warn(
                f"ebmeval plugin {point.value!r} ({GROUP}:{key}) failed to import: {exc}", RuntimeWarning, stacklevel=2
            )
    return True
