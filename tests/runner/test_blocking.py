"""The blocking twins of the async API (``run`` of ``arun`` …) are made from it by one helper."""

from __future__ import annotations

import gc
import inspect
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import ebmeval
from ebmeval._util.errors import UsageError
from ebmeval.arena import arun_arena, run_arena
from ebmeval.runner import RunConfig, arescore, arun, rescore, run
from ebmeval.scorers import ascore_predictions, score_predictions
from tests.helpers.toy import scripted_model, toy_task

TWINS = [(run, arun), (rescore, arescore), (run_arena, arun_arena), (score_predictions, ascore_predictions)]


@pytest.mark.parametrize(("blocking", "coroutine_function"), TWINS, ids=lambda f: f.__name__)
def test_a_blocking_twin_has_the_parameters_and_docstring_of_its_async_function(
    blocking: Callable[..., Any], coroutine_function: Callable[..., Any]
) -> None:
    assert not inspect.iscoroutinefunction(blocking) and inspect.iscoroutinefunction(coroutine_function)
    assert blocking.__name__ == coroutine_function.__name__[1:]
    assert blocking.__module__ == coroutine_function.__module__
    assert inspect.signature(blocking) == inspect.signature(coroutine_function)
    doc = inspect.getdoc(blocking) or ""
    assert doc.startswith(f"The blocking form of :func:`{coroutine_function.__name__}`")
    assert doc.endswith(inspect.getdoc(coroutine_function) or "?")


def test_arguments_that_do_not_bind_are_refused_in_the_blocking_twins_name() -> None:
    """The words Python gives ``run()`` itself, not ``arun()``'s."""
    with pytest.raises(TypeError, match=r"^run\(\) got an unexpected keyword argument 'foo'$"):
        run(None, foo=1)  # type: ignore[arg-type, call-arg]
    with pytest.raises(TypeError, match=r"^rescore\(\) takes 4 positional arguments but 5 were given$"):
        rescore("a", "b", [], {}, 3)  # type: ignore[call-arg]


async def test_inside_a_running_event_loop_rescore_names_its_async_twin(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    config = RunConfig.model_validate({"task": "toy", "store": str(store), "cache": False})
    task = toy_task(2)
    done = await ebmeval.arun(config, task=task, models={"model": scripted_model()})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        message = r"^ebmeval.rescore cannot run inside a running event loop \(a notebook\): use await arescore\(…\)$"
        with pytest.raises(UsageError, match=message):
            rescore(str(store), done.run.run_id, task.scorers, {})
        gc.collect()
    assert not [w for w in caught if "never awaited" in str(w.message)]
    assert (await arescore(str(store), done.run.run_id, task.scorers, {})).resumed == 2


SNIPPET = """
from typing import assert_type

from ebmeval import rescore, run
from ebmeval.arena import run_arena
from ebmeval.runner import Progress, RunConfig, RunResult


def check(config: RunConfig) -> None:
    assert_type(run(config), RunResult)
    assert_type(rescore("runs.sqlite", "r", [], {}, concurrency=2), Progress)
    rescore("runs.sqlite", "r", [], {}, concurrency="2")
    run_arena("runs.sqlite", ["a", "b"])
"""


@pytest.mark.slow
def test_mypy_sees_the_parameters_and_result_of_a_blocking_twin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mypy import api

    (tmp_path / "snippet.py").write_text(SNIPPET, encoding="utf-8")
    monkeypatch.chdir(Path(__file__).parent.parent.parent)  # the configuration's mypy_path is relative to it
    report, _, status = api.run(["--config-file", "pyproject.toml", str(tmp_path / "snippet.py")])
    errors = sorted(line.split(": error: ")[1] for line in report.splitlines() if ": error: " in line)
    assert status == 1 and errors == [
        'Argument "concurrency" has incompatible type "str"; expected "int"  [arg-type]',
        'Missing named argument "judge"  [call-arg]',
    ], report
