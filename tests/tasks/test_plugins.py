"""Tasks from a user's file and components from an installed package (tests/plugin_package)."""

from __future__ import annotations

import ast
import json
import sys
import warnings
from importlib.metadata import EntryPoint, distribution
from pathlib import Path

import pytest

import ebmeval
from ebmeval._util import plugins
from ebmeval._util.errors import ConfigError
from ebmeval.tasks import create_task
from tests.helpers.cli import ebmeval as ebmeval_cli

USER_TASK = '''
from ebmeval import Sample, Task, task
from ebmeval.scorers import accuracy, choice_parser
from ebmeval.workflows import qa_workflow


@task("mine/two-questions")
def two_questions(target: str = "A") -> Task:
    """Two questions of my own."""
    choices = {"A": "yes", "B": "no"}
    samples = [Sample(id=f"q{i}", input=f"Question {i}?", target=target, choices=choices) for i in (1, 2)]
    return Task(name="mine/two-questions", dataset=samples, workflow=qa_workflow(), scorers=[accuracy()],
                parser=choice_parser())
'''


def test_task_defined_in_a_user_file_runs_from_the_cli(tmp_path: Path) -> None:
    (tmp_path / "my_tasks.py").write_text(USER_TASK)
    store = str(tmp_path / "runs.sqlite")
    args = ["run", "--task", "my_tasks.py@mine/two-questions", "--model", "baseline/first-option"]
    done = ebmeval_cli(*args, "--task-arg", "target=B", "--store", store, "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert [m["value"] for m in summary["metrics"] if m["metric"] == "accuracy" and m.get("group") is None] == [0.0]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("absent.py@mine/two-questions", "no task file 'absent.py'"),
        ("my_tasks.py@mine/three-questions", "defines no task 'mine/three-questions' (tasks it defines: mine/two"),
        ("my_tasks.py@", "name the task after '@'"),
        ("taken.py@pubmedqa", "importing 'taken.py' failed: ValueError: task 'pubmedqa' is registered twice"),
    ],
)
def test_task_file_mistakes_are_usage_errors(tmp_path: Path, spec: str, message: str) -> None:
    (tmp_path / "my_tasks.py").write_text(USER_TASK)
    (tmp_path / "taken.py").write_text(USER_TASK.replace("mine/two-questions", "pubmedqa"))
    done = ebmeval_cli("run", "--task", spec, "--model", "baseline/first-option", cwd=tmp_path)
    assert done.returncode == 2 and message in " ".join(done.stderr.split()) and "Traceback" not in done.stderr


def test_task_file_that_fails_to_import_names_the_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "broken.py").write_text("raise RuntimeError('half written')\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match="importing 'broken.py' failed: RuntimeError: half written"):
        create_task("broken.py@anything")


def test_installed_plugin_package_adds_a_task_scorer_provider_and_retriever(tmp_path: Path) -> None:
    try:
        distribution("ebmeval-plugin-example")
    except Exception:  # noqa: BLE001
        pytest.fail("install the example plugin first: pip install --no-deps tests/plugin_package")
    listed = json.loads(ebmeval_cli("list", "tasks", "--json", cwd=tmp_path).stdout)
    assert "example/evidence-quiz" in {row["task"] for row in listed}
    scorers = json.loads(ebmeval_cli("list", "scorers", "--json", cwd=tmp_path).stdout)
    assert "example/reply-length" in {row["scorer"] for row in scorers}
    store = str(tmp_path / "runs.sqlite")
    args = ["run", "--task", "example/evidence-quiz", "--model", "example-constant:A", "--store", store, "--json"]
    done = ebmeval_cli(*args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    values = {(m["scorer"], m["metric"]): m["value"] for m in json.loads(done.stdout)["metrics"] if not m.get("group")}
    assert values[("accuracy", "accuracy")] == pytest.approx(1 / 3)
    assert values[("example/reply-length", "words")] == 1.0

    from ebmeval.rag.retrievers import get_retriever
    from ebmeval.tasks import Document

    docs = [Document(id="a", text="statins lower cholesterol"), Document(id="b", text="aspirin and bleeding")]
    (hits,) = get_retriever("example/word-overlap", docs).retrieve(["do statins lower LDL cholesterol"], 2)
    assert [h.document.id for h in hits] == ["a"]


def test_a_broken_plugin_warns_and_the_others_still_load(monkeypatch: pytest.MonkeyPatch) -> None:
    points = [
        EntryPoint(name="widgets", value="no_such_module_for_ebmeval", group=plugins.GROUP),
        EntryPoint(name="widgets", value="tests.helpers.chat_server", group=plugins.GROUP),
    ]
    monkeypatch.setattr(plugins, "_loaded", set())
    monkeypatch.setattr(plugins, "entry_points", lambda group, name: [p for p in points if p.name == name])
    monkeypatch.delitem(sys.modules, "tests.helpers.chat_server", raising=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert plugins.ensure_plugins("widgets") is True
    assert any("no_such_module_for_ebmeval" in str(w.message) for w in caught)
    assert "tests.helpers.chat_server" in sys.modules
    assert plugins.ensure_plugins("widgets") is False  # once per process


def test_the_task_registry_imports_no_higher_package() -> None:
    """tasks/ is below builtin_tasks/ and scorers/: built-ins come through the plugin loader, not imports."""
    root = Path(ebmeval.__file__).parent / "tasks"
    upward = []
    for path in root.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level >= 2:
                names = [node.module or ""] + [a.name for a in node.names]
                if {"builtin_tasks", "scorers"} & {n.split(".")[0] for n in names}:
                    upward.append(f"{path.name}:{node.lineno}")
    assert upward == []
