"""Durable judge steps of an arena, in their own table of the run-store file.

The arena's judge calls are not part of any run: they compare runs. Keeping them in the
``steps`` table would need a fake ``runs`` row (its foreign key), which would then show up in
``ebmeval list runs`` and in run summaries. So they live in ``arena_steps``, created on first use
with ``CREATE TABLE IF NOT EXISTS`` in the same SQLite file, keyed by (arena id, comparison key,
step). Writes are ``INSERT OR IGNORE`` in autocommit mode, like the run store's: a crash loses at
most the call in flight, and a re-run replays every finished judgement instead of repeating it.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ARENA_SCHEMA = """
CREATE TABLE IF NOT EXISTS arena_steps (
    arena_id   TEXT NOT NULL,
    comparison TEXT NOT NULL,
    step       TEXT NOT NULL,
    payload    TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (arena_id, comparison, step)
);
"""


class ArenaSteps:
    """The ``arena_steps`` table of the run store at ``path``."""

    def __init__(self, path: str | Path) -> None:
        self._lock = threading.Lock()
        self._db = sqlite3.connect(Path(path), check_same_thread=False, isolation_level=None, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(ARENA_SCHEMA)

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._db.close()

    def get(self, arena_id: str, comparison: str, step: str) -> dict[str, Any] | None:
        """The payload recorded for ``step`` of ``comparison``, if any."""
        with self._lock:
            row = self._db.execute(
                "SELECT payload FROM arena_steps WHERE arena_id = ? AND comparison = ? AND step = ?",
                (arena_id, comparison, step),
            ).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, arena_id: str, comparison: str, step: str, payload: dict[str, Any]) -> None:
        """Record ``step`` (first write wins)."""
        now = datetime.now(UTC).isoformat(timespec="milliseconds")
        with self._lock:
            self._db.execute(
                "INSERT OR IGNORE INTO arena_steps (arena_id, comparison, step, payload, created_at)"
                " VALUES (?,?,?,?,?)",
                (arena_id, comparison, step, json.dumps(payload, default=str), now),
            )

    def count(self, arena_id: str) -> int:
        """Steps recorded for the arena."""
        with self._lock:
            return int(
                self._db.execute("SELECT count(*) FROM arena_steps WHERE arena_id = ?", (arena_id,)).fetchone()[0]
            )

    def memo(self, arena_id: str, comparison: str) -> ArenaMemo:
        """The :class:`~ebmeval.tasks.StepMemo` of one comparison."""
        return ArenaMemo(self, arena_id, comparison)


class ArenaMemo:
    """The step memo of one comparison (one question, two systems) of an arena."""

    def __init__(self, steps: ArenaSteps, arena_id: str, comparison: str) -> None:
        self._steps = steps
        self._key = (arena_id, comparison)

    def get_step(self, step: str) -> dict[str, Any] | None:
        """The payload recorded for ``step``."""
        return self._steps.get(*self._key, step)

    def put_step(self, step: str, payload: dict[str, Any]) -> None:
        """Record ``step``."""
        self._steps.put(*self._key, step, payload)
