"""Checking a run store for damage, and copying what is readable out of a damaged one."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from .._util import sqlite
from ._schema import SCHEMA_VERSION
from ._store import RunStore, settled_status

TABLES = ("runs", "generations", "steps", "score_sets", "scores", "errors", "human_scores", "arena_steps")
"""The tables salvage copies, parents first (a row whose run is lost cannot be kept)."""

GIVE_UP_AFTER = 10_000
"""Row-by-row reading stops after this many row ids in a row that neither exist nor fail."""

_WHAT = "run store"


@dataclass
class TableSalvage:
    """What salvage did with one table."""

    table: str
    copied: int = 0
    """Rows copied into the new store."""
    unreadable: int = 0
    """Row ids whose lookup failed on a damaged page (an upper bound on the rows lost)."""
    orphaned: int = 0
    """Rows read but not kept, because their run's row was lost."""
    whole: bool = True
    """The table was read in one scan, without damage."""
    tail_damaged: bool = False
    """The table's last rows could not be read and their number is unknown."""


@dataclass
class SalvageReport:
    """What ``ebmeval store salvage`` recovered and lost."""

    source: Path
    target: Path
    tables: list[TableSalvage] = field(default_factory=list)
    runs: dict[str, int] = field(default_factory=dict)
    """Generations copied per recovered run."""

    @property
    def lost(self) -> bool:
        """Whether anything could not be copied."""
        return any(t.unreadable or t.orphaned or t.tail_damaged for t in self.tables)


def check_store(path: str | Path) -> list[str]:
    """Problems found by ``PRAGMA integrity_check`` in the run store at ``path``, naming damaged tables.

    The store is opened read-only and never changed; ``[]`` means it is sound.
    """
    path = Path(path)
    db = sqlite.connect(path, what=_WHAT, read_only=True)
    try:
        try:
            problems = [str(r[0]) for r in db.execute("PRAGMA integrity_check(100)").fetchall()]
        except sqlite3.DatabaseError as exc:
            problems = [str(exc)]
        if problems == ["ok"]:
            return []
        return [f"damaged table: {t}" for t in sqlite.damaged_tables(db)] + problems
    finally:
        db.close()


def salvage_store(source: str | Path, target: str | Path) -> SalvageReport:
    """Copy every readable row of the run store ``source`` into a new run store ``target``.

    Each table is read in one scan when it can be; when a damaged page stops the scan, it is
    read again row by row (a lookup per row id, which reaches every row not on a damaged page).
    Rows are copied parents first, so rows of a run whose ``runs`` row is lost are counted as
    orphaned and left out. A ``complete`` run that lost generations is ``partial``.
    """
    source, target = Path(source), Path(target)
    if target.exists():
        raise sqlite.SQLiteError(f"{target}: already exists; salvage writes a new store")
    db = sqlite.connect(source, what=_WHAT, read_only=True)
    try:
        try:
            tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            version = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        except sqlite3.DatabaseError as exc:
            raise sqlite.DamagedDatabaseError(
                f"{source}: the store's schema or version page is unreadable ({exc}); nothing can be salvaged"
            ) from exc
        if version is None or int(version[0]) != SCHEMA_VERSION:
            raise sqlite.SQLiteError(
                f"{source}: salvage reads run store schema {SCHEMA_VERSION}, this file has {version and version[0]}"
            )
        report = SalvageReport(source, target)
        out = RunStore(target)
        try:
            for table in TABLES:
                if table in tables:
                    report.tables.append(_copy_table(db, out, table))
            _settle(out, lost=report.lost)
            for run_id, count in out._rows(
                "SELECT r.run_id, count(g.run_id) FROM runs r LEFT JOIN generations g ON g.run_id = r.run_id"
                " GROUP BY r.run_id ORDER BY r.created_at"
            ):
                report.runs[run_id] = int(count)
        finally:
            out.close()
        return report
    finally:
        db.close()


def _settle(out: RunStore, *, lost: bool) -> None:
    """Mark ``partial`` each complete run that lost generations (:func:`settled_status`)."""
    with sqlite.translate(out.path, _WHAT, "UPDATE runs"), sqlite.transaction(out._db):
        for run_id, status in out._db.execute("SELECT run_id, status FROM runs").fetchall():
            settled = settled_status(out._db, run_id, status, lost=lost)
            out._db.execute("UPDATE runs SET status = ? WHERE run_id = ?", (settled, run_id))


def _copy_table(db: sqlite3.Connection, out: RunStore, table: str) -> TableSalvage:
    result = TableSalvage(table)
    columns = [r[1] for r in db.execute(f"PRAGMA table_info({table})")]
    names = ", ".join(columns)
    insert = f"INSERT OR IGNORE INTO {table} ({names}) VALUES ({', '.join('?' * len(columns))})"
    with sqlite.translate(out.path, _WHAT, insert), sqlite.transaction(out._db):
        for row in _readable_rows(db, table, names, result):
            try:
                out._db.execute(insert, row)
            except sqlite3.IntegrityError:  # a foreign key to a lost run
                result.orphaned += 1
            else:
                result.copied += 1
    return result


def _readable_rows(db: sqlite3.Connection, table: str, names: str, result: TableSalvage) -> list[tuple[object, ...]]:
    try:
        return db.execute(f"SELECT {names} FROM {table} ORDER BY rowid").fetchall()
    except sqlite3.DatabaseError:
        result.whole = False
    try:
        last: int | None = db.execute(f"SELECT max(rowid) FROM {table}").fetchone()[0]
    except sqlite3.DatabaseError:
        last = None  # the right edge is damaged: read until GIVE_UP_AFTER ids in a row fail or are absent
    rows: list[tuple[object, ...]] = []
    rowid, failed, missed = 0, 0, 0
    while (rowid < last) if last is not None else (missed < GIVE_UP_AFTER):
        rowid += 1
        try:
            row = db.execute(f"SELECT {names} FROM {table} WHERE rowid = ?", (rowid,)).fetchone()
        except sqlite3.DatabaseError:
            failed, missed = failed + 1, missed + 1
            continue
        if row is None:
            missed += 1
        else:
            rows.append(row)
            result.unreadable += failed
            failed, missed = 0, 0
    if failed and last is None:
        result.tail_damaged = True  # rows after the last readable one are lost; how many is unknown
    else:
        result.unreadable += failed
    return rows
