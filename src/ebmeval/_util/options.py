"""Options of tasks, scorers and other factories, checked against the factory's signature.

Values typed on the command line arrive as :class:`OptionText` and are read by the type the
factory declares: a ``str`` option keeps the text as it is (``system_prompt=no`` is the text
"no", ``# Role: …`` stays whole), numbers and booleans are parsed and checked, lists and
mappings are read as JSON or YAML flow (``[judge, judge2]``; where text is admitted too, a
scalar such as ``off`` stays text), and ``null`` means ``None`` only where the option admits
``None`` and no text. Values from YAML files keep their YAML type and are checked the same way,
except that a boolean is never taken as a number.
"""

from __future__ import annotations

import inspect
import json
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import TypeAdapter, ValidationError

from .errors import ConfigError


class OptionText(str):
    """A value as typed on the command line, to be read by the option's declared type."""


def _args(annotation: Any) -> tuple[Any, ...]:
    return typing.get_args(annotation)


def _is_union(annotation: Any) -> bool:
    return typing.get_origin(annotation) in (typing.Union, types.UnionType)


def _members(annotation: Any) -> list[Any]:
    return list(_args(annotation)) if _is_union(annotation) else [annotation]


def _accepts_text(annotation: Any) -> bool:
    for member in _members(annotation):
        if member is str or member is Any:
            return True
        if typing.get_origin(member) is typing.Literal and all(isinstance(a, str) for a in _args(member)):
            return True
    return False


def _is_container(annotation: Any) -> bool:
    for member in _members(annotation):
        origin = typing.get_origin(member) or member
        if inspect.isclass(origin) and issubclass(origin, list | tuple | dict | set | frozenset):
            return True
        if origin in (typing.Sequence, typing.Mapping) or str(origin).startswith("<class 'collections.abc."):
            return True
    return False


def _is_number(annotation: Any) -> bool:
    return any(member in (int, float) for member in _members(annotation)) and bool not in _members(annotation)


def type_name(annotation: Any) -> str:
    """A short readable name of a type annotation (``int``, ``'direct' | 'cot'``, ``list[str] | None``)."""
    if annotation is inspect.Parameter.empty or annotation is Any:
        return "any"
    if typing.get_origin(annotation) is typing.Literal:
        return " | ".join(repr(a) for a in _args(annotation))
    if _is_union(annotation):
        return " | ".join(type_name(a) for a in _args(annotation))
    if annotation is type(None):
        return "None"
    if _args(annotation):
        origin = typing.get_origin(annotation)
        name = getattr(origin, "__name__", str(origin))
        return f"{name}[{', '.join(type_name(a) for a in _args(annotation))}]"
    return getattr(annotation, "__name__", str(annotation))


def read_option(annotation: Any, value: Any, field: str) -> Any:
    """``value`` read and checked as ``annotation``; ``ConfigError`` naming ``field`` otherwise."""
    if annotation is inspect.Parameter.empty or annotation is Any:
        return str(value) if isinstance(value, OptionText) else value
    if isinstance(value, OptionText):
        text = str(value)
        if _accepts_text(annotation) and not _is_container(annotation):
            value = text
        elif text.strip().lower() in ("null", "none", "") and type(None) in _members(annotation):
            return None
        elif _is_container(annotation):
            value = _structured(text, field)
            if _accepts_text(annotation) and value is not None and not isinstance(value, list | dict | str):
                value = text  # `off`, `5`: text, where text is one of the choices, not a YAML scalar
        else:
            value = text
    elif isinstance(value, bool) and _is_number(annotation):
        raise ConfigError(field, f"expected {type_name(annotation)}, got the boolean {value!r}")
    if isinstance(value, float) and value != value and _is_number(annotation):
        raise ConfigError(field, f"expected {type_name(annotation)}, got NaN")
    try:
        return TypeAdapter(annotation).validate_python(value)
    except ValidationError as exc:
        raise ConfigError(field, f"expected {type_name(annotation)}, got {value!r}") from exc


def _structured(text: str, field: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        pass
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(field, f"cannot read {text!r} as a list or mapping ({exc.__class__.__name__})") from None


def signature_options(factory: Callable[..., Any]) -> dict[str, inspect.Parameter]:
    """The keyword options of ``factory`` with their annotations resolved (``*args``/``**kwargs`` left out)."""
    target = factory.__init__ if inspect.isclass(factory) else factory
    try:
        hints = typing.get_type_hints(target)
    except (NameError, TypeError):
        hints = {}
    params = {}
    for name, param in inspect.signature(factory).parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        params[name] = param.replace(annotation=hints.get(name, param.annotation))
    return params


def check_options(
    factory: Callable[..., Any], values: Mapping[str, Any], *, kind: str, name: str, prefix: str
) -> dict[str, Any]:
    """``values`` read and checked against the signature of ``factory`` (see the module docstring).

    Raises ``ConfigError`` naming ``<prefix>.<option>`` for an option the factory does not take
    (listing those it takes) and for a value of the wrong type.
    """
    params = signature_options(factory)
    checked: dict[str, Any] = {}
    for key, value in values.items():
        if key not in params:
            options = ", ".join(params) or "none"
            raise ConfigError(f"{prefix}.{key}", f"{kind} '{name}' takes no such option (options: {options})")
        checked[key] = read_option(params[key].annotation, value, f"{prefix}.{key}")
    return checked


_ROLE = re.compile(r":(?:class|func|mod|meth|attr|data|exc|obj):`(~?)([^`]+)`")
_LITERAL = re.compile(r"``([^`]+)``")


def plain(text: str) -> str:
    r"""Docstring text as plain text: ``\`\`x\`\``` → x, ``:func:`~a.b.f``` → f, ``:class:`a.B``` → a.B."""
    text = _ROLE.sub(lambda m: m[2].rsplit(".", 1)[-1] if m[1] else m[2], text)
    return _LITERAL.sub(lambda m: m[1], text)


def docstring_summary(obj: object) -> str:
    """The first line of ``obj``'s docstring, as plain text."""
    lines = (getattr(obj, "__doc__", None) or "").strip().splitlines()
    return plain(lines[0]) if lines else ""


def option_docs(factory: Callable[..., Any]) -> dict[str, str]:
    """Each option's description from the ``Args:`` section of the factory's (Google-style) docstring, as plain text."""
    return section_docs(factory, ("Args:", "Arguments:", "Options:"))


_ENTRY = re.compile(r"[\w@.*/-]+")


def section_docs(obj: object, headers: tuple[str, ...]) -> dict[str, str]:
    """``name: text`` entries of the first docstring section titled one of ``headers`` (``Metrics:``), as plain text.

    An entry starts at four spaces' indent; deeper lines continue it. Names are identifiers or
    metric names (``f1@roberta``, ``rubric/judge``) and patterns of them (``*_lenient``, ``f1@*``).
    """
    docs: dict[str, str] = {}
    current: str | None = None
    inside = False
    for line in (inspect.getdoc(obj) or "").splitlines():
        stripped = line.strip()
        if stripped in headers:
            inside = True
            continue
        if inside and line and not line.startswith(" "):
            break
        if not inside or not stripped:
            continue
        name, sep, text = stripped.partition(":")
        if sep and line.startswith("    ") and not line.startswith("     ") and _ENTRY.fullmatch(name):
            current = name
            docs[name] = text.strip()
        elif current is not None:
            docs[current] = f"{docs[current]} {stripped}"
    return {name: plain(text) for name, text in docs.items()}
