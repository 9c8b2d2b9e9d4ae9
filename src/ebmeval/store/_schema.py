"""The run store's SQLite schema, versioned, and the migrations between versions.

Version 2 keys model steps by the request they sent (a step is replayed only for the same
model and request), keys scores by score set (the identity of the scorer that produced
them), records truncated generations and reasoning traces, and holds arena judgements.
A generation's ``truncated`` is 1 when a model call of its workflow stopped at its token
limit and 2 when the reply its answer is read from did (``Generation.answer_truncated``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from .._util.hashing import canonical_json, stable_hash

SCHEMA_VERSION = 2

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
    run_id      TEXT PRIMARY KEY,
    config_hash TEXT NOT NULL,
    config      TEXT NOT NULL,
    task        TEXT NOT NULL,
    model       TEXT NOT NULL,
    seed        INTEGER NOT NULL,
    provenance  TEXT NOT NULL,
    status      TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS generations (
    run_id     TEXT NOT NULL REFERENCES runs(run_id),
    sample_id  TEXT NOT NULL,
    epoch      INTEGER NOT NULL,
    sample     TEXT NOT NULL,
    output     TEXT NOT NULL,
    answer     TEXT NOT NULL,
    parsed     INTEGER NOT NULL,
    retrieved  TEXT,
    steps      TEXT NOT NULL,
    usage      TEXT NOT NULL,
    latency    REAL NOT NULL,
    metadata   TEXT NOT NULL,
    created_at TEXT NOT NULL,
    truncated  INTEGER NOT NULL DEFAULT 0,
    reasoning  TEXT,
    PRIMARY KEY (run_id, sample_id, epoch)
);
CREATE TABLE IF NOT EXISTS steps (
    run_id     TEXT NOT NULL REFERENCES runs(run_id),
    sample_id  TEXT NOT NULL,
    epoch      INTEGER NOT NULL,
    step       TEXT NOT NULL,
    payload    TEXT NOT NULL,
    created_at TEXT NOT NULL,
    request    TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (run_id, sample_id, epoch, step, request)
);
CREATE TABLE IF NOT EXISTS score_sets (
    run_id     TEXT NOT NULL REFERENCES runs(run_id),
    score_set  TEXT NOT NULL,
    name       TEXT NOT NULL,
    label      TEXT NOT NULL,
    spec       TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (run_id, score_set)
);
CREATE TABLE IF NOT EXISTS scores (
    run_id     TEXT NOT NULL REFERENCES runs(run_id),
    sample_id  TEXT NOT NULL,
    epoch      INTEGER NOT NULL,
    score_set  TEXT NOT NULL,
    score      TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (run_id, sample_id, epoch, score_set)
);
CREATE TABLE IF NOT EXISTS errors (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id     TEXT NOT NULL REFERENCES runs(run_id),
    sample_id  TEXT NOT NULL,
    epoch      INTEGER NOT NULL,
    stage      TEXT NOT NULL,
    error      TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS locks (
    run_id     TEXT PRIMARY KEY,
    pid        INTEGER NOT NULL,
    host       TEXT NOT NULL,
    started_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS human_scores (
    run_id     TEXT NOT NULL REFERENCES runs(run_id),
    sample_id  TEXT NOT NULL,
    epoch      INTEGER NOT NULL,
    study      TEXT NOT NULL,
    annotator  TEXT NOT NULL,
    form       TEXT NOT NULL,
    field      TEXT NOT NULL,
    value      REAL NOT NULL,
    raw        TEXT NOT NULL,
    opponent   TEXT NOT NULL DEFAULT '',
    answered_at TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (run_id, sample_id, epoch, study, annotator, field, opponent)
);
CREATE TABLE IF NOT EXISTS arena_steps (
    arena_id   TEXT NOT NULL,
    comparison TEXT NOT NULL,
    step       TEXT NOT NULL,
    payload    TEXT NOT NULL,
    created_at TEXT NOT NULL,
    request    TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (arena_id, comparison, step, request)
);
"""
"""The current schema; every statement is idempotent."""

LEGACY_REQUEST = "schema-1"
"""The request key of model steps recorded by schema 1, which did not record requests: never replayed."""


def legacy_score_set(scorer: str) -> tuple[str, dict[str, str]]:
    """The id and spec given to the scores a schema-1 store recorded under ``scorer``."""
    spec = {"name": scorer, "recorded_by": "schema 1, which kept no scorer settings or judge identity"}
    return stable_hash(spec, 16), spec


def run_script(db: sqlite3.Connection, script: str) -> None:
    """Execute the ``;``-separated statements of ``script`` one by one, inside the caller's transaction.

    (``executescript`` would commit first.)
    """
    for statement in script.split(";"):
        if statement.strip():
            db.execute(statement)


def _migrate_1_to_2(db: sqlite3.Connection) -> None:
    """Schema 1 → 2: steps keyed by request, scores by score set, truncation and reasoning columns."""
    run_script(
        db,
        f"""
        CREATE TABLE steps_v2 (
            run_id TEXT NOT NULL REFERENCES runs(run_id), sample_id TEXT NOT NULL, epoch INTEGER NOT NULL,
            step TEXT NOT NULL, payload TEXT NOT NULL, created_at TEXT NOT NULL, request TEXT NOT NULL DEFAULT '',
            PRIMARY KEY (run_id, sample_id, epoch, step, request));
        INSERT INTO steps_v2 SELECT run_id, sample_id, epoch, step, payload, created_at,
            CASE WHEN json_type(payload, '$.output') IS NOT NULL THEN '{LEGACY_REQUEST}' ELSE '' END
            FROM steps ORDER BY rowid;
        DROP TABLE steps;
        ALTER TABLE steps_v2 RENAME TO steps;
        CREATE TABLE scores_v2 (
            run_id TEXT NOT NULL REFERENCES runs(run_id), sample_id TEXT NOT NULL, epoch INTEGER NOT NULL,
            score_set TEXT NOT NULL, score TEXT NOT NULL, created_at TEXT NOT NULL,
            PRIMARY KEY (run_id, sample_id, epoch, score_set));
        ALTER TABLE generations ADD COLUMN truncated INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE generations ADD COLUMN reasoning TEXT;
        """,
    )
    if db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'arena_steps'").fetchone():
        # schema 1 created it on first use, without requests
        run_script(
            db,
            f"""
            ALTER TABLE arena_steps RENAME TO arena_steps_v1;
            CREATE TABLE arena_steps (
                arena_id TEXT NOT NULL, comparison TEXT NOT NULL, step TEXT NOT NULL, payload TEXT NOT NULL,
                created_at TEXT NOT NULL, request TEXT NOT NULL DEFAULT '',
                PRIMARY KEY (arena_id, comparison, step, request));
            INSERT INTO arena_steps SELECT arena_id, comparison, step, payload, created_at,
                CASE WHEN json_type(payload, '$.output') IS NOT NULL THEN '{LEGACY_REQUEST}' ELSE '' END
                FROM arena_steps_v1 ORDER BY rowid;
            DROP TABLE arena_steps_v1
            """,
        )
    run_script(db, SCHEMA)  # tables new in schema 2 (score_sets, arena_steps …)
    pairs = db.execute("SELECT DISTINCT run_id, scorer FROM scores").fetchall()
    for run_id, scorer in pairs:
        score_set, spec = legacy_score_set(scorer)
        db.execute(
            "INSERT OR IGNORE INTO score_sets (run_id, score_set, name, label, spec, created_at)"
            " SELECT ?, ?, ?, ?, ?, min(created_at) FROM scores WHERE run_id = ? AND scorer = ?",
            (run_id, score_set, scorer, scorer, canonical_json(spec), run_id, scorer),
        )
        db.execute(
            "INSERT INTO scores_v2 SELECT run_id, sample_id, epoch, ?, score, created_at FROM scores"
            " WHERE run_id = ? AND scorer = ? ORDER BY rowid",
            (score_set, run_id, scorer),
        )
    run_script(db, "DROP TABLE scores; ALTER TABLE scores_v2 RENAME TO scores")


MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {1: _migrate_1_to_2}
"""``MIGRATIONS[v]`` upgrades a store of schema ``v`` to ``v + 1`` inside one transaction."""
