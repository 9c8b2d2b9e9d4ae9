"""Presets: a paper's protocol as named, versioned conditions plus the builders of its tables."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._util.errors import UsageError
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
        inputs: The preset's options (``Preset.options``) the condition takes, each as the task
            option of the same name: the folder of the retrieval index a RAG condition answers
            over, a file of the user's summaries …
    """

    name: str
    task: str
    task_args: Mapping[str, Any] = field(default_factory=dict)
    generate: Mapping[str, Any] = field(default_factory=dict)
    scorer_args: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    about: str = ""
    default: bool = True
    inputs: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()


@dataclass(frozen=True)
class PresetOption:
    """An input of the user's own that a preset takes, given as ``--preset-arg KEY=VALUE``.

    Attributes:
        about: What it is, shown by ``--list``.
        required: Whether a condition that takes it (``Condition.inputs``) cannot run without it.
        tables: Read by the table builders (``Reproduction.options``: a study of human scores, the
            judges of a sweep), not given to any condition.
    """

    about: str
    required: bool = False
    tables: bool = False


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
            such as a file of human labels or a retrieval index); the conditions that name a key
            in their ``inputs`` take its value as a task option.
    """

    name: str
    version: str
    paper: str
    covers: tuple[str, ...]
    limits: tuple[str, ...]
    conditions: tuple[Condition, ...]
    tables: tuple[TableBuilder, ...]
    rows: Mapping[str, str] = field(default_factory=dict)
    options: Mapping[str, PresetOption] = field(default_factory=dict)

    def __post_init__(self) -> None:
        taken = {key for condition in self.conditions for key in condition.inputs}
        for_conditions = {key for key, option in self.options.items() if not option.tables}
        if taken != for_conditions:
            undeclared, unused = sorted(taken - for_conditions), sorted(for_conditions - taken)
            raise ValueError(
                f"preset '{self.name}': conditions take undeclared options {undeclared}, no condition takes {unused}"
            )
        for condition in self.conditions:
            if not set(condition.requires) <= set(condition.inputs):
                raise ValueError(
                    f"preset '{self.name}': condition '{condition.name}' requires an option it does not take"
                )

    def default_conditions(self, given: Mapping[str, Any]) -> list[Condition]:
        """The conditions run when none is named: the default ones whose optional requirements were given.

        A condition that requires an optional option the user did not give is left out (its
        table cells stay empty, and the table says which option adds it); one that requires a
        required option stays, so :meth:`check_options` names the missing ``--preset-arg``.
        """
        return [
            c
            for c in self.conditions
            if c.default and all(key in given or self.options[key].required for key in c.requires)
        ]

    def condition(self, name: str) -> Condition:
        """The condition called ``name``; an unknown name is a ``UsageError``."""
        for condition in self.conditions:
            if condition.name == name:
                return condition
        known = ", ".join(c.name for c in self.conditions)
        raise UsageError(f"preset '{self.name}' has no condition '{name}' (conditions: {known})")

    def check_options(self, given: Mapping[str, Any], conditions: Iterable[Condition]) -> None:
        """Refuse an option the preset does not take, or the lack of a required one that one of ``conditions`` takes."""
        unknown = sorted(set(given) - set(self.options))
        if unknown:
            takes = ", ".join(self.options) or "none"
            raise UsageError(f"preset '{self.name}' takes no --preset-arg '{unknown[0]}' (its options: {takes})")
        chosen = list(conditions)
        for key in given:
            if not self.options[key].tables and not any(key in c.inputs for c in chosen):
                takers = ", ".join(c.name for c in self.conditions if key in c.inputs)
                needs = sorted({k for c in self.conditions if key in c.inputs for k in c.requires if k not in given})
                hint = f": {takers} also need " + " ".join(f"--preset-arg {k}=…" for k in needs) if needs else ""
                raise UsageError(f"--preset-arg {key} is taken by no condition that runs (it goes to {takers}){hint}")
        for condition in chosen:
            needed = [k for k in condition.inputs if k in condition.requires or self.options[k].required]
            missing = [k for k in needed if k not in given]
            if missing:
                wanted = " ".join(f"--preset-arg {key}=…" for key in missing)
                about = "; ".join(self.options[key].about for key in missing)
                raise UsageError(f"condition '{condition.name}' of preset '{self.name}' needs {wanted} ({about})")


preset_registry: Registry[Preset] = Registry("preset")
"""Presets by name; a module registers one with :func:`register_preset`."""


def register_preset(preset: Preset) -> Preset:
    """Register ``preset`` under its name (a module in ``ebmeval.reproduce.presets`` calls this on import)."""
    names = [c.name for c in preset.conditions]
    if len(set(names)) != len(names):
        raise ValueError(f"preset '{preset.name}' names a condition twice: {names}")
    return preset_registry.register(preset.name)(preset)
