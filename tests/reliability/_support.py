"""Shared pieces of the reliability tests: a question file, the delay server, the CLI, store checks."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
EBMEVAL = str(Path(sys.executable).parent / "ebmeval")
SAMPLE_TAG = re.compile(rb"\[(q\d{4})\]")
"""Every question carries its id as ``[q0007]`` so a proxy can tell which sample a request is for."""


def load_delay_server() -> ModuleType:
    """``benchmarks/_delay_server.py`` as a module (``benchmarks/`` is not a package)."""
    spec = importlib.util.spec_from_file_location("_delay_server", ROOT / "benchmarks" / "_delay_server.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("_delay_server", module)
    spec.loader.exec_module(module)
    return module


@contextmanager
def delay_server(folder: Path, delay: float = 0.02) -> Iterator[str]:
    """The root URL of a delay server answering after ``delay`` seconds, run in its own process."""
    port_file = folder / "port"
    server = subprocess.Popen(
        [sys.executable, str(ROOT / "benchmarks" / "_delay_server.py"), "--delay", str(delay)]
        + ["--port-file", str(port_file)],
        stdout=subprocess.DEVNULL,
    )
    try:
        if not wait_for(port_file.exists, 60):
            raise RuntimeError("the delay server did not start")
        yield f"http://127.0.0.1:{port_file.read_text()}"
    finally:
        server.terminate()
        server.wait(10)


def write_questions(path: Path, n: int) -> Path:
    """``n`` four-option questions in the ``mcq-file`` format; the answer is always A."""
    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            record = {
                "id": f"q{i:04d}",
                "question": f"[q{i:04d}] Which option?",
                "options": list("wxyz"),
                "answer": "A",
            }
            out.write(json.dumps(record) + "\n")
    return path


def sample_of(body: bytes) -> str | None:
    """The sample id a request body is about."""
    found = SAMPLE_TAG.search(body)
    return found.group(1).decode() if found else None


def run_args(questions: Path, url: str, store: Path, *, n: int, concurrency: int = 4, **model_args: Any) -> list[str]:
    """``ebmeval run`` arguments for ``n`` questions against the server at ``url``."""
    args = [EBMEVAL, "run", "--task", "mcq-file", "--task-arg", f"path={questions}"]
    args += ["--model", f"openai-compatible:delay@{url}/v1", "--limit", str(n), "--concurrency", str(concurrency)]
    args += ["--store", str(store), "--no-cache", "--json"]
    for key, value in model_args.items():
        args += ["--model-arg", f"{key}={value}"]
    return args


def cli_env(tmp: Path) -> dict[str, str]:
    """The environment of a CLI run: a private response cache, no proxies."""
    return {**os.environ, "EBMEVAL_CACHE_DIR": str(tmp / "cache"), "NO_PROXY": "*", "COLUMNS": "200"}


def read_only(store: Path) -> sqlite3.Connection:
    """A read-only connection, so checking a store cannot repair or change it."""
    return sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=30)


def integrity(store: Path) -> str:
    """SQLite's ``PRAGMA integrity_check`` verdict (``ok`` when sound)."""
    with read_only(store) as db:
        return str(db.execute("PRAGMA integrity_check").fetchone()[0])


def counts(store: Path, table: str) -> tuple[int, int]:
    """(rows, distinct (run, sample, epoch)) of ``generations`` or ``scores``; 0s if the store is new."""
    if not store.exists():
        return 0, 0
    with read_only(store) as db:
        try:
            row = db.execute(
                f"SELECT count(*), count(DISTINCT run_id || '/' || sample_id || '/' || epoch) FROM {table}"
            ).fetchone()
        except sqlite3.OperationalError:
            return 0, 0
    return int(row[0]), int(row[1])


def spawn(args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    """Start a CLI process with its output captured and SIGHUP at its default.

    A test suite run under ``nohup`` would otherwise hand on an ignored SIGHUP, which the CLI
    keeps ignored by design.
    """
    return subprocess.Popen(
        args,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL),
    )


def wait_for(predicate: Any, timeout: float, interval: float = 0.05) -> bool:
    """Poll ``predicate()`` until true or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return False
