"""One way to open and use SQLite files: the run store, the response cache and the negation store.

Writers open in WAL mode with ``synchronous=NORMAL`` and a busy timeout; readers open with
``mode=ro`` (``immutable=1`` when the folder is not writable, e.g. a read-only filesystem, where
no ``-shm`` file can be made). SQLite's errors become one-line :class:`SQLiteError` messages that
name the file, the table where known, and what to do.
"""

from __future__ import annotations

import os
import queue
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from .errors import UsageError

BUSY_TIMEOUT_S = 30.0
"""How long a statement waits for another process's write lock before failing."""

_TABLES = re.compile(r"\b(?:FROM|JOIN|INTO|UPDATE)\s+([A-Za-z_][A-Za-z0-9_]*)", re.IGNORECASE)


class SQLiteError(UsageError):
    """A SQLite file cannot be opened, read or written: damaged, full, read-only or missing."""


class DamagedDatabaseError(SQLiteError):
    """A SQLite file is damaged (``database disk image is malformed``, not a database …)."""


def connect(
    path: Path, *, what: str, read_only: bool = False, foreign_keys: bool = False, create_parent: bool = True
) -> sqlite3.Connection:
    """A connection to the SQLite file at ``path``, in autocommit mode (see :func:`transaction`).

    ``what`` names the file in messages (``run store``). Read-only connections need the file
    to exist and never create or change anything; writers create the file (and, with
    ``create_parent``, its folder) and switch it to WAL mode.
    """
    if read_only:
        if not path.is_file():
            raise SQLiteError(f"{path}: no such {what}" + ("" if path.parent.is_dir() else " (no such folder)"))
        writable_folder = os.access(path.parent, os.W_OK)
        flags = "mode=ro" if writable_folder or _has_shm(path) else "immutable=1"
        with translate(path, what):
            db = sqlite3.connect(
                f"file:{quote(str(path.resolve()))}?{flags}",
                uri=True,
                check_same_thread=False,
                isolation_level=None,
                timeout=BUSY_TIMEOUT_S,
            )
            db.execute("PRAGMA query_only=ON")
        return db
    if create_parent:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise SQLiteError(f"{path}: cannot create the folder of the {what} ({exc.strerror or exc})") from exc
    elif not path.parent.is_dir():
        raise SQLiteError(f"{path}: cannot create the {what}: folder {path.parent} does not exist")
    with translate(path, what):
        db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=BUSY_TIMEOUT_S)
        _switch_to_wal(db)
        db.execute("PRAGMA synchronous=NORMAL")
        if foreign_keys:
            db.execute("PRAGMA foreign_keys=ON")
    return db


def open_table(path: Path, *, what: str, schema: str) -> sqlite3.Connection:
    """A writer connection (see :func:`connect`) to a file of one table, made by ``schema`` if missing.

    ``schema`` is the table's ``CREATE TABLE IF NOT EXISTS`` statement: the response cache and
    the negation store are such files, shared by every run on the machine.
    """
    db = connect(path, what=what)
    with translate(path, what, schema):
        db.execute(schema)
    return db


def _switch_to_wal(db: sqlite3.Connection) -> None:
    """``PRAGMA journal_mode=WAL``, tried again while another process holds the lock it needs.

    Two processes creating the same new file race for that lock, and SQLite answers the loser
    "database is locked" at once rather than waiting its busy timeout; so it is retried here
    for up to :data:`BUSY_TIMEOUT_S` (once the other process has switched, the switch is a no-op).
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            busy = getattr(exc, "sqlite_errorname", "").startswith(("SQLITE_BUSY", "SQLITE_LOCKED"))
            if not busy or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


class BackgroundWriter:
    """Writes to a SQLite file on a thread and connection of its own, so callers never wait for SQLite.

    Writes queued while the thread is busy are committed together in one transaction (a group
    commit); each is committed within milliseconds of being queued, so a killed process loses
    at most the writes of its last moments. A statement that fails is retried alone, so it never
    takes the others of its transaction down with it; its error is raised, once, by the next
    :meth:`write` or :meth:`flush`.
    Readers call :meth:`flush` first to see every write queued before them. The thread ends when
    it has been idle for ``IDLE_S`` (so a process exits with every write committed) and starts
    again with the next write.
    """

    IDLE_S = 0.1
    _MAX_BATCH = 4096

    def __init__(
        self,
        path: Path,
        *,
        what: str,
        foreign_keys: bool = False,
        on_commit: Callable[[list[tuple[str, tuple[object, ...]]]], None] | None = None,
    ) -> None:
        """Prepare a writer; its connection and thread start with the first write.

        ``on_commit`` is called on the writer's thread with each batch once it is committed
        (or has failed), so an owner can keep an in-memory view of writes still in flight.
        """
        self.path = path
        self.what = what
        self._foreign_keys = foreign_keys
        self._on_commit = on_commit
        self._queue: queue.Queue[tuple[str, tuple[object, ...]] | None] = queue.Queue()
        """Statements to write; ``None`` tells the thread to end (sent by :meth:`close`)."""
        self._failure: SQLiteError | None = None
        self._state = threading.Lock()
        """Guards ``_thread`` and ``_db``: a write never lands in a queue whose thread is ending."""
        self._thread: threading.Thread | None = None
        self._db: sqlite3.Connection | None = None
        self._closed = False
        self._queued = 0
        """Statements queued so far; the thread has committed (or failed) the first ``_done`` of them."""
        self._done = 0
        self._waiting: list[tuple[int, Callable[[], None]]] = []
        """(statements queued before it, callback) for each :meth:`after_commit` still waiting."""

    def write(self, sql: str, params: tuple[object, ...]) -> None:
        """Queue one statement; then raises the error of an earlier write that failed, if one did."""
        with self._state:
            if self._closed:
                raise SQLiteError(f"{self.path}: the {self.what} is closed")
            if self._db is None:
                self._db = connect(self.path, what=self.what, foreign_keys=self._foreign_keys)
            self._queue.put((sql, params))
            self._queued += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name=f"sqlite writer {self.path.name}")
                self._thread.start()
        self._raise_failure()

    def after_commit(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once every write queued so far is committed (or has failed, its error raised later).

        It runs on the writer's thread, or at once on the caller's when nothing is in flight.
        """
        with self._state:
            waiting = self._done < self._queued
            if waiting:
                self._waiting.append((self._queued, callback))
        if not waiting:
            callback()

    def flush(self) -> None:
        """Wait until every queued write is committed; raises the error of one that failed."""
        self._queue.join()
        self._raise_failure()

    def _raise_failure(self) -> None:
        with self._state:
            failure, self._failure = self._failure, None
        if failure is not None:
            raise failure

    def close(self) -> None:
        """Commit what is queued and close the connection; raises the error of a write that failed."""
        try:
            self.flush()
        finally:
            with self._state:
                self._closed = True
                thread, db = self._thread, self._db
                if thread is not None:
                    self._queue.put(None)
            if thread is not None:
                thread.join()
            if db is not None:
                db.close()

    def _work(self) -> None:
        while True:
            try:
                first = self._queue.get(timeout=self.IDLE_S)
            except queue.Empty:
                with self._state:
                    if self._queue.empty():
                        self._thread = None
                        return
                continue
            if first is None:  # closing: every write before it is committed
                self._queue.task_done()
                return
            batch = [first]
            while len(batch) < self._MAX_BATCH and (item := self._next()) is not None:
                batch.append(item)
            try:
                self._commit(batch)
                if self._on_commit is not None:
                    self._on_commit(batch)
            except Exception as exc:  # the thread must live on, or flush() would wait forever
                with self._state:
                    self._failure = self._failure or SQLiteError(f"{self.path}: writing the {self.what} failed: {exc}")
            finally:
                for _ in batch:
                    self._queue.task_done()
                self._settled(len(batch))

    def _settled(self, count: int) -> None:
        """Count ``count`` more statements committed or failed, and call the callbacks waiting for them."""
        with self._state:
            self._done += count
            ready = [callback for queued, callback in self._waiting if queued <= self._done]
            self._waiting = [(queued, callback) for queued, callback in self._waiting if queued > self._done]
        for callback in ready:
            callback()

    def _next(self) -> tuple[str, tuple[object, ...]] | None:
        """The next queued statement, if one is waiting (``None`` itself, from close, stays queued)."""
        try:
            item = self._queue.get_nowait()
        except queue.Empty:
            return None
        if item is None:
            self._queue.put(None)
            self._queue.task_done()
        return item

    def _commit(self, batch: list[tuple[str, tuple[object, ...]]]) -> None:
        db = self._db
        if db is None:
            return
        try:
            with transaction(db):
                for sql, params in batch:
                    db.execute(sql, params)
            return
        except sqlite3.Error:
            pass  # one statement failed: apply them one by one to keep the others and name the culprit
        for sql, params in batch:
            try:
                db.execute(sql, params)
            except sqlite3.Error as exc:
                with self._state:
                    self._failure = self._failure or error(self.path, self.what, exc, sql)


def _has_shm(path: Path) -> bool:
    return Path(f"{path}-shm").exists()


@contextmanager
def transaction(db: sqlite3.Connection) -> Iterator[None]:
    """``BEGIN IMMEDIATE`` … ``COMMIT``, or ``ROLLBACK`` when the block raises.

    ``IMMEDIATE`` takes the write lock at once, so a read-then-write inside the block cannot
    race another process's write.
    """
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


@contextmanager
def translate(path: Path, what: str, sql: str | None = None) -> Iterator[None]:
    """Turn a ``sqlite3.Error`` raised in the block into a one-line :class:`SQLiteError`."""
    try:
        yield
    except sqlite3.Error as exc:
        raise error(path, what, exc, sql) from exc


def error(path: Path, what: str, exc: sqlite3.Error, sql: str | None = None) -> SQLiteError:
    """The one-line message for ``exc``, raised by a statement ``sql`` on the ``what`` at ``path``."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    text = str(exc)
    tables = sorted(set(_TABLES.findall(sql))) if sql else []
    where = f" (table {', '.join(tables)})" if tables else ""
    if name == "SQLITE_NOTADB":
        return DamagedDatabaseError(f"{path}: not a readable ebmeval {what} ({text})")
    if name.startswith("SQLITE_CORRUPT") or "malformed" in text:
        return DamagedDatabaseError(f"{path}: the {what} is damaged{where}: {text}; {_repair(path, what)}")
    if name.startswith("SQLITE_FULL"):
        return SQLiteError(f"{path}: the disk is full (or the {what} reached its size limit); free space and run again")
    if (
        name.startswith("SQLITE_READONLY")
        or "readonly" in text
        or (name.startswith("SQLITE_CANTOPEN") and _read_only(path))
    ):
        return SQLiteError(f"{path}: the {what} is read-only here ({text}); writing needs a writable file and folder")
    if name.startswith("SQLITE_CANTOPEN"):
        return SQLiteError(f"{path}: cannot open the {what} ({text})")
    if name.startswith("SQLITE_BUSY") or name.startswith("SQLITE_LOCKED"):
        return SQLiteError(f"{path}: the {what} stayed locked by another process for {BUSY_TIMEOUT_S:.0f} s ({text})")
    if name.startswith("SQLITE_IOERR"):
        return SQLiteError(f"{path}: input/output error on the {what} ({text})")
    return SQLiteError(f"{path}: {what} error{where}: {text}")


def _read_only(path: Path) -> bool:
    """Whether the file, or the folder its journal files go in, cannot be written (a read-only mount …)."""
    return not os.access(path.parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK))


def _repair(path: Path, what: str) -> str:
    if what == "run store":
        return (
            f"`ebmeval store check {path}` lists the damage, "
            f"`ebmeval store salvage {path} --out NEW` copies what is readable"
        )
    return "move it aside (ebmeval starts a new, empty one) or restore it from a backup"


def quick_check(db: sqlite3.Connection, path: Path, what: str) -> None:
    """Raise :class:`DamagedDatabaseError` unless ``PRAGMA quick_check`` finds the file sound.

    ``quick_check`` reads every page (O(file size)) but skips the index-content cross-checks
    of ``integrity_check``.
    """
    try:
        problems = [str(r[0]) for r in db.execute("PRAGMA quick_check(20)").fetchall()]
    except sqlite3.DatabaseError as exc:  # damage that stops the check itself
        if getattr(exc, "sqlite_errorname", "").startswith(("SQLITE_BUSY", "SQLITE_LOCKED", "SQLITE_IOERR")):
            raise error(path, what, exc) from exc
        problems = [str(exc)]
    if problems != ["ok"]:
        damaged = damaged_tables(db)
        where = f" (table {', '.join(damaged)})" if damaged else ""
        raise DamagedDatabaseError(f"{path}: the {what} is damaged{where}: {problems[0]}; {_repair(path, what)}")


def check_indexes(db: sqlite3.Connection, path: Path, what: str) -> None:
    """Raise :class:`DamagedDatabaseError` when an index holds a different number of rows than its table.

    A lost write can leave an old index page in place that ``quick_check`` accepts: lookups then
    miss rows the table holds, and ``INSERT OR IGNORE`` inserts them again. Counting every table
    and each of its (non-partial) indexes catches that; it reads each b-tree once.
    """
    try:
        indexes = db.execute(
            "SELECT name, tbl_name FROM sqlite_master"
            " WHERE type = 'index' AND (sql IS NULL OR sql NOT LIKE '% WHERE %')"  # a partial index holds fewer
        ).fetchall()
        rows: dict[str, int] = {}
        for index, table in indexes:
            if table not in rows:
                rows[table] = db.execute(f'SELECT count(*) FROM "{table}" NOT INDEXED').fetchone()[0]
            found = db.execute(f'SELECT count(*) FROM "{table}" INDEXED BY "{index}"').fetchone()[0]
            if found != rows[table]:
                raise DamagedDatabaseError(
                    f"{path}: the {what} is damaged (table {table}): its index {index} lists {found} of its "
                    f"{rows[table]} rows; {_repair(path, what)}"
                )
    except sqlite3.Error as exc:
        raise error(path, what, exc) from exc


def damaged_tables(db: sqlite3.Connection) -> list[str]:
    """Tables (of their own rows or an index on them) that cannot be read to the end."""
    try:
        objects = db.execute(
            "SELECT type, name, tbl_name FROM sqlite_master WHERE type IN ('table', 'index')"
        ).fetchall()
    except sqlite3.Error:
        return ["sqlite_master"]
    damaged: set[str] = set()
    for kind, name, table in objects:
        if table in damaged or name.startswith("sqlite_sequence"):
            continue
        try:
            if kind == "table":
                for _ in db.execute(f'SELECT * FROM "{name}"'):
                    pass
            else:
                db.execute(f'SELECT count(*) FROM "{table}" INDEXED BY "{name}"').fetchall()
        except sqlite3.Error:
            damaged.add(table)
    return sorted(damaged)
