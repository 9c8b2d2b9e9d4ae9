"""The run store: runs, generations, steps, scores and errors in one SQLite file.

Rows are append-only and keyed by (run, sample, epoch[, step | scorer]); every write
is ``INSERT OR IGNORE`` in its own transaction, so a crash loses at most the sample in
flight and a re-run neither repeats nor duplicates finished work.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .._util.errors import UsageError
from ..models import Usage
from ..tasks import Generation, ParsedAnswer, RetrievedDocument, Sample, Score
from ._schema import SCHEMA, SCHEMA_VERSION


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass(frozen=True)
class RunRecord:
    """A run's row."""

    run_id: str
    config_hash: str
    config: dict[str, Any]
    task: str
    model: str
    seed: int
    provenance: dict[str, Any]
    status: str
    created_at: str
    updated_at: str


class RunLockedError(UsageError):
    """Another live process is writing the same run."""


class RunStore:
    """Read and write runs in the SQLite file at ``path`` (created when missing)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        try:
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA foreign_keys=ON")
            self._db.executescript(SCHEMA)
            row = self._db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        except sqlite3.DatabaseError as exc:
            raise UsageError(f"{self.path}: not a readable ebmeval run store ({exc})") from exc
        if row is None:
            self._db.execute(
                "INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
            )
        elif int(row[0]) > SCHEMA_VERSION:
            raise UsageError(
                f"{self.path}: run store schema {row[0]} is newer than this ebmeval understands "
                f"({SCHEMA_VERSION}); upgrade ebmeval"
            )

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()

    def _write(self, sql: str, params: tuple[Any, ...]) -> None:
        with self._lock:
            self._db.execute(sql, params)

    def _rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._db.execute(sql, params).fetchall()

    # runs

    def begin_run(
        self,
        *,
        run_id: str,
        config_hash: str,
        config: dict[str, Any],
        task: str,
        model: str,
        seed: int,
        provenance: dict[str, Any],
    ) -> tuple[RunRecord, bool]:
        """Create the run, or reopen it when it exists; returns (run, resumed)."""
        now = _now()
        with self._lock:
            existing = self._rows("SELECT config_hash FROM runs WHERE run_id = ?", (run_id,))
            if existing and existing[0][0] != config_hash:
                raise UsageError(f"run {run_id} exists in {self.path} with a different configuration")
            if not existing:
                self._write(
                    "INSERT INTO runs (run_id, config_hash, config, task, model, seed, provenance, status,"
                    " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'running', ?, ?)",
                    (run_id, config_hash, json.dumps(config), task, model, seed, json.dumps(provenance), now, now),
                )
            else:
                self.set_status(run_id, "running")
        return self.get_run(run_id), bool(existing)

    def set_status(self, run_id: str, status: str) -> None:
        """Set the run's status (``running``, ``interrupted``, ``complete``, ``errors``)."""
        self._write("UPDATE runs SET status = ?, updated_at = ? WHERE run_id = ?", (status, _now(), run_id))

    def get_run(self, run_id: str) -> RunRecord:
        """The run whose id is ``run_id`` or starts with it (at least 4 characters)."""
        rows = self._rows(
            "SELECT * FROM runs WHERE run_id = ? OR (length(?) >= 4 AND run_id LIKE ? || '%')",
            (run_id, run_id, run_id),
        )
        if not rows:
            raise UsageError(f"no run '{run_id}' in {self.path}; `ebmeval list runs --store {self.path}` lists them")
        exact = [r for r in rows if r[0] == run_id]
        if len(rows) > 1 and not exact:
            raise UsageError(f"run id prefix '{run_id}' is ambiguous: {', '.join(r[0] for r in rows)}")
        return _run_record(exact[0] if exact else rows[0])

    def list_runs(self) -> list[RunRecord]:
        """All runs, newest first."""
        return [_run_record(r) for r in self._rows("SELECT * FROM runs ORDER BY created_at DESC")]

    # locks

    def acquire(self, run_id: str) -> None:
        """Mark this process as the run's writer; refuses while another live process is."""
        host = socket.gethostname()
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                row = self._db.execute("SELECT pid, host FROM locks WHERE run_id = ?", (run_id,)).fetchone()
                if row is not None and row[0] != os.getpid() and (row[1] != host or _pid_alive(row[0])):
                    raise RunLockedError(
                        f"run {run_id} is being written by process {row[0]} on {row[1]}; "
                        "wait for it to finish (or stop it) and run again"
                    )
                self._db.execute(
                    "INSERT OR REPLACE INTO locks (run_id, pid, host, started_at) VALUES (?, ?, ?, ?)",
                    (run_id, os.getpid(), host, _now()),
                )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def release(self, run_id: str) -> None:
        """Give up writing the run."""
        self._write("DELETE FROM locks WHERE run_id = ? AND pid = ?", (run_id, os.getpid()))

    # generations

    def put_generation(self, run_id: str, sample: Sample, generation: Generation) -> None:
        """Record a sample's generation (ignored if one is recorded already)."""
        retrieved = (
            json.dumps([r.model_dump() for r in generation.retrieved]) if generation.retrieved is not None else None
        )
        self._write(
            "INSERT OR IGNORE INTO generations (run_id, sample_id, epoch, sample, output, answer, parsed,"
            " retrieved, steps, usage, latency, metadata, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                run_id,
                generation.sample_id,
                generation.epoch,
                sample.model_dump_json(),
                generation.output,
                generation.answer.model_dump_json(),
                int(generation.answer.parsed),
                retrieved,
                json.dumps(generation.steps),
                generation.usage.model_dump_json(),
                generation.latency,
                json.dumps(generation.metadata, default=str),
                _now(),
            ),
        )

    def done_generations(self, run_id: str) -> set[tuple[str, int]]:
        """(sample id, epoch) of every recorded generation."""
        return {
            (r[0], r[1]) for r in self._rows("SELECT sample_id, epoch FROM generations WHERE run_id = ?", (run_id,))
        }

    def get_generation(self, run_id: str, sample_id: str, epoch: int = 0) -> tuple[Sample, Generation] | None:
        """A recorded generation with its sample."""
        rows = self._rows(
            f"SELECT {_GEN_COLUMNS} FROM generations WHERE run_id = ? AND sample_id = ? AND epoch = ?",
            (run_id, sample_id, epoch),
        )
        return _generation(rows[0]) if rows else None

    def generations(self, run_id: str) -> Iterator[tuple[Sample, Generation]]:
        """Every recorded generation of the run, streamed in sample order."""
        with self._lock:
            cursor = self._db.execute(
                f"SELECT {_GEN_COLUMNS} FROM generations WHERE run_id = ? ORDER BY rowid", (run_id,)
            )
            rows = cursor.fetchmany(500)
        while rows:
            for row in rows:
                yield _generation(row)
            with self._lock:
                rows = cursor.fetchmany(500)

    def count_generations(self, run_id: str) -> tuple[int, int]:
        """(generations, unparsed) recorded for the run."""
        row = self._rows("SELECT count(*), coalesce(sum(1 - parsed), 0) FROM generations WHERE run_id = ?", (run_id,))[
            0
        ]
        return int(row[0]), int(row[1])

    # steps

    def memo(self, run_id: str, sample_id: str, epoch: int = 0, *, fresh: bool = False) -> SampleMemo:
        """The step memo of one sample; ``fresh`` says it has no recorded steps, so none are read."""
        return SampleMemo(self, run_id, sample_id, epoch, fresh=fresh)

    def get_step(self, run_id: str, sample_id: str, epoch: int, step: str) -> dict[str, Any] | None:
        """A recorded step's payload."""
        rows = self._rows(
            "SELECT payload FROM steps WHERE run_id = ? AND sample_id = ? AND epoch = ? AND step = ?",
            (run_id, sample_id, epoch, step),
        )
        return json.loads(rows[0][0]) if rows else None

    def put_step(self, run_id: str, sample_id: str, epoch: int, step: str, payload: dict[str, Any]) -> str:
        """Record a finished step (ignored if recorded already); returns the JSON written."""
        text = json.dumps(payload, default=str)
        self._write(
            "INSERT OR IGNORE INTO steps (run_id, sample_id, epoch, step, payload, created_at) VALUES (?,?,?,?,?,?)",
            (run_id, sample_id, epoch, step, text, _now()),
        )
        return text

    def step_texts(self, run_id: str, sample_id: str, epoch: int = 0) -> dict[str, str]:
        """A sample's recorded steps as step name → payload JSON."""
        rows = self._rows(
            "SELECT step, payload FROM steps WHERE run_id = ? AND sample_id = ? AND epoch = ?",
            (run_id, sample_id, epoch),
        )
        return {r[0]: r[1] for r in rows}

    def stepped(self, run_id: str) -> set[tuple[str, int]]:
        """(sample id, epoch) of every sample with at least one recorded step."""
        return {
            (r[0], r[1]) for r in self._rows("SELECT DISTINCT sample_id, epoch FROM steps WHERE run_id = ?", (run_id,))
        }

    def steps(self, run_id: str, sample_id: str, epoch: int = 0) -> list[tuple[str, dict[str, Any]]]:
        """A sample's recorded steps in the order they finished."""
        rows = self._rows(
            "SELECT step, payload FROM steps WHERE run_id = ? AND sample_id = ? AND epoch = ? ORDER BY rowid",
            (run_id, sample_id, epoch),
        )
        return [(r[0], json.loads(r[1])) for r in rows]

    def count_steps(self, run_id: str) -> int:
        """Steps recorded for the run."""
        return int(self._rows("SELECT count(*) FROM steps WHERE run_id = ?", (run_id,))[0][0])

    # scores

    def put_score(self, run_id: str, sample_id: str, epoch: int, scorer: str, score: Score) -> None:
        """Record a score (ignored if this scorer already scored the sample)."""
        self._write(
            "INSERT OR IGNORE INTO scores (run_id, sample_id, epoch, scorer, score, created_at) VALUES (?,?,?,?,?,?)",
            (run_id, sample_id, epoch, scorer, score.model_dump_json(), _now()),
        )

    def scored(self, run_id: str, scorer: str) -> set[tuple[str, int]]:
        """(sample id, epoch) pairs that ``scorer`` has scored."""
        rows = self._rows("SELECT sample_id, epoch FROM scores WHERE run_id = ? AND scorer = ?", (run_id, scorer))
        return {(r[0], r[1]) for r in rows}

    def scores(self, run_id: str, scorer: str | None = None) -> Iterator[tuple[str, int, str, Score]]:
        """(sample id, epoch, scorer, score) rows of the run, optionally of one scorer."""
        sql = "SELECT sample_id, epoch, scorer, score FROM scores WHERE run_id = ?"
        params: tuple[Any, ...] = (run_id,)
        if scorer is not None:
            sql += " AND scorer = ?"
            params += (scorer,)
        for row in self._rows(sql + " ORDER BY rowid", params):
            yield row[0], row[1], row[2], Score.model_validate_json(row[3])

    def scorers(self, run_id: str) -> list[str]:
        """Names of the scorers that scored the run."""
        return [r[0] for r in self._rows("SELECT DISTINCT scorer FROM scores WHERE run_id = ? ORDER BY 1", (run_id,))]

    # errors

    def put_error(self, run_id: str, sample_id: str, epoch: int, stage: str, error: str) -> None:
        """Log a failure of one sample at one stage (the log is append-only)."""
        self._write(
            "INSERT INTO errors (run_id, sample_id, epoch, stage, error, created_at) VALUES (?,?,?,?,?,?)",
            (run_id, sample_id, epoch, stage, error, _now()),
        )

    def errors(self, run_id: str) -> list[tuple[str, int, str, str, str]]:
        """(sample id, epoch, stage, error, time) of every logged failure, oldest first."""
        rows = self._rows(
            "SELECT sample_id, epoch, stage, error, created_at FROM errors WHERE run_id = ? ORDER BY id", (run_id,)
        )
        return [(r[0], r[1], r[2], r[3], r[4]) for r in rows]


class SampleMemo:
    """The :class:`~ebmeval.tasks.StepMemo` of one sample, backed by the run store.

    The sample's recorded steps are read once, on the first lookup (not at all when it is
    ``fresh``), and kept with every step recorded since, so replaying and re-reading steps
    costs no query.
    """

    def __init__(self, store: RunStore, run_id: str, sample_id: str, epoch: int, *, fresh: bool = False) -> None:
        self._store = store
        self._key = (run_id, sample_id, epoch)
        self._texts: dict[str, str] | None = {} if fresh else None

    def get_step(self, step: str) -> dict[str, Any] | None:
        """The payload recorded for ``step`` (a new copy on every call)."""
        if self._texts is None:
            self._texts = self._store.step_texts(*self._key)
        text = self._texts.get(step)
        return None if text is None else json.loads(text)

    def put_step(self, step: str, payload: dict[str, Any]) -> None:
        """Record ``step``; the first record of a name is the one kept, as in the store."""
        text = self._store.put_step(*self._key, step, payload)
        if self._texts is not None:
            self._texts.setdefault(step, text)


_GEN_COLUMNS = "sample, sample_id, epoch, output, answer, retrieved, steps, usage, latency, metadata"


def _generation(row: tuple[Any, ...]) -> tuple[Sample, Generation]:
    sample = Sample.model_validate_json(row[0])
    retrieved = [RetrievedDocument.model_validate(r) for r in json.loads(row[5])] if row[5] is not None else None
    generation = Generation(
        sample_id=row[1],
        epoch=row[2],
        output=row[3],
        answer=ParsedAnswer.model_validate_json(row[4]),
        retrieved=retrieved,
        steps=json.loads(row[6]),
        usage=Usage.model_validate_json(row[7]),
        latency=row[8],
        metadata=json.loads(row[9]),
    )
    return sample, generation


def _run_record(row: tuple[Any, ...]) -> RunRecord:
    return RunRecord(
        run_id=row[0],
        config_hash=row[1],
        config=json.loads(row[2]),
        task=row[3],
        model=row[4],
        seed=row[5],
        provenance=json.loads(row[6]),
        status=row[7],
        created_at=row[8],
        updated_at=row[9],
    )
