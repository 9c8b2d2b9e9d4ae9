"""What identifies a scorer: the key of the score sets that the run store keeps apart.

A scorer's spec holds its name, its version, its arguments (those its registered factory was
called with that differ from the factory's defaults, as inspect_ai's registry tags record a
factory's arguments, and every public
attribute that describes how it scores: options, prompt templates by id and version, generation
settings; less the arguments its registration declares ``non_identity``), the prompt templates
it declares, and, for each model role it declares (by its registration,
``@scorer(NAME, roles=...)``, or a ``roles``/``role`` attribute), that model's identity and
default settings. A scorer calls no role it does not declare. Two scorers with equal specs
give the same scores; anything else is a new score set.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..models import GenerateConfig, Model
from ..prompts import PromptTemplate

_SKIP = object()


def describe_value(value: Any) -> Any:
    """``value`` as JSON-ready data for a spec, or ``_SKIP`` for objects that are not settings."""
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, enum.Enum):
        return describe_value(value.value)
    if isinstance(value, PromptTemplate):
        return value.id
    if isinstance(value, GenerateConfig):
        return value.cache_fields()
    if isinstance(value, list | tuple | frozenset | set):
        items = [describe_value(item) for item in value]
        kept = [item for item in items if item is not _SKIP]
        return sorted(kept, key=repr) if isinstance(value, set | frozenset) else kept
    if isinstance(value, Mapping):
        described = {str(k): describe_value(v) for k, v in value.items()}
        return {k: v for k, v in described.items() if v is not _SKIP}
    return _SKIP


def same_setting(value: Any, other: Any) -> bool:
    """Whether ``value`` and ``other`` are one setting (equal described forms; the same object where not settings)."""
    described = describe_value(value)
    return value is other or (described is not _SKIP and described == describe_value(other))


@dataclass(frozen=True)
class ScorerDeclaration:
    """What a registered scorer factory declares about every scorer it builds (``ebmeval.tasks.scorer``)."""

    roles: tuple[str, ...] = ()
    """The model roles its scorers may call; each role's model is part of the spec."""
    version: str | None = None
    """Bumped when the scorer's scores change for the same arguments."""
    binary: frozenset[str] = frozenset()
    """The metrics that are 0 or 1 per sample (McNemar's test in paired comparisons)."""
    non_identity: frozenset[str] = frozenset()
    """Factory arguments that do not change scores (a location of a resource, say): left out of the spec."""


@dataclass(frozen=True)
class Declared:
    """A built scorer's declaration and the arguments its factory was called with that differ from its defaults."""

    declaration: ScorerDeclaration
    arguments: Mapping[str, Any] = field(default_factory=dict)


DECLARED = "_ebmeval_declared"
"""The attribute holding a registered scorer's :class:`Declared`."""


def declare(scorer: object, declaration: ScorerDeclaration, arguments: Mapping[str, Any]) -> None:
    """Record on ``scorer`` its factory's ``declaration`` and the ``arguments`` it was built with."""
    object.__setattr__(scorer, DECLARED, Declared(declaration, dict(arguments)))


def declared(scorer: object) -> Declared | None:
    """What ``scorer``'s registered factory recorded on it, or ``None`` for a scorer built otherwise."""
    found = getattr(scorer, DECLARED, None)
    return found if isinstance(found, Declared) else None


def scorer_args(scorer: object) -> dict[str, Any]:
    """The settings of ``scorer``: its factory's arguments and its public attributes that are settings.

    Models, callables, the name and the arguments declared ``non_identity`` are left out; an
    attribute that is a setting and is named like a factory argument stands for that argument.
    """
    record = declared(scorer)
    skipped = {"name", *(record.declaration.non_identity if record else ())}
    given = record.arguments if record else {}
    found: dict[str, Any] = {}
    for key, value in [*given.items(), *vars(scorer).items()]:
        if key.startswith("_") or key in skipped:
            continue
        described = describe_value(value)
        if described is not _SKIP:
            found[key] = described
    return dict(sorted(found.items()))


def scorer_roles(scorer: object) -> list[str]:
    """The model roles ``scorer`` declares: those its registration names, its ``roles`` attribute, its ``role``.

    A scorer may call only these roles (``SampleContext.for_scorer``); each is part of its spec.
    """
    record = declared(scorer)
    roles = getattr(scorer, "roles", None)
    role = getattr(scorer, "role", None)
    found = [
        *(record.declaration.roles if record else ()),
        *(roles if isinstance(roles, list | tuple) else []),
        *([role] if isinstance(role, str) else []),
    ]
    return list(dict.fromkeys(str(r) for r in found))


def scorer_version(scorer: object) -> str:
    """The version its registration declares, else its ``version`` attribute, else ``"1"``."""
    record = declared(scorer)
    version = record.declaration.version if record else None
    return str(version if version is not None else getattr(scorer, "version", "1"))


def model_identity(model: Model | None) -> dict[str, Any] | None:
    """A model's identity and default settings, as recorded in specs."""
    if model is None:
        return None
    return {"model": model.api.describe(), "settings": model.config.cache_fields()}


def scorer_spec(scorer: object, models: Mapping[str, Model]) -> dict[str, Any]:
    """The spec of ``scorer`` when its roles are played by ``models`` (see the module docstring)."""
    templates = getattr(scorer, "templates", ())
    return {
        "name": str(getattr(scorer, "name", type(scorer).__name__)),
        "version": scorer_version(scorer),
        "args": scorer_args(scorer),
        "templates": [t.id for t in templates if isinstance(t, PromptTemplate)],
        "roles": {role: model_identity(models.get(role)) for role in scorer_roles(scorer)},
    }


def scorer_label(spec: Mapping[str, Any]) -> str:
    """A short readable name of a spec: the scorer's name, with each role's model in brackets.

    ``judge/rubric-0-5[judge=qwen2.5-coder-1.5b-instruct-q4]``; a scorer without roles is its name.
    """
    roles = spec.get("roles") or {}
    shown = []
    for role, identity in roles.items():
        name = str(((identity or {}).get("model") or {}).get("name", "?"))
        shown.append(f"{role}={name.split('/', 1)[-1]}")
    return f"{spec['name']}[{', '.join(shown)}]" if shown else str(spec["name"])
