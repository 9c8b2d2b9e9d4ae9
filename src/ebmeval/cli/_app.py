"""The ``ebmeval`` command: a thin layer over the public API, one module per concern."""

from __future__ import annotations

import importlib

from ._common import app, resume_command
from ._factuality import factuality_app
from ._synthesis import synthesis_app

COMMAND_MODULES = (
    "_run",
    "_results",
    "_view",
    "_reproduce",
    "_serve",
    "_annotate",
    "_rag",
    "_judging",
    "_engine",
    "_store",
)
"""Modules whose commands are registered on import, in the order ``ebmeval --help`` lists them."""

for _module in COMMAND_MODULES:
    importlib.import_module(f"{__package__}.{_module}")
app.add_typer(synthesis_app, name="synthesis")
app.add_typer(factuality_app, name="factuality")

__all__ = ["app", "resume_command"]
