"""Presets: a paper's protocol as named, versioned conditions plus the builders of its tables."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._util.registry import Registry

if TYPE_CHECKING:
    from ._reproduce import Reproduction
    from ._tables import TracedTable


@dataclass(frozen=True)
class Condition:
    """One experimental condition of a paper: a task with its options, run on each model the user names.

    Attributes:
        name: Short name (``full``, ``abstract`` …), unique within its preset.
        task: Registered task name.
        task_args: Task options (prompt set, context, language …).
        generate: Generation settings of the condition (``reasoning_effort`` …); the user's
            ``--model-arg`` and run settings apply on top.
        scorer_args: Options of the task's scorers by scorer name (``RunConfig.scorer_args``).
        about: What the condition is, in the paper's words.
        default: Whether it runs when no ``--condition`` is named (a condition that fits only
            some models, such as a reasoning-effort setting, runs only when named).
        inputs: Task options the user supplies (``--input NAME=VALUE``), such as the folder of
            the retrieval index a RAG condition answers over.
    """

    name: str
    task: str
    task_args: Mapping[str, Any] = field(default_factory=dict)
    generate: Mapping[str, Any] = field(default_factory=dict)
    scorer_args: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    about: str = ""
    default: bool = True
    inputs: tuple[str, ...] = ()


TableBuilder = Callable[["Reproduction"], "TracedTable"]
"""Builds one of the paper's tables from the runs of a reproduction."""


@dataclass(frozen=True)
class Preset:
    """A paper's protocol: what ``ebmeval reproduce NAME`` runs and prints.

    Attributes:
        name: Name on the command line.
        version: Version of the protocol; bump it when conditions or published numbers change.
        paper: Citation of the paper.
        covers: What the preset reproduces (the paper's tables and figures).
        limits: What it cannot reproduce, and why (non-public data, models the user must bring …).
        conditions: The conditions each named model runs under.
        tables: Builders of the paper's tables, in the paper's order.
        rows: Model spec → the row of the paper it reproduces (``baseline/random`` → "Random …").
        options: The ``--preset-arg KEY=VALUE`` keys the preset takes (inputs of the user's own,
            such as a file of human labels), each with what it means.
        configure: Builds the conditions from the user's options (a path into a task option …);
            unset, the conditions are ``conditions`` as declared. Table builders read the
            options too, as ``Reproduction.options``.
    """

    name: str
    version: str
    paper: str
    covers: tuple[str, ...]
    limits: tuple[str, ...]
    conditions: tuple[Condition, ...]
    tables: tuple[TableBuilder, ...]
    rows: Mapping[str, str] = field(default_factory=dict)
    options: Mapping[str, str] = field(default_factory=dict)
    configure: Callable[[Mapping[str, str]], Sequence[Condition]] | None = None

    def conditions_for(self, options: Mapping[str, str]) -> tuple[Condition, ...]:
        """The conditions under the user's ``options``; a key the preset does not take is a ``UsageError``."""
        unknown = sorted(set(options) - set(self.options))
        if unknown:
            from .._util.errors import UsageError

            takes = ", ".join(self.options) or "none"
            raise UsageError(f"preset '{self.name}' takes no option '{unknown[0]}' (its options: {takes})")
        return tuple(self.configure(options)) if self.configure is not None else self.conditions

    def condition(self, name: str, options: Mapping[str, str] | None = None) -> Condition:
        """The condition called ``name`` (under the user's ``options``)."""
        found = self.conditions_for(options or {})
        for condition in found:
            if condition.name == name:
                return condition
        known = ", ".join(c.name for c in found)
        from .._util.errors import UsageError

        raise UsageError(f"preset '{self.name}' has no condition '{name}' (conditions: {known})")


preset_registry: Registry[Preset] = Registry("preset")
"""Presets by name; a module registers one with :func:`register_preset`."""


def register_preset(preset: Preset) -> Preset:
    """Register ``preset`` under its name (a module in ``ebmeval.reproduce.presets`` calls this on import)."""
    names = [c.name for c in preset.conditions]
    if len(set(names)) != len(names):
        raise ValueError(f"preset '{preset.name}' names a condition twice: {names}")
    return preset_registry.register(preset.name)(preset)
