"""ebmeval: evaluate large language models on the work of evidence-based medicine.

The names below are imported on first use, so ``import ebmeval`` (and ``ebmeval --help``) load
neither numpy nor scipy until something needs them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .models import GenerateConfig, Model, get_model
    from .runner import RunConfig, arun, load_config, rescore, run, summarize
    from .store import RunStore
    from .tasks import Document, Sample, Score, Task, create_scorer, create_task, scorer, task

__version__ = "0.1.0"

_HOMES = {
    "models": ("GenerateConfig", "Model", "get_model"),
    "runner": ("RunConfig", "arun", "load_config", "rescore", "run", "summarize"),
    "store": ("RunStore",),
    "tasks": ("Document", "Sample", "Score", "Task", "create_scorer", "create_task", "scorer", "task"),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> Any:
    """A public name, imported from its subpackage on first use (PEP 562)."""
    module = _HOME_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'ebmeval' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOME_OF})


__all__ = [
    "Document",
    "GenerateConfig",
    "Model",
    "RunConfig",
    "RunStore",
    "Sample",
    "Score",
    "Task",
    "__version__",
    "create_scorer",
    "create_task",
    "get_model",
    "load_config",
    "rescore",
    "arun",
    "run",
    "scorer",
    "summarize",
    "task",
]
