from __future__ import annotations

import importlib.util
import json
import re
import socket
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

from ebmeval.annotate import StudyInvitations, create_study

pytest.importorskip("fastapi", reason="the annotation app needs the 'web' extra")

# System names that occur nowhere in the item texts, so a leak in any response is detectable.
SYSTEMS = ("zephyr-sysname-alpha", "quokka-sysname-beta", "narwhal-sysname-gamma")

CSRF_RE = re.compile(r'name="csrf_token" value="([^"]+)"')
CANDIDATE_RE = re.compile(r'data-candidate="([^"]+)"')


def write_items(path: Path, n: int = 6, systems: tuple[str, ...] = SYSTEMS) -> Path:
    with path.open("w") as f:
        for i in range(n):
            f.write(
                json.dumps(
                    {
                        "item_id": f"item-{i}",
                        "question": f"Does drug {i} reduce mortality in sepsis?",
                        "reference": f"Drug {i} reduced 28-day mortality (RR 0.8{i}, 95% CI 0.70-0.95).",
                        "candidates": [
                            {"system": s, "text": f"Candidate text {j} for item {i}: mortality fell by {10 + j}%."}
                            for j, s in enumerate(systems)
                        ],
                        "sources": [{"id": f"pmid{i}", "title": f"Trial {i}", "text": f"Abstract of trial {i}."}],
                    }
                )
                + "\n"
            )
    return path


def write_calibration(path: Path, n: int = 1) -> Path:
    """``n`` gold examples (answers 5 and 0; the second response reverses the effect)."""
    lines = [
        {
            "reference": f"Aspirin reduced stroke (RR 0.7{i}).",
            "candidates": [
                {"text": f"Aspirin reduced stroke risk by about a fifth (example {i}).", "gold": {"score": 5}},
                {"text": "Aspirin increased stroke risk.", "gold": {"score": 0}},
            ],
            "justification": "The second response reverses the direction of the effect.",
            "highlights": ["increased stroke risk"],
        }
        for i in range(n)
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


@dataclass
class StudySetup:
    db: str
    invitations: StudyInvitations
    items: Path


@pytest.fixture
def rubric_study(tmp_path: Path) -> StudySetup:
    db = str(tmp_path / "annotate.db")
    items = write_items(tmp_path / "items.jsonl")
    inv = create_study(
        db,
        slug="rubric-study",
        form="rubric",
        annotators=["ann1", "ann2", "ann3"],
        k=2,
        files=[items],
        calibration=write_calibration(tmp_path / "gold.jsonl", n=3),
        calibration_size=1,
        seed=7,
    )
    return StudySetup(db, inv, items)


def csrf_of(html: str) -> str:
    match = CSRF_RE.search(html)
    assert match, "no CSRF token on the page"
    return match.group(1)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def load_benchmark() -> ModuleType:
    """benchmarks/annotate_load.py, which also provides the throwaway PostgreSQL cluster."""
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "annotate_load.py"
    spec = importlib.util.spec_from_file_location("annotate_load", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their annotations through sys.modules
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def load_module() -> ModuleType:
    return load_benchmark()


@pytest.fixture(scope="session")
def postgres_url(load_module: ModuleType) -> Iterator[str]:
    """A throwaway PostgreSQL cluster on 127.0.0.1 (run as the 'postgres' user when we are root)."""
    try:
        context = load_module.throwaway_postgres()
        url = context.__enter__()
    except FileNotFoundError as exc:
        pytest.skip(str(exc))
    try:
        yield url
    finally:
        context.__exit__(None, None, None)
