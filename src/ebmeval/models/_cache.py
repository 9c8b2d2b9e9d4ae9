"""A persistent response cache in SQLite.

A key is the sha256 of the model's identity, the messages and the generation
settings that change the output (seed included), so a cached answer is only
reused for exactly the same request.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .._util import sqlite
from .._util.hashing import stable_hash
from ._types import ChatMessage, GenerateConfig, ModelOutput

_WHAT = "response cache"
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS responses ("
    " key TEXT PRIMARY KEY, model TEXT NOT NULL, output TEXT NOT NULL,"
    " created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')))"
)


def default_cache_dir() -> Path:
    """``$EBMEVAL_CACHE_DIR``, else ``$XDG_CACHE_HOME/ebmeval``, else ``~/.cache/ebmeval``."""
    if explicit := os.environ.get("EBMEVAL_CACHE_DIR"):
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ebmeval"


def cache_key(model: dict[str, Any], messages: Sequence[ChatMessage], config: GenerateConfig) -> str:
    """The cache key of one request."""
    return stable_hash(
        {
            "model": model,
            "messages": [m.model_dump() for m in messages],
            "config": config.cache_fields(),
        }
    )


class ResponseCache:
    """Model outputs by request key, shared by every run on this machine.

    Outputs are written on a thread of their own (``ebmeval._util.sqlite.BackgroundWriter``);
    until a write is committed, :meth:`get` answers from memory.
    """

    _INSERT = "INSERT OR IGNORE INTO responses (key, model, output) VALUES (?, ?, ?)"

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_cache_dir() / "responses.sqlite"
        self._lock = threading.Lock()
        self._db = sqlite.open_table(self.path, what=_WHAT, schema=_SCHEMA)
        self._in_flight: dict[str, str] = {}
        """Output JSON by key of the writes not committed yet."""
        self._writer = sqlite.BackgroundWriter(self.path, what=_WHAT, on_commit=self._committed)

    def get(self, key: str) -> ModelOutput | None:
        """The cached output for ``key``, marked ``cached``, or ``None``."""
        with self._lock:
            data = self._in_flight.get(key)
        if data is None:
            with self._lock, sqlite.translate(self.path, _WHAT, "FROM responses"):
                row = self._db.execute("SELECT output FROM responses WHERE key = ?", (key,)).fetchone()
            if row is None:
                return None
            data = row[0]
        output = ModelOutput.model_validate_json(data)
        return output.model_copy(update={"cached": True})

    def put(self, key: str, output: ModelOutput) -> None:
        """Store ``output`` under ``key`` (the first write wins)."""
        data = output.model_dump_json(exclude={"cached"})
        with self._lock:
            self._in_flight.setdefault(key, data)
        self._writer.write(self._INSERT, (key, output.model, data))

    def flush(self) -> None:
        """Wait until every output put so far is committed."""
        self._writer.flush()

    def _committed(self, batch: list[tuple[str, tuple[object, ...]]]) -> None:
        with self._lock:
            for _sql, params in batch:
                self._in_flight.pop(str(params[0]), None)

    def close(self) -> None:
        """Commit what is written and close the database."""
        try:
            self._writer.close()
        finally:
            with self._lock:
                self._db.close()
