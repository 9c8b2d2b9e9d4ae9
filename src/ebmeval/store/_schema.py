"""The run store's SQLite schema, versioned."""

from __future__ import annotations

SCHEMA_VERSION = 1

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
    PRIMARY KEY (run_id, sample_id, epoch)
);
CREATE TABLE IF NOT EXISTS steps (
    run_id     TEXT NOT NULL REFERENCES runs(run_id),
    sample_id  TEXT NOT NULL,
    epoch      INTEGER NOT NULL,
    step       TEXT NOT NULL,
    payload    TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (run_id, sample_id, epoch, step)
);
CREATE TABLE IF NOT EXISTS scores (
    run_id     TEXT NOT NULL REFERENCES runs(run_id),
    sample_id  TEXT NOT NULL,
    epoch      INTEGER NOT NULL,
    scorer     TEXT NOT NULL,
    score      TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (run_id, sample_id, epoch, scorer)
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
"""

# Expert scores imported from annotation studies (ebmeval annotate import).
HUMAN_SCORES_SCHEMA = """
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
"""

SCHEMA += HUMAN_SCORES_SCHEMA
