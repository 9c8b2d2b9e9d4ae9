"""Keeping credentials out of the server's logs.

Invitation links carry their token in the path (``/join/<token>``), and uvicorn writes request
paths to its access log and, at the ``trace`` level, whole ASGI scopes (paths and cookies) to its
error log. :class:`RedactTokens` rewrites every record before it is written: the segment after
``/join/`` and any run of 32 or more URL-safe characters (tokens, session ids and CSRF tokens are
43 or 64 of them) become ``[redacted]``.
"""

from __future__ import annotations

import logging
import re
from typing import Any

REDACTED = "[redacted]"
_SECRET_RE = re.compile(r"(?<=/join/)[^\s\"'?#/]+|[A-Za-z0-9_\-]{32,}")
LOGGERS = ("uvicorn", "uvicorn.error", "uvicorn.access", "uvicorn.asgi", "ebmeval")
"""Loggers whose records (and whose handlers' records) are redacted."""


def redact(text: str) -> str:
    """``text`` with join-link tokens and every long URL-safe run replaced by ``[redacted]``."""
    return _SECRET_RE.sub(REDACTED, text)


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, bytes):
        return redact(value.decode("latin-1"))
    if isinstance(value, int | float | type(None)):
        return value
    return redact(repr(value))


class RedactTokens(logging.Filter):
    """A logging filter that redacts the message and every argument of a record (it drops nothing).

    Arguments keep their positions, so formatters that unpack them (uvicorn's access formatter)
    still work; non-string arguments other than numbers are replaced by their redacted ``repr``.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = redact(str(record.msg))
        if isinstance(record.args, tuple):
            record.args = tuple(_clean(a) for a in record.args)
        elif isinstance(record.args, dict):
            record.args = {k: _clean(v) for k, v in record.args.items()}
        if record.exc_info and record.exc_info[1] is not None:
            # Formatters render the traceback from exc_info; render it here, redacted, instead.
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        return True


def install_log_redaction() -> None:
    """Add :class:`RedactTokens` to the server's loggers and to their handlers and the root's (idempotent)."""
    loggers = [logging.getLogger(name) for name in LOGGERS] + [logging.getLogger()]
    for logger in loggers:
        for target in (logger, *logger.handlers):
            if not any(isinstance(f, RedactTokens) for f in target.filters):
                target.addFilter(RedactTokens())


def redacted_log_config() -> dict[str, Any]:
    """Uvicorn's default logging configuration with :class:`RedactTokens` on every handler."""
    import copy

    from uvicorn.config import LOGGING_CONFIG

    config: dict[str, Any] = copy.deepcopy(LOGGING_CONFIG)
    config.setdefault("filters", {})["redact_tokens"] = {"()": RedactTokens}
    for handler in config["handlers"].values():
        handler.setdefault("filters", []).append("redact_tokens")
    return config
