"""A run store on a bad day: damaged pages, a read-only filesystem, a full disk, a mistyped path.

Every store is written by real ``ebmeval run`` processes (the ``scripted`` model on PubMedQA)
and every command runs as a real CLI process; the messages must be one line, exit 2, no traceback.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from ._support import EBMEVAL

STORE = "runs/ebmeval.sqlite"
"""Where the CLI keeps runs by default (relative to the working folder)."""
PAGE_DAMAGE = b"\xa5\x17" * 2048  # a fixed "random" page, so a failure replays exactly


def cli(*args: str, cwd: Path, user: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``ebmeval ARGS`` in ``cwd`` (as another user when ``user`` is a ``setpriv`` prefix)."""
    env = {**os.environ, "EBMEVAL_CACHE_DIR": str(cwd / "cache"), "COLUMNS": "80"}
    command = [*(user or []), EBMEVAL, *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def one_line_error(done: subprocess.CompletedProcess[str], *needles: str) -> str:
    """The error line of a command that failed with a usage error; checks the needles are in it.

    The line must be the only one that is not progress-bar output, and stderr must hold no traceback.
    """
    lines = [line for line in done.stderr.strip().splitlines() if not line.startswith("pubmedqa ")]
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "ExceptionGroup" not in done.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def write_runs(folder: Path) -> tuple[Path, str, str]:
    """A store with two runs of 30 samples (run A, then run B), written by the CLI."""
    ids = []
    for answer in ("A", "B"):
        done = cli("run", "--task", "pubmedqa", "--model", f"scripted:{answer}", "--limit", "30", "--json", cwd=folder)
        assert done.returncode == 0, done.stderr
        ids.append(json.loads(done.stdout)["run_id"])
    return folder / STORE, ids[0], ids[1]


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    return write_runs(tmp_path_factory.mktemp("written"))


def leaf_pages(store: Path, table: str) -> list[int]:
    """Leaf pages of ``table``'s b-tree in key order (rowid order: the newest rows are on the last)."""
    with sqlite3.connect(store) as db:
        rows = db.execute(
            "SELECT pageno FROM dbstat WHERE name = ? AND pagetype = 'leaf' ORDER BY path", (table,)
        ).fetchall()
    return [r[0] for r in rows]


def root_page(store: Path, table: str) -> int:
    with sqlite3.connect(store) as db:
        return int(db.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0])


def damage(store: Path, pages: list[int]) -> None:
    """Overwrite whole pages of the (checkpointed, closed) store file."""
    with sqlite3.connect(store) as db:
        size = int(db.execute("PRAGMA page_size").fetchone()[0])
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    with store.open("r+b") as handle:
        for page in pages:
            handle.seek((page - 1) * size)
            handle.write(PAGE_DAMAGE[:size])


@pytest.fixture
def copied(written: tuple[Path, str, str], tmp_path: Path) -> tuple[Path, str, str]:
    source, run_a, run_b = written
    (tmp_path / "runs").mkdir()
    shutil.copy(source, tmp_path / STORE)
    return tmp_path / STORE, run_a, run_b


def b_only_generation_pages(store: Path, run_b: str) -> list[int]:
    """The last generation leaf pages, which hold only rows of run B (the newer run)."""
    with sqlite3.connect(store) as db:
        first_b = db.execute("SELECT min(rowid) FROM generations WHERE run_id = ?", (run_b,)).fetchone()[0]
        total = db.execute("SELECT max(rowid) FROM generations").fetchone()[0]
    pages = leaf_pages(store, "generations")
    assert total - first_b + 1 == 30 and len(pages) > 8
    return pages[-4:]  # 4 pages hold at most 8 of run B's 30 rows (2 rows a page at most)


READERS = [
    ("show", "{b}"),
    ("show", "{b}", "--json"),
    ("export", "{b}", "--out", "out.jsonl"),
    ("export", "{b}", "--format", "csv", "--out", "out.csv"),
    ("report", "{a}", "{b}", "--out", "report"),
    ("compare", "{a}", "{b}"),
    ("compare", "{a}", "{b}", "--json"),
]


@pytest.mark.slow
def test_damaged_generation_pages_are_one_line_errors_naming_the_table(copied: tuple[Path, str, str]) -> None:
    store, run_a, run_b = copied
    damage(store, b_only_generation_pages(store, run_b))
    folder = store.parent.parent
    for command in READERS:
        args = [part.format(a=run_a, b=run_b) for part in command]
        one_line_error(
            cli(*args, cwd=folder), "ebmeval.sqlite: the run store is damaged (table generations)", "salvage"
        )
    # writers check the whole file when they open it, before touching anything
    rerun = cli("run", "--task", "pubmedqa", "--model", "scripted:A", "--limit", "30", cwd=folder)
    one_line_error(rerun, "damaged (table generations)", "ebmeval store check")
    rescore = cli("rescore", run_a, "--scorer", "accuracy", cwd=folder)
    one_line_error(rescore, "damaged (table generations)")
    # the undamaged run still reads in full, from pages the damage did not reach
    shown = cli("show", run_a, "--json", cwd=folder)
    assert shown.returncode == 0 and json.loads(shown.stdout)["generations"] == 30
    checked = cli("store", "check", STORE, cwd=folder)
    assert checked.returncode == 1 and "damaged table: generations" in checked.stdout


@pytest.mark.slow
def test_a_damaged_runs_table_stops_every_reading_command_with_one_line(copied: tuple[Path, str, str]) -> None:
    store, run_a, run_b = copied
    damage(store, [root_page(store, "runs")])
    for command in [*READERS, ("list", "runs"), ("list", "runs", "--json"), ("show", "{a}", "--errors")]:
        args = [part.format(a=run_a, b=run_b) for part in command]
        one_line_error(cli(*args, cwd=store.parent.parent), "damaged (table runs)")


@pytest.mark.slow
def test_salvage_recovers_the_undamaged_run_row_for_row_and_says_what_was_lost(
    copied: tuple[Path, str, str],
) -> None:
    store, run_a, run_b = copied
    with sqlite3.connect(store) as db:
        before = {
            table: db.execute(f"SELECT * FROM {table} WHERE run_id = ? ORDER BY rowid", (run_a,)).fetchall()
            for table in ("runs", "generations", "steps", "score_sets", "scores")
        }
    damage(store, b_only_generation_pages(store, run_b))
    folder = store.parent.parent
    done = cli("store", "salvage", STORE, "--out", "saved.sqlite", "--json", cwd=folder)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["lost"] is True
    assert report["runs"][run_a] == 30 and 22 <= report["runs"][run_b] < 30
    tables = {t["table"]: t for t in report["tables"]}
    assert tables["generations"]["whole"] is False and tables["runs"]["copied"] == 2
    with sqlite3.connect(folder / "saved.sqlite") as db:
        after = {
            table: db.execute(f"SELECT * FROM {table} WHERE run_id = ? ORDER BY rowid", (run_a,)).fetchall()
            for table in before
        }
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert after == before
    shown = cli("show", run_a, "--store", "saved.sqlite", "--json", cwd=folder)
    assert shown.returncode == 0 and json.loads(shown.stdout)["generations"] == 30
    again = cli("store", "salvage", STORE, "--out", "saved.sqlite", cwd=folder)
    one_line_error(again, "already exists")


def test_salvage_of_a_sound_store_copies_everything(written: tuple[Path, str, str], tmp_path: Path) -> None:
    store, run_a, run_b = written
    done = cli("store", "salvage", str(store), "--out", "saved.sqlite", cwd=tmp_path)
    assert done.returncode == 0 and "nothing lost" in done.stdout
    assert f"run {run_a}: 30 generations" in done.stdout and f"run {run_b}: 30 generations" in done.stdout
    checked = cli("store", "check", "saved.sqlite", cwd=tmp_path)
    assert checked.returncode == 0 and checked.stdout.strip() == "saved.sqlite: ok"


@pytest.mark.parametrize(
    "args",
    [
        ("list", "runs", "--store", "{p}"),
        ("show", "abcd", "--store", "{p}"),
        ("export", "abcd", "--store", "{p}"),
        ("report", "abcd", "--out", "r", "--store", "{p}"),
        ("compare", "abcd", "efgh", "--store", "{p}"),
        ("rescore", "abcd", "--scorer", "accuracy", "--store", "{p}"),
        ("store", "check", "{p}"),
        ("store", "salvage", "{p}", "--out", "new.sqlite"),
    ],
)
@pytest.mark.parametrize("mistyped", ["runz.sqlite", "no-such-folder/runs.sqlite"])
def test_reading_a_mistyped_store_path_is_one_line_and_creates_nothing(
    tmp_path: Path, args: tuple[str, ...], mistyped: str
) -> None:
    done = cli(*[a.format(p=mistyped) for a in args], cwd=tmp_path)
    one_line_error(done, f"{mistyped}: no such run store")
    assert not [p.name for p in tmp_path.iterdir() if "sqlite" in p.name or p.name in ("no-such-folder", "runs")]


def test_a_writer_whose_folder_cannot_be_made_gets_one_line(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder")
    done = cli(
        "run",
        "--task",
        "pubmedqa",
        "--model",
        "scripted:A",
        "--limit",
        "2",
        "--store",
        "file/runs.sqlite",
        cwd=tmp_path,
    )
    one_line_error(done, "file/runs.sqlite: cannot create the folder of the run store")


@pytest.fixture
def read_only_store(written: tuple[Path, str, str]) -> Iterator[tuple[Path, list[str] | None]]:
    """The written store as a 0444 file in a 0555 folder, and the command prefix that runs as ``nobody``.

    The stand-in for a read-only filesystem: root ignores file modes, so as root the commands
    run as ``nobody`` (``setpriv``, which drops every capability).
    """
    source, _, _ = written
    top = Path(tempfile.mkdtemp(prefix="ebmeval-ro-"))
    try:
        folder = top / "store"
        folder.mkdir()
        shutil.copy(source, folder / "ebmeval.sqlite")
        (top / "work").mkdir()
        os.chmod(top, 0o755)
        os.chmod(top / "work", 0o777)
        os.chmod(folder / "ebmeval.sqlite", 0o444)
        os.chmod(folder, 0o555)
        drop = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if os.geteuid() == 0 else None
        yield folder / "ebmeval.sqlite", drop
    finally:
        os.chmod(top / "store", 0o755)
        shutil.rmtree(top)


def test_a_store_on_a_read_only_filesystem_can_be_inspected_and_refuses_writes_in_one_line(
    read_only_store: tuple[Path, list[str] | None], written: tuple[Path, str, str]
) -> None:
    store, drop = read_only_store
    _, run_a, run_b = written
    work = store.parent.parent / "work"
    listed = cli("list", "runs", "--store", str(store), "--json", cwd=work, user=drop)
    assert listed.returncode == 0, listed.stderr
    assert {r["run_id"] for r in json.loads(listed.stdout)} == {run_a, run_b}
    shown = cli("show", run_a, "--store", str(store), "--json", cwd=work, user=drop)
    assert shown.returncode == 0 and json.loads(shown.stdout)["generations"] == 30
    exported = cli("export", run_a, "--store", str(store), "--out", "a.jsonl", cwd=work, user=drop)
    assert exported.returncode == 0 and len((work / "a.jsonl").read_text().splitlines()) == 30
    reported = cli("report", run_a, run_b, "--store", str(store), "--out", "report", cwd=work, user=drop)
    assert reported.returncode == 0 and (work / "report" / "report.md").exists()
    assert cli("store", "check", str(store), cwd=work, user=drop).returncode == 0
    rerun = cli(
        "run", "--task", "pubmedqa", "--model", "scripted:C", "--limit", "2", "--store", str(store),
        cwd=work, user=drop,
    )  # fmt: skip
    one_line_error(rerun, "run store is read-only here")
    assert sorted(p.name for p in store.parent.iterdir()) == ["ebmeval.sqlite"]


FULL_DISK = textwrap.dedent(
    """
    import sys
    from ebmeval._util import sqlite
    from ebmeval.cli import main

    opened = sqlite.connect

    def connect(path, **options):
        db = opened(path, **options)
        if path.name == "ebmeval.sqlite" and not options.get("read_only"):
            db.execute("PRAGMA max_page_count = 40")  # the disk fills up after the schema and a few samples
        return db

    sqlite.connect = connect
    main()
    """
)


def test_a_full_disk_is_one_line_and_the_run_can_resume_once_there_is_room(tmp_path: Path) -> None:
    """The stand-in for a full disk is ``PRAGMA max_page_count``: SQLite then fails with SQLITE_FULL."""
    env = {**os.environ, "EBMEVAL_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "80"}
    args = ["run", "--task", "pubmedqa", "--model", "scripted:A", "--limit", "60", "--concurrency", "8", "--json"]
    done = subprocess.run(
        [sys.executable, "-c", FULL_DISK, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    one_line_error(done, "ebmeval.sqlite: the disk is full")
    with sqlite3.connect(tmp_path / STORE) as db:
        stored = db.execute("SELECT count(*) FROM generations").fetchone()[0]
        assert 0 < stored < 60
        assert db.execute("SELECT status FROM runs").fetchall() == [("interrupted",)]
        assert db.execute("SELECT count(*) FROM locks").fetchone()[0] == 0
    resumed = cli(*args, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["invocation"]["resumed_samples"] == stored


def test_the_response_cache_and_negation_store_report_damage_the_same_way(tmp_path: Path) -> None:
    from ebmeval._util.sqlite import DamagedDatabaseError
    from ebmeval.models import ModelOutput, ResponseCache
    from ebmeval.synthesis._negation import Negation, NegationStore

    (tmp_path / "garbage.sqlite").write_bytes(PAGE_DAMAGE * 4)
    for opener, what in ((ResponseCache, "response cache"), (NegationStore, "negation store")):
        with pytest.raises(DamagedDatabaseError, match=rf"garbage.sqlite: not a readable ebmeval {what}"):
            opener(tmp_path / "garbage.sqlite")

    cache = ResponseCache(tmp_path / "responses.sqlite")
    for i in range(50):
        cache.put(f"key{i}", ModelOutput(model="m", text="an answer " * 100))
    cache.close()
    negations = NegationStore(tmp_path / "negations.sqlite")
    for i in range(50):
        negations.put(
            Negation(
                abstract_hash=f"h{i}", negator="m", negator_key="k", prompt="p", document_id="d",
                abstract="text " * 100, negated="txet " * 100, created_at="now",
            )
        )  # fmt: skip
    negations.close()
    damage(tmp_path / "responses.sqlite", leaf_pages(tmp_path / "responses.sqlite", "responses"))
    damage(tmp_path / "negations.sqlite", leaf_pages(tmp_path / "negations.sqlite", "negations"))
    with pytest.raises(DamagedDatabaseError, match=r"the response cache is damaged \(table responses\).*move it aside"):
        ResponseCache(tmp_path / "responses.sqlite").get("key49")
    with pytest.raises(DamagedDatabaseError, match=r"the negation store is damaged \(table negations\)"):
        list(NegationStore(tmp_path / "negations.sqlite"))


@contextmanager
def tmpfs(folder: Path, size: str) -> Iterator[Path]:
    """A ``size`` tmpfs mounted at ``folder`` (skips where mounting is not allowed)."""
    folder.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True)


@pytest.mark.parametrize("size", ["400k", "600k", "1m"])
def test_a_run_on_a_really_full_disk_ends_interrupted_with_no_lock(tmp_path: Path, size: str) -> None:
    """A tmpfs that fills up mid-run: the run is left ``interrupted``, its lock released, in one line."""
    args = ["run", "--task", "pubmedqa", "--model", "scripted:A", "--limit", "600", "--concurrency", "8"]
    with tmpfs(tmp_path / "disk", size) as disk:
        done = cli(*args, "--store", str(disk / "runs.sqlite"), cwd=tmp_path)
        one_line_error(done, "runs.sqlite: the disk is full")
        with sqlite3.connect(f"file:{disk / 'runs.sqlite'}?mode=ro", uri=True) as db:
            assert db.execute("SELECT status FROM runs").fetchall() == [("interrupted",)]
            assert db.execute("SELECT count(*) FROM locks").fetchone()[0] == 0
            stored = db.execute("SELECT count(*) FROM generations").fetchone()[0]
        assert 0 < stored < 600


def test_a_store_on_a_read_only_mount_says_read_only(written: tuple[Path, str, str], tmp_path: Path) -> None:
    """A real read-only filesystem (a tmpfs remounted ``ro``): new and existing stores, in one line each."""
    source, _, _ = written
    with tmpfs(tmp_path / "ro", "4m") as mount:
        shutil.copy(source, mount / "ebmeval.sqlite")  # checkpointed and closed: no -wal or -shm beside it
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
        args = ["run", "--task", "pubmedqa", "--model", "scripted:C", "--limit", "2"]
        for name in ("ebmeval.sqlite", "new.sqlite"):
            done = cli(*args, "--store", str(mount / name), cwd=tmp_path)
            one_line_error(done, f"{name}: the run store is read-only here")
        listed = cli("list", "runs", "--store", str(mount / "ebmeval.sqlite"), "--json", cwd=tmp_path)
        assert listed.returncode == 0 and len(json.loads(listed.stdout)) == 2
