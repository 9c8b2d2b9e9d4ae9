"""Tasks defined in a user's Python file: ``--task path/to/file.py@name``."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from .._util.errors import ConfigError
from .._util.hashing import stable_hash
from .._util.plugins import ensure_plugins


def task_file(spec: str) -> str:
    """The task name in ``spec``, after importing its file when ``spec`` is ``FILE.py@NAME``.

    Importing the file runs its ``@task`` decorators, which register the tasks it defines.
    Any other ``spec`` is returned unchanged. The file is imported once per process (as a
    module named after a hash of its resolved path).

    Raises:
        ConfigError: The file does not exist, cannot be imported, or defines no task ``NAME``.
    """
    path_text, sep, name = spec.rpartition("@")
    if not sep or not path_text.endswith(".py"):
        return spec
    from ._task import task_registry

    path = Path(path_text).expanduser().resolve()
    if not path.is_file():
        raise ConfigError("task", f"no task file {path_text!r} (from {spec!r})")
    if not name:
        raise ConfigError("task", f"name the task after '@': {path_text}@NAME")
    module_name = f"_ebmeval_task_file_{stable_hash(str(path), 12)}"
    if module_name not in sys.modules:
        for kind in ("tasks", "scorers"):  # first, so a name the file takes twice fails here, not later
            ensure_plugins(kind)
        loader = importlib.util.spec_from_file_location(module_name, path)
        if loader is None or loader.loader is None:
            raise ConfigError("task", f"cannot import {path_text!r} as Python")
        module = importlib.util.module_from_spec(loader)
        sys.modules[module_name] = module
        try:
            loader.loader.exec_module(module)
        except Exception as exc:
            del sys.modules[module_name]
            raise ConfigError("task", f"importing {path_text!r} failed: {type(exc).__name__}: {exc}") from exc
    if name not in task_registry:
        known = ", ".join(n for n in task_registry if _module(task_registry.get(n)) == module_name) or "none"
        raise ConfigError("task", f"{path_text!r} defines no task {name!r} (tasks it defines: {known})")
    return name


def _module(factory: object) -> str | None:
    return getattr(factory, "__module__", None)
