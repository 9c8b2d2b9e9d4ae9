"""A dense index build reports the documents encoded as it goes, through the API and on the CLI's stderr."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.cli import ebmeval
from tests.rag.test_dense_disk import varied_corpus

from ebmeval.rag import build_index
from ebmeval.rag.corpus import write_store


def test_dense_build_reports_progress_within_a_shard(tiny_encoder: Path, tmp_path: Path) -> None:
    write_store(varied_corpus(300), tmp_path / "corpus").close()
    seen: list[tuple[int, int]] = []
    build_index(
        tmp_path / "corpus",
        tmp_path / "ix",
        "dense",
        model=str(tiny_encoder),
        batch_size=16,
        progress=lambda done, total: seen.append((done, total)),
    )
    # one shard (the default holds 50,000 documents), yet the count moves every few batches
    assert seen[0] == (0, 300) and seen[-1] == (300, 300)
    assert [done for done, _ in seen] == sorted(done for done, _ in seen) and len(seen) >= 5


def test_bm25_build_takes_the_callback_without_encoding(tmp_path: Path) -> None:
    write_store(varied_corpus(20), tmp_path / "corpus").close()
    seen: list[tuple[int, int]] = []
    build_index(tmp_path / "corpus", tmp_path / "ix", "bm25", progress=lambda d, t: seen.append((d, t)))
    assert seen == []


def test_cli_dense_build_shows_progress_on_stderr_once_when_not_a_terminal(tiny_encoder: Path, tmp_path: Path) -> None:
    write_store(varied_corpus(120), tmp_path / "corpus").close()
    done = ebmeval(
        "index", "build", "corpus", "--out", "ix", "--retriever", "dense",
        "--option", f"model={tiny_encoder}", "--option", "batch_size=16", cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    bars = [line for line in done.stderr.splitlines() if line.startswith("encoding corpus")]
    assert len(bars) == 1 and "120/120" in bars[0] and "documents/s" in bars[0]
    assert "\x1b[" not in done.stderr and "120/120" not in done.stdout  # no redraws; stdout keeps the results
    quiet = ebmeval(
        "index", "build", "corpus", "--out", "ix2", "--retriever", "dense", "--quiet",
        "--option", f"model={tiny_encoder}", cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert quiet.returncode == 0 and "encoding corpus" not in quiet.stderr and "built dense index" in quiet.stderr
