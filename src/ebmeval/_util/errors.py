"""Error types shared across the package.

Hierarchy::

    EbmevalError
    ├── UsageError                  a user mistake: the CLI prints it and exits 2
    │   ├── ConfigError             a bad config field or value
    │   ├── DataError               a malformed dataset line or file
    │   ├── UnknownNameError        an unknown task, model, scorer… ("did you mean")
    │   └── MissingDependencyError  an optional dependency is not installed
    └── ModelError                  a model call failed for good (after any retries)
        └── ModelUnavailableError   the server cannot be reached or the model is unknown
"""

from __future__ import annotations

from collections.abc import Iterable
from difflib import get_close_matches
from pathlib import Path


class EbmevalError(Exception):
    """Base class of every error raised on purpose by ebmeval."""


class UsageError(EbmevalError):
    """A mistake in what the user asked for; shown without a traceback."""


class ConfigError(UsageError):
    """A configuration field has a bad value."""

    def __init__(self, field: str, message: str, *, source: str | None = None) -> None:
        where = f"{source}: " if source else ""
        super().__init__(f"{where}field '{field}': {message}")
        self.field = field
        self.source = source


def require_at_least_one(field: str, value: int) -> None:
    """Raise :class:`ConfigError` on ``field`` unless ``value`` is at least 1."""
    if value < 1:
        raise ConfigError(field, f"must be at least 1, not {value}")


class DataError(UsageError):
    """A dataset file or one of its lines cannot be read."""

    def __init__(
        self,
        path: str | Path,
        message: str,
        *,
        line: int | None = None,
        field: str | None = None,
        value: object = None,
        row: int | None = None,
    ) -> None:
        where = f"{path}:{line}" if line is not None else f"{path}: row {row}" if row is not None else str(path)
        what = f" field '{field}':" if field else ""
        shown = f" (value: {_short(value)})" if value is not None else ""
        super().__init__(f"{where}:{what} {message}{shown}")
        self.path = str(path)
        self.line = line
        self.row = row
        self.field = field


class UnknownNameError(UsageError):
    """A registry lookup missed; the message suggests close names."""

    def __init__(self, kind: str, name: str, known: Iterable[str]) -> None:
        known = sorted(known)
        close = get_close_matches(name, known, n=3, cutoff=0.5)
        hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        listing = ", ".join(known[:30]) + (" …" if len(known) > 30 else "")
        super().__init__(f"Unknown {kind} '{name}'.{hint} Known: {listing or 'none'}.")
        self.kind = kind
        self.name = name


class MissingDependencyError(UsageError):
    """An optional dependency needed for a feature is not installed."""

    def __init__(self, feature: str, package: str, extra: str) -> None:
        super().__init__(
            f"{feature} needs the optional package '{package}'. Install it with: pip install 'ebmeval[{extra}]'"
        )
        self.package = package
        self.extra = extra


class EndpointError(UsageError):
    """A model endpoint failed the pre-flight request sent before any sample: nothing was run."""


class ModelError(EbmevalError):
    """A model call failed and will not be retried further."""


class ModelUnavailableError(ModelError):
    """The model server cannot be reached, or does not serve the named model."""


def _short(value: object, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
