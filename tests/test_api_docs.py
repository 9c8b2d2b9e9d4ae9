"""docs/api.md is the reference ``scripts/gen_api_docs.py`` generates from the docstrings, and stays so."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

import ebmeval

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "api.md"


@pytest.fixture(scope="module")
def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_api_docs", ROOT / "scripts" / "gen_api_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_page_is_the_generated_one(generator: ModuleType) -> None:
    assert generator.render() == PAGE.read_text(encoding="utf-8"), "run: python scripts/gen_api_docs.py"
    assert generator.main(["--check"]) == 0


def test_a_changed_docstring_makes_the_page_out_of_date(
    generator: ModuleType, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(ebmeval.create_task, "__doc__", "Build a task, said differently.")
    assert "Build a task, said differently." in generator.render()
    assert generator.main(["--check"]) == 1
    assert "docs/api.md is out of date: run python scripts/gen_api_docs.py" in capsys.readouterr().err


def test_every_public_name_and_every_name_extending_md_imports_has_its_entry() -> None:
    page = PAGE.read_text(encoding="utf-8")
    headings = set(re.findall(r"^### `(.+)`$", page, re.M))
    assert {f"ebmeval.{name}" for name in ebmeval.__all__} <= headings
    guide = (ROOT / "docs" / "extending.md").read_text(encoding="utf-8")
    imported = {
        f"{module}.{name.strip()}"
        for module, names in re.findall(r"^from (ebmeval\.[\w.]+) import (.+)$", guide, re.M)
        for name in names.split(",")
    }
    assert "ebmeval.rag.retrievers.IndexedRetriever" in imported and imported <= headings


def test_entries_carry_signature_fields_and_docstring() -> None:
    page = PAGE.read_text(encoding="utf-8")
    run = page[page.index("### `ebmeval.run`") :]
    assert run.startswith("### `ebmeval.run`\n\n```python\ndef run(config: RunConfig, *, task: Task | None = None")
    task = page[page.index("### `ebmeval.Task`") :]
    assert "- `role_defaults: dict[str, str] = field(default_factory=dict)`: Role → model spec" in task
    same = page[page.index("### `ebmeval.tasks.Sample`") :]
    assert same.startswith("### `ebmeval.tasks.Sample`\n\nThe same as [`ebmeval.Sample`](#ebmevalsample).")
    assert ":class:`" not in page and ":func:`" not in page
