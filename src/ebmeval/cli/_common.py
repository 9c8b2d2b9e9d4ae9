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
OptionalStoreOption = Annotated[str | None, typer.Option("--store", help="Path of the SQLite run store.")]
"""``--store`` where no value means another default (the command group's store, the config's)."""
JsonOption = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON on stdout.")]
QuietOption = Annotated[bool, typer.Option("--quiet", help="Show no progress bar (stderr).")]

# The options of a run, shared by every command that starts runs (run, reproduce).
ModelArgOption = Annotated[list[str] | None, typer.Option("--model-arg", help="Provider option KEY=VALUE.")]
RoleOption = Annotated[list[str] | None, typer.Option("--role", help="Model for a role, ROLE=SPEC (e.g. judge=local).")]
RoleArgOption = Annotated[
    list[str] | None, typer.Option("--role-arg", help="Provider option of a role's model, ROLE:KEY=VALUE.")
]
ScorerArgOption = Annotated[
    list[str] | None, typer.Option("--scorer-arg", help="Option of the task's scorer KEY=VALUE, or SCORER:KEY=VALUE.")
]
TaskArgOption = Annotated[list[str] | None, typer.Option("--task-arg", help="Task option KEY=VALUE (repeatable).")]
ConcurrencyOption = Annotated[int | None, typer.Option(help="Samples in flight at once.")]
LimitOption = Annotated[int | None, typer.Option(help="Answer only N samples (a fixed pseudo-random subset).")]
SeedOption = Annotated[int | None, typer.Option(help="Seed of every random choice.")]
NoCacheOption = Annotated[bool, typer.Option("--no-cache", help="Do not reuse cached model responses.")]
TaskArgument = Annotated[str, typer.Argument(help="Task name (see `ebmeval list tasks`).")]

__all__ = [
    "ConcurrencyOption",
    "JsonOption",
    "LimitOption",
    "ModelArgOption",
    "NoCacheOption",
    "OptionalStoreOption",
    "QuietOption",
    "RoleArgOption",
    "RoleOption",
    "ScorerArgOption",
    "SeedOption",
    "StoreOption",
    "TaskArgOption",
    "TaskArgument",
    "app",
    "console",
    "key_values",
    "resume_command",
]


def key_values(items: list[str] | None, flag: str) -> dict[str, Any]:
    """``["k=v", …]`` → ``{k: OptionText(v)}``: each value is read later by the option's declared type.

    Only the first ``=`` separates, so ``system_prompt=a=b`` is the text ``a=b``.
    """
    from .._util.errors import ConfigError
    from .._util.options import OptionText

    parsed: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(flag, f"expected KEY=VALUE, got {item!r}")
        parsed[key] = OptionText(value)
    return parsed


def scorer_options(items: list[str] | None) -> dict[str, dict[str, Any]]:
    """``--scorer-arg SCORER:KEY=VALUE`` → ``{SCORER: {KEY: VALUE}}``; a bare ``KEY=VALUE`` goes under ``""``.

    ``""`` stands for the task's only scorer (``ebmeval.tasks.with_scorer_args``). A ``:``
    before the first ``=`` names the scorer, so a value may hold ``:``.
    """
    found: dict[str, dict[str, Any]] = {}
    for item in items or []:
        head, sep, _value = item.partition("=")
        name, colon, _key = head.partition(":")
        scorer, option = (name, item[len(name) + 1 :]) if sep and colon else ("", item)
        found.setdefault(scorer, {}).update(key_values([option], "--scorer-arg"))
    return found


def role_models(roles: list[str] | None, role_args: list[str] | None) -> dict[str, dict[str, Any]]:
    """``--role judge=SPEC`` and ``--role-arg judge:timeout=60`` → ``{judge: {model: SPEC, args: {…}}}``.

    A spec is taken as written (it is never parsed as YAML: ``scripted:Overall: 4`` is a spec).
    """
    from .._util.errors import ConfigError

    found: dict[str, dict[str, Any]] = {}
    for item in roles or []:
        role, sep, spec = item.partition("=")
        if not sep or not role or not spec:
            raise ConfigError("--role", f"expected ROLE=SPEC, got {item!r}")
        found[role] = {"model": spec, "args": {}}
    for item in role_args or []:
        role, sep, rest = item.partition(":")
        if not sep or role not in found:
            raise ConfigError("--role-arg", f"expected ROLE:KEY=VALUE for a role given by --role, got {item!r}")
        found[role]["args"].update(key_values([rest], "--role-arg"))
    return found


def resume_command(argv: list[str]) -> str:
    """The command line that repeats this one, as console markup (``items=[a,b]`` stays literal)."""
    from rich.markup import escape

    return escape("ebmeval " + " ".join(shlex.quote(a) for a in argv))
