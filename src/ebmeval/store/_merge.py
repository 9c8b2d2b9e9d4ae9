"""Combining the stores of a run's shards (``ebmeval run --shard I/N``) into one store."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from .._util import sqlite
from .._util.errors import UsageError
from ._salvage import TABLES
from ._store import RunStore, settled_status

_WHAT = "run store"

STATUS_RANK = {"complete": 0, "partial": 1, "errors": 2, "interrupted": 3, "running": 4}
"""Worse statuses rank higher; a merged run takes the worst status of its sources."""

_ANSWER = ("output", "answer", "parsed", "reasoning")
"""The columns two copies of one generation must agree on."""


@dataclass
class MergeReport:
    """What ``ebmeval store merge`` combined."""

    target: Path
    sources: list[Path]
    runs: dict[str, int] = field(default_factory=dict)
    """Generations of each merged run in the target."""
    copied: dict[str, int] = field(default_factory=dict)
    """Rows added to the target, per table."""
    status: dict[str, str] = field(default_factory=dict)
    """Status of each merged run: ``complete`` only when every source is."""
    provenance_differs: dict[str, list[str]] = field(default_factory=dict)
    """Per run, the sources whose provenance (host, versions …) differs from the kept (first) run row."""


def merge_stores(sources: list[str | Path], target: str | Path) -> MergeReport:
    """Copy every row of the ``sources`` run stores into ``target`` (created when missing).

    Rows are copied with ``INSERT OR IGNORE`` in one transaction, so rows already present
    (another shard's, or a re-merge) are not duplicated. A run id present in two stores must
    have the same ``config_hash`` (the run's identity), and a (run, sample, epoch) answered in
    two stores must have the same output, answer and reasoning (otherwise the shards overlapped
    and answered differently); either refuses the merge with a ``UsageError`` naming both files
    and leaves ``target`` unchanged (or absent, when the merge would have created it). The
    first run row is kept; sources whose provenance differs are reported. A merged run whose
    copies are all ``complete`` or ``partial`` (shards) is ``complete`` when its generations
    cover the pairs the run requested and ``partial`` otherwise (:func:`settled_status`); else
    it takes the worst status (``running`` > ``interrupted`` > ``errors``).
    """
    paths = [Path(s) for s in sources]
    target = Path(target)
    if not paths:
        raise UsageError("store merge needs at least one source store")
    for path in paths:
        if path.resolve() == target.resolve():
            raise UsageError(f"{path}: a source cannot also be the merge target")
    report = MergeReport(target, paths)
    created = not target.exists()
    out = RunStore(target)
    try:
        with sqlite.translate(target, _WHAT), sqlite.transaction(out._db):
            run_origin = {r[0]: target for r in out._db.execute("SELECT run_id FROM runs")}
            gen_origin: dict[tuple[object, ...], Path] = {}
            statuses: dict[str, list[str]] = {}
            for path in paths:
                source = RunStore(path, read_only=True)
                try:
                    _merge_one(source, out._db, run_origin, gen_origin, statuses, report)
                finally:
                    source.close()
            for run_id, seen in statuses.items():
                worst = "complete" if all(s in ("complete", "partial") for s in seen) else max(seen, key=_rank)
                status = settled_status(out._db, run_id, worst)
                out._db.execute("UPDATE runs SET status = ? WHERE run_id = ?", (status, run_id))
                report.status[run_id] = status
            for run_id in statuses:
                count = out._db.execute("SELECT count(*) FROM generations WHERE run_id = ?", (run_id,)).fetchone()
                report.runs[run_id] = int(count[0])
    except BaseException:
        out.close()
        if created:  # a refused merge leaves no new file behind
            for leftover in (target, Path(f"{target}-wal"), Path(f"{target}-shm"), Path(f"{target}-journal")):
                leftover.unlink(missing_ok=True)
        raise
    out.close()
    return report


def _rank(status: str) -> int:
    return STATUS_RANK.get(status, len(STATUS_RANK))


def _merge_one(
    source: RunStore,
    db: sqlite3.Connection,
    run_origin: dict[str, Path],
    gen_origin: dict[tuple[object, ...], Path],
    statuses: dict[str, list[str]],
    report: MergeReport,
) -> None:
    path = source.path
    for run_id, config_hash, provenance, status in source._rows(
        "SELECT run_id, config_hash, provenance, status FROM runs"
    ):
        kept = db.execute("SELECT config_hash, provenance, status FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if kept is not None:
            if kept[0] != config_hash:
                raise UsageError(
                    f"run {run_id} has a different configuration in {path} than in {run_origin[run_id]}; "
                    "only shards of one run can be merged"
                )
            if json.loads(kept[1]) != json.loads(provenance):
                report.provenance_differs.setdefault(run_id, []).append(str(path))
            statuses.setdefault(run_id, [kept[2]])
        else:
            run_origin[run_id] = path
        statuses.setdefault(run_id, []).append(status)
    for table in TABLES:
        columns = [r[1] for r in source._rows(f"PRAGMA table_info({table})")]
        if not columns:
            continue
        if table == "errors":
            columns.remove("id")  # ids are per store; equal rows are kept once
        names = ", ".join(columns)
        insert = f"INSERT OR IGNORE INTO {table} ({names}) VALUES ({', '.join('?' * len(columns))})"
        if table == "errors":
            insert = (
                f"INSERT INTO {table} ({names}) SELECT {', '.join('?' * len(columns))} WHERE NOT EXISTS"
                f" (SELECT 1 FROM errors WHERE {' AND '.join(f'{c} = ?' for c in columns)})"
            )
        added = 0
        for row in source._rows(f"SELECT {names} FROM {table} ORDER BY rowid"):
            params = row + row if table == "errors" else row
            if db.execute(insert, params).rowcount:
                added += 1
            elif table == "generations":
                _same_generation(db, dict(zip(columns, row, strict=True)), path, gen_origin)
            if table == "generations":
                gen_origin.setdefault((row[0], row[1], row[2]), path)
        report.copied[table] = report.copied.get(table, 0) + added


def _same_generation(
    db: sqlite3.Connection, row: dict[str, object], path: Path, gen_origin: dict[tuple[object, ...], Path]
) -> None:
    """Refuse a generation whose (run, sample, epoch) the target holds with a different answer."""
    key = (row["run_id"], row["sample_id"], row["epoch"])
    kept = db.execute(
        f"SELECT {', '.join(_ANSWER)} FROM generations WHERE run_id = ? AND sample_id = ? AND epoch = ?", key
    ).fetchone()
    if kept is not None and tuple(kept) != tuple(row[c] for c in _ANSWER):
        raise UsageError(
            f"sample '{key[1]}' (epoch {key[2]}) of run {key[0]} was answered differently in {path} and in "
            f"{gen_origin.get(key, 'the target store')} (the shards overlapped); nothing was merged"
        )
