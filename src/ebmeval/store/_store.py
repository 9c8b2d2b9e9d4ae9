"""The run store: runs, generations, steps, scores and errors in one SQLite file.

Rows are append-only and keyed by (run, sample, epoch[, step and request | score set]); every
write is ``INSERT OR IGNORE`` in its own transaction, so a crash loses at most the sample in
flight and a re-run neither repeats nor duplicates finished work. Scores belong to score sets:
one per distinct scorer identity (name, arguments, prompt versions, each role's model and its
settings), so a run scored by two judges keeps both sets side by side.
"""

from __future__ import annotations

import asyncio
import contextlib
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

from .._util import sqlite
from .._util.errors import UsageError
from .._util.hashing import canonical_json, stable_hash
from ..models import Usage
from ..tasks import Generation, ParsedAnswer, RetrievedDocument, Sample, Score
from ._schema import MIGRATIONS, SCHEMA, SCHEMA_VERSION, run_script

_WHAT = "run store"
RESERVE_BYTES = 128 * 1024
"""Size of the reserve file beside a store being written: room to end a run on a full disk."""


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

    @property
    def status_text(self) -> str:
        """The status, with the answered and requested counts of a ``partial`` run (``partial: 17 of 60``)."""
        counts = self.config.get("answered")
        if self.status != "partial" or not isinstance(counts, list):
            return self.status
        return f"partial: {counts[0]} of {counts[1]} answered"


@dataclass(frozen=True)
class ScoreSet:
    """The scores one scorer identity gave a run."""

    id: str
    """Hash of ``spec``: the key of the set's scores."""
    name: str
    """The scorer's name."""
    label: str
    """A short readable name, unique within the run (``judge/rubric-0-5[judge=qwen…]``)."""
    spec: dict[str, Any]
    """Everything that identifies the scorer (see ``ebmeval.tasks.scorer_spec``)."""


class RunLockedError(UsageError):
    """Another live process is writing the same run."""


class RunStore:
    """Read and write runs in the SQLite file at ``path``.

    For writing (the default) the file and its folder are created when missing, an older
    schema is migrated, and an existing file must pass ``PRAGMA quick_check`` and hold as many
    rows in each index as in its table (a stale index page would let a run insert duplicates). With
    ``read_only`` the file must exist and is never created or changed, so a mistyped path is
    an error and a store on a read-only filesystem can still be read.
    """

    def __init__(self, path: str | Path, *, read_only: bool = False) -> None:
        self.path = Path(path)
        self.read_only = read_only
        self._lock = threading.RLock()
        self._writer: sqlite.BackgroundWriter | None = None
        if read_only:
            self._open_read_only()
            return
        existed = self.path.exists() and self.path.stat().st_size > 0
        self._db = sqlite.connect(self.path, what=_WHAT, foreign_keys=True)
        self._writer = sqlite.BackgroundWriter(self.path, what=_WHAT, foreign_keys=True)
        try:
            if existed:
                sqlite.quick_check(self._db, self.path, _WHAT)
                sqlite.check_indexes(self._db, self.path, _WHAT)
            with sqlite.translate(self.path, _WHAT):
                self._upgrade()
        except BaseException:
            self._db.close()
            raise

    def _open_read_only(self) -> None:
        self._db = sqlite.connect(self.path, what=_WHAT, read_only=True)
        with sqlite.translate(self.path, _WHAT):
            version = self._version()
        if version is None:
            self._db.close()
            raise sqlite.SQLiteError(f"{self.path}: not an ebmeval run store (it has no schema version)")
        if version < SCHEMA_VERSION:
            # an older store: migrate it once, if it can be written
            self._db.close()
            if not os.access(self.path, os.W_OK) or not os.access(self.path.parent, os.W_OK):
                raise sqlite.SQLiteError(
                    f"{self.path}: run store schema {version} must be upgraded to {SCHEMA_VERSION} before it can "
                    "be read, and the file is read-only here; copy it somewhere writable"
                )
            RunStore(self.path).close()
            self._db = sqlite.connect(self.path, what=_WHAT, read_only=True)
        elif version > SCHEMA_VERSION:
            self._db.close()
            raise UsageError(
                f"{self.path}: run store schema {version} is newer than this ebmeval understands "
                f"({SCHEMA_VERSION}); upgrade ebmeval"
            )

    def _version(self) -> int | None:
        try:
            row = self._db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        except sqlite3.OperationalError as exc:  # no meta table: a new file
            if "no such table" not in str(exc):
                raise
            return None
        return None if row is None else int(row[0])

    def _upgrade(self) -> None:
        """Create the schema in a new file, or migrate an older one in place, in one transaction."""
        if self._version() == SCHEMA_VERSION:
            return
        with sqlite.transaction(self._db):
            version = self._version()  # another process may have upgraded it meanwhile
            if version is None:
                run_script(self._db, SCHEMA)
            elif version > SCHEMA_VERSION:
                raise UsageError(
                    f"{self.path}: run store schema {version} is newer than this ebmeval understands "
                    f"({SCHEMA_VERSION}); upgrade ebmeval"
                )
            else:
                while version < SCHEMA_VERSION:
                    MIGRATIONS[version](self._db)
                    version += 1
            self._db.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
            )

    def check(self) -> list[str]:
        """Problems ``PRAGMA integrity_check`` finds (at most 100), each naming its table; ``[]`` when sound."""
        self.flush()
        with self._lock:
            try:
                problems = [str(r[0]) for r in self._db.execute("PRAGMA integrity_check(100)").fetchall()]
            except sqlite3.DatabaseError as exc:
                problems = [str(exc)]
            if problems == ["ok"]:
                return []
            damaged = sqlite.damaged_tables(self._db)
        return [f"damaged table: {t}" for t in damaged] + problems

    def close(self) -> None:
        """Commit every write and close the database; raises the error of a write that failed."""
        try:
            if self._writer is not None:
                self._writer.close()
        finally:
            with self._lock:
                self._db.close()

    def flush(self) -> None:
        """Wait until every write made so far is committed; raises the error of one that failed.

        Writes are committed on a thread of their own (``ebmeval._util.sqlite.BackgroundWriter``),
        so recording a result never holds up the event loop; every read flushes first.
        """
        if self._writer is not None:
            self._writer.flush()

    async def committed(self) -> None:
        """Return once every write made so far is committed, without holding up the event loop.

        A write that failed does not hold it up: its error is raised by the next write or :meth:`flush`.
        """
        if self._writer is None:
            return
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()

        def settle() -> None:
            if not done.done():
                done.set_result(None)

        def wake() -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits any longer
                loop.call_soon_threadsafe(settle)

        self._writer.after_commit(wake)
        await done

    def _write(self, sql: str, params: tuple[Any, ...]) -> None:
        if self._writer is None:
            raise sqlite.SQLiteError(f"{self.path}: the {_WHAT} was opened for reading only")
        self._writer.write(sql, params)

    def _rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        self.flush()
        with self._lock:
            try:
                return self._db.execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise sqlite.error(self.path, _WHAT, exc, sql) from exc

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
        """Create the run, or reopen it when it exists; returns (run, resumed).

        The lookup and the insert share one ``BEGIN IMMEDIATE`` transaction, so two processes
        starting the same run at once both succeed: one creates it, the other resumes it.
        """
        now = _now()
        sql = "SELECT config_hash FROM runs WHERE run_id = ?"
        self.flush()
        with self._lock, sqlite.translate(self.path, _WHAT, "INSERT INTO runs"), sqlite.transaction(self._db):
            existing = self._db.execute(sql, (run_id,)).fetchall()
            if existing and existing[0][0] != config_hash:
                raise UsageError(f"run {run_id} exists in {self.path} with a different configuration")
            if not existing:
                self._db.execute(
                    "INSERT INTO runs (run_id, config_hash, config, task, model, seed, provenance, status,"
                    " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'running', ?, ?)",
                    (run_id, config_hash, json.dumps(config), task, model, seed, json.dumps(provenance), now, now),
                )
            else:
                self._db.execute("UPDATE runs SET status = 'running', updated_at = ? WHERE run_id = ?", (now, run_id))
        return self.get_run(run_id), bool(existing)

    def set_status(self, run_id: str, status: str) -> None:
        """Set the run's status (``running``, ``interrupted``, ``complete``, ``partial``, ``errors``)."""
        self._write("UPDATE runs SET status = ?, updated_at = ? WHERE run_id = ?", (status, _now(), run_id))

    def record_served(self, run_id: str, served: dict[str, dict[str, Any]]) -> None:
        """Add what the servers answered as, by role, to the run's provenance under ``served``.

        Each role's entry holds ``asked`` (the model's name), ``replies`` (replies by the name
        they gave, summed over invocations) and ``mismatched`` (the names that are not the model
        asked for).
        """
        if not served:
            return
        self.flush()
        recorded = self.get_run(run_id).provenance.get("served", {})
        for role, seen in served.items():
            entry = recorded.setdefault(role, {"asked": seen["asked"], "replies": {}, "mismatched": []})
            for name, count in seen["replies"].items():
                entry["replies"][name] = entry["replies"].get(name, 0) + count
            entry["mismatched"] = sorted({*entry["mismatched"], *seen["mismatched"]})
        provenance = {**self.get_run(run_id).provenance, "served": recorded}
        self._write("UPDATE runs SET provenance = ? WHERE run_id = ?", (json.dumps(provenance), run_id))

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
        """Mark this process as the run's writer; refuses while another live process is.

        Also makes the reserve file :meth:`finish` frees on a full disk (``<store>-reserve``).
        """
        self._make_reserve()
        host = socket.gethostname()
        self.flush()
        with self._lock, sqlite.translate(self.path, _WHAT, "UPDATE locks"), sqlite.transaction(self._db):
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

    def release(self, run_id: str) -> None:
        """Give up writing the run once the writes queued before are committed (their error is raised after)."""
        try:
            self.flush()
        finally:
            self._end(run_id, None)

    def finish(self, run_id: str, status: str, *, requested: int | None = None) -> None:
        """Commit the queued writes, then set the run's final ``status`` and give up writing it.

        With ``requested`` (the sample × epoch pairs the run was asked for, every shard of
        them), a ``complete`` run with fewer generations is ``partial`` (:func:`settled_status`).
        When a queued write fails (a full disk), the run is marked ``interrupted`` instead, its
        lock still released, and the error raised.
        """
        try:
            self.flush()
        except sqlite.SQLiteError:
            self._end(run_id, "interrupted")
            raise
        self._end(run_id, status, requested)

    def _end(self, run_id: str, status: str | None, requested: int | None = None) -> None:
        """Delete this process's lock of the run (and set its status), in one transaction written at once.

        Not queued behind the background writer, whose error must not leave the run ``running``
        with its lock held. On a full disk the room for it comes from the reserve file
        :meth:`acquire` made: it is deleted and the transaction tried again. The reserve goes
        once no run of the store is being written.
        """
        try:
            writing = self._end_transaction(run_id, status, requested)
        except sqlite.SQLiteError as exc:
            if not isinstance(exc.__cause__, sqlite3.Error) or not _full(exc.__cause__):
                raise
            self._reserve.unlink(missing_ok=True)
            writing = self._end_transaction(run_id, status, requested)
        if not writing:
            self._reserve.unlink(missing_ok=True)

    def _end_transaction(self, run_id: str, status: str | None, requested: int | None) -> bool:
        """The transaction of :meth:`_end`; whether runs of the store are still being written."""
        with self._lock, sqlite.translate(self.path, _WHAT, "UPDATE runs"), sqlite.transaction(self._db):
            if status is not None:
                self._db.execute(
                    "UPDATE runs SET status = ?, updated_at = ? WHERE run_id = ?",
                    (settled_status(self._db, run_id, status, requested=requested), _now(), run_id),
                )
            self._db.execute("DELETE FROM locks WHERE run_id = ? AND pid = ?", (run_id, os.getpid()))
            return self._db.execute("SELECT 1 FROM locks LIMIT 1").fetchone() is not None

    @property
    def _reserve(self) -> Path:
        """Room kept beside the store while runs write it, so a full disk can still record how a run ended."""
        return self.path.with_name(self.path.name + "-reserve")

    def _make_reserve(self) -> None:
        if self._reserve.exists():
            return
        try:
            with self._reserve.open("wb") as out:
                out.write(bytes(RESERVE_BYTES))
                out.flush()
                os.fsync(out.fileno())
        except OSError:  # no room even for that: the run fails on its first write anyway
            self._reserve.unlink(missing_ok=True)

    # generations

    def put_generation(self, run_id: str, sample: Sample, generation: Generation) -> None:
        """Record a sample's generation (ignored if one is recorded already)."""
        retrieved = (
            json.dumps([r.model_dump() for r in generation.retrieved]) if generation.retrieved is not None else None
        )
        self._write(
            "INSERT OR IGNORE INTO generations (run_id, sample_id, epoch, sample, output, answer, parsed,"
            " retrieved, steps, usage, latency, metadata, created_at, truncated, reasoning)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
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
                int(generation.truncated) + int(generation.answer_truncated),
                generation.reasoning,
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
        sql = f"SELECT {_GEN_COLUMNS} FROM generations WHERE run_id = ? ORDER BY rowid"
        self.flush()
        with self._lock, sqlite.translate(self.path, _WHAT, sql):
            cursor = self._db.execute(sql, (run_id,))
            rows = cursor.fetchmany(500)
        while rows:
            for row in rows:
                yield _generation(row)
            with self._lock, sqlite.translate(self.path, _WHAT, sql):
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

    def get_step(self, run_id: str, sample_id: str, epoch: int, step: str, request: str = "") -> dict[str, Any] | None:
        """A recorded step's payload (a model call's under the request it sent)."""
        rows = self._rows(
            "SELECT payload FROM steps WHERE run_id = ? AND sample_id = ? AND epoch = ? AND step = ? AND request = ?",
            (run_id, sample_id, epoch, step, request),
        )
        return json.loads(rows[0][0]) if rows else None

    def put_step(
        self, run_id: str, sample_id: str, epoch: int, step: str, payload: dict[str, Any], request: str = ""
    ) -> str:
        """Record a finished step (ignored if recorded already); returns the JSON written."""
        text = json.dumps(payload, default=str)
        self._write(
            "INSERT OR IGNORE INTO steps (run_id, sample_id, epoch, step, payload, created_at, request)"
            " VALUES (?,?,?,?,?,?,?)",
            (run_id, sample_id, epoch, step, text, _now(), request),
        )
        return text

    def step_texts(self, run_id: str, sample_id: str, epoch: int = 0) -> dict[tuple[str, str], str]:
        """A sample's recorded steps as (step name, request) → payload JSON."""
        rows = self._rows(
            "SELECT step, request, payload FROM steps WHERE run_id = ? AND sample_id = ? AND epoch = ?",
            (run_id, sample_id, epoch),
        )
        return {(r[0], r[1]): r[2] for r in rows}

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

    def register_score_set(self, run_id: str, spec: dict[str, Any], label: str) -> ScoreSet:
        """The score set of ``spec`` in the run, created under ``label`` when new.

        A label that another set of the run already has gets the new set's id appended
        (``label#1a2b3c``), so every set of a run has its own label.
        """
        score_set = stable_hash(spec, 16)
        name = str(spec.get("name", label))
        with self._lock:
            found = self._rows("SELECT label FROM score_sets WHERE run_id = ? AND score_set = ?", (run_id, score_set))
            if found:
                return ScoreSet(id=score_set, name=name, label=found[0][0], spec=spec)
            taken = {r[0] for r in self._rows("SELECT label FROM score_sets WHERE run_id = ?", (run_id,))}
            chosen = label if label not in taken else f"{label}#{score_set[:6]}"
            self._write(
                "INSERT INTO score_sets (run_id, score_set, name, label, spec, created_at) VALUES (?,?,?,?,?,?)",
                (run_id, score_set, name, chosen, canonical_json(spec), _now()),
            )
        return ScoreSet(id=score_set, name=name, label=chosen, spec=spec)

    def score_sets(self, run_id: str) -> list[ScoreSet]:
        """The score sets of the run, oldest first."""
        rows = self._rows(
            "SELECT score_set, name, label, spec FROM score_sets WHERE run_id = ? ORDER BY created_at, rowid",
            (run_id,),
        )
        return [ScoreSet(id=r[0], name=r[1], label=r[2], spec=json.loads(r[3])) for r in rows]

    def put_score(self, run_id: str, sample_id: str, epoch: int, score_set: str, score: Score) -> None:
        """Record a score of the score set with id ``score_set`` (ignored if it scored the sample already)."""
        self._write(
            "INSERT OR IGNORE INTO scores (run_id, sample_id, epoch, score_set, score, created_at)"
            " VALUES (?,?,?,?,?,?)",
            (run_id, sample_id, epoch, score_set, score.model_dump_json(), _now()),
        )

    def scored(self, run_id: str, score_set: str) -> set[tuple[str, int]]:
        """(sample id, epoch) pairs that the score set with id ``score_set`` has scored."""
        rows = self._rows("SELECT sample_id, epoch FROM scores WHERE run_id = ? AND score_set = ?", (run_id, score_set))
        return {(r[0], r[1]) for r in rows}

    def scores(
        self, run_id: str, scorer: str | None = None, *, pooled: bool = False
    ) -> Iterator[tuple[str, int, str, Score]]:
        """(sample id, epoch, score set label, score) rows of the run.

        ``scorer`` keeps one score set: the one whose label or id it is, or the only one of the
        scorer it names. A scorer name that covers several sets (one per judge) is a
        ``UsageError`` naming their labels, unless ``pooled`` asks for all of them together.
        """
        sql = (
            "SELECT s.sample_id, s.epoch, t.label, s.score FROM scores s JOIN score_sets t"
            " ON t.run_id = s.run_id AND t.score_set = s.score_set WHERE s.run_id = ?"
        )
        params: tuple[Any, ...] = (run_id,)
        if scorer is not None:
            chosen = self.score_sets_of(run_id, scorer)
            if len(chosen) > 1 and not pooled:
                labels = ", ".join(s.label for s in chosen)
                raise UsageError(f"'{scorer}' names {len(chosen)} score sets of run {run_id}: {labels}; name one")
            sql += f" AND t.score_set IN ({', '.join('?' * len(chosen))})"
            params += tuple(s.id for s in chosen)
        for row in self._rows(sql + " ORDER BY s.rowid", params):
            yield row[0], row[1], row[2], Score.model_validate_json(row[3])

    def score_sets_of(self, run_id: str, scorer: str) -> list[ScoreSet]:
        """The run's score set whose label or id is ``scorer``, else every set of the scorer named ``scorer``."""
        sets = self.score_sets(run_id)
        exact = [s for s in sets if scorer in (s.label, s.id)]
        return exact or [s for s in sets if s.name == scorer]

    def scorers(self, run_id: str) -> list[str]:
        """Labels of the score sets that scored the run."""
        return sorted(s.label for s in self.score_sets(run_id))

    # human scores and arena judgements

    def put_human_scores(self, rows: list[tuple[Any, ...]]) -> None:
        """Write expert scores of an annotation study, replacing earlier rows of the same key.

        Each row is (run id, sample id, epoch, study, annotator, form, field, value, raw,
        opponent, answered at); revisions made before the study closed win.
        """
        now = _now()
        self.flush()
        with self._lock, sqlite.translate(self.path, _WHAT, "INSERT INTO human_scores"), sqlite.transaction(self._db):
            self._db.executemany(
                "INSERT OR REPLACE INTO human_scores (run_id, sample_id, epoch, study, annotator, form, field,"
                " value, raw, opponent, answered_at, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                [(*row, now) for row in rows],
            )

    def human_scores(self, study: str, field: str) -> list[tuple[str, str, int, str, float]]:
        """(run id, sample id, epoch, annotator, value) of a study's field."""
        rows = self._rows(
            "SELECT run_id, sample_id, epoch, annotator, value FROM human_scores WHERE study = ? AND field = ?",
            (study, field),
        )
        return [(r[0], r[1], r[2], r[3], r[4]) for r in rows]

    def arena_memo(self, arena_id: str, comparison: str) -> ArenaMemo:
        """The step memo of one comparison (one question, two systems) of an arena.

        An arena compares runs, so its judge steps are kept apart from any run's, keyed by
        (arena id, comparison, step, request).
        """
        return ArenaMemo(self, arena_id, comparison)

    def get_arena_step(self, arena_id: str, comparison: str, step: str, request: str = "") -> dict[str, Any] | None:
        """The payload an arena recorded for ``step`` of ``comparison`` under ``request``, if any."""
        rows = self._rows(
            "SELECT payload FROM arena_steps WHERE arena_id = ? AND comparison = ? AND step = ? AND request = ?",
            (arena_id, comparison, step, request),
        )
        return json.loads(rows[0][0]) if rows else None

    def put_arena_step(
        self, arena_id: str, comparison: str, step: str, payload: dict[str, Any], request: str = ""
    ) -> None:
        """Record an arena's judge step (first write wins)."""
        self._write(
            "INSERT OR IGNORE INTO arena_steps (arena_id, comparison, step, payload, created_at, request)"
            " VALUES (?,?,?,?,?,?)",
            (arena_id, comparison, step, json.dumps(payload, default=str), _now(), request),
        )

    def count_arena_steps(self, arena_id: str) -> int:
        """Steps an arena recorded."""
        return int(self._rows("SELECT count(*) FROM arena_steps WHERE arena_id = ?", (arena_id,))[0][0])

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
        self._texts: dict[tuple[str, str], str] | None = {} if fresh else None

    def get_step(self, step: str, request: str = "") -> dict[str, Any] | None:
        """The payload recorded for ``step`` under ``request`` (a new copy on every call)."""
        if self._texts is None:
            self._texts = self._store.step_texts(*self._key)
        text = self._texts.get((step, request))
        return None if text is None else json.loads(text)

    def put_step(self, step: str, payload: dict[str, Any], request: str = "") -> None:
        """Record ``step``; the first record of a (name, request) is the one kept, as in the store."""
        text = self._store.put_step(*self._key, step, payload, request)
        if self._texts is not None:
            self._texts.setdefault((step, request), text)


class ArenaMemo:
    """The :class:`~ebmeval.tasks.StepMemo` of one comparison of an arena, backed by the run store."""

    def __init__(self, store: RunStore, arena_id: str, comparison: str) -> None:
        self._store = store
        self._key = (arena_id, comparison)

    def get_step(self, step: str, request: str = "") -> dict[str, Any] | None:
        """The payload recorded for ``step`` under ``request``."""
        return self._store.get_arena_step(*self._key, step, request)

    def put_step(self, step: str, payload: dict[str, Any], request: str = "") -> None:
        """Record ``step`` under ``request``."""
        self._store.put_arena_step(*self._key, step, payload, request)


_GEN_COLUMNS = (
    "sample, sample_id, epoch, output, answer, retrieved, steps, usage, latency, metadata, truncated, reasoning"
)


def settled_status(
    db: sqlite3.Connection, run_id: str, status: str, *, requested: int | None = None, lost: bool = False
) -> str:
    """``status`` of a run as its counts allow: ``complete`` only when every requested pair is answered.

    A ``complete`` or ``partial`` run is ``complete`` when it has a generation for as many
    sample × epoch pairs as were requested (``requested``, else the count recorded with the
    run), else ``partial``; the answered and requested counts are recorded in the run's config
    (``answered``). Without a recorded count a run is ``partial`` when rows were ``lost``
    (salvage). Other statuses (``errors``, ``interrupted`` …) are kept.
    """
    if status not in ("complete", "partial"):
        return status
    config = json.loads(db.execute("SELECT config FROM runs WHERE run_id = ?", (run_id,)).fetchone()[0])
    if requested is None:
        recorded = config.get("answered")
        if not isinstance(recorded, list):
            return "partial" if lost else status
        requested = int(recorded[1])
    answered = int(db.execute("SELECT count(*) FROM generations WHERE run_id = ?", (run_id,)).fetchone()[0])
    config["answered"] = [answered, requested]
    db.execute("UPDATE runs SET config = ? WHERE run_id = ?", (json.dumps(config), run_id))
    return "complete" if answered >= requested else "partial"


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
        truncated=row[10] >= 1,
        answer_truncated=row[10] >= 2,
        reasoning=row[11],
    )
    return sample, generation


def _full(exc: sqlite3.Error) -> bool:
    return getattr(exc, "sqlite_errorname", "").startswith("SQLITE_FULL")


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
