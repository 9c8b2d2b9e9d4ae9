"""What every command module shares: the Typer app, common options and KEY=VALUE parsing."""

from __future__ import annotations

import shlex
from typing import Annotated, Any

import typer

from ._display import console

app = typer.Typer(
    name="ebmeval",
    help="Evaluate large language models on the work of evidence-based medicine.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

StoreOption = Annotated[str, typer.Option("--store", help="Path of the SQLite run store.")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON on stdout.")]

__all__ = ["JsonOption", "StoreOption", "app", "console", "key_values", "resume_command"]


def key_values(items: list[str] | None, flag: str) -> dict[str, Any]:
    """``["k=v", …]`` → ``{k: yaml(v)}``, so numbers and booleans keep their types."""
    import yaml

    from .._util.errors import ConfigError

    parsed: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(flag, f"expected KEY=VALUE, got {item!r}")
        parsed[key] = yaml.safe_load(value) if value else ""
    return parsed


def resume_command(argv: list[str]) -> str:
    """The command line that repeats this one, as console markup (``items=[a,b]`` stays literal)."""
    from rich.markup import escape

    return escape("ebmeval " + " ".join(shlex.quote(a) for a in argv))
