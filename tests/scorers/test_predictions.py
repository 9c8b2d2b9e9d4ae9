from __future__ import annotations

from pathlib import Path

import pytest

from ebmeval._util.errors import DataError
from ebmeval.scorers import accuracy, choice_parser, multi_answer, score_predictions
from ebmeval.tasks import Sample, Task
from ebmeval.workflows import qa_workflow

CHOICES = {"A": "yes", "B": "no", "C": "maybe"}


def single_task() -> Task:
    samples = [Sample(id=f"q{i}", input="?", target=t, choices=CHOICES) for i, t in enumerate("ABCA")]
    return Task(name="toy", dataset=samples, workflow=qa_workflow(), scorers=[accuracy()], parser=choice_parser())


def write(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "predictions.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_outputs_and_answers_are_scored(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        '{"id": "q0", "output": "The answer is A."}',
        '{"id": "q1", "answer": "C"}',
        "",
        '{"id": "q2", "output": "I am not sure."}',
        '{"id": "zz", "answer": "A"}',
    )
    report = score_predictions(single_task(), path)
    assert report["scored"] == 3 and report["unparsed"] == 1
    assert report["without_prediction"] == 1 and report["unknown_ids"] == ["zz"]
    (metric,) = report["metrics"]
    assert metric == {"scorer": "accuracy", "metric": "accuracy", "value": pytest.approx(1 / 3), "n": 3, "missing": 0}


def test_multi_answer_lists(tmp_path: Path) -> None:
    samples = [Sample(id="1", input="?", target=["A", "C"], choices=CHOICES)]
    task = Task(
        name="m",
        dataset=samples,
        workflow=qa_workflow(),
        scorers=[multi_answer("skip")],
        parser=choice_parser(multi=True),
    )
    report = score_predictions(task, write(tmp_path, '{"id": 1, "answer": ["a", "c"]}'))
    values = {m["metric"]: m["value"] for m in report["metrics"]}
    assert values == {"exact_match": 1.0, "f1": 1.0, "hamming": 1.0, "lca": 1.0}


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"id": "q0", "output": "A"', "invalid JSON"),
        ('["q0", "A"]', "expected a JSON object"),
        ('{"output": "A"}', "field 'id'"),
        ('{"id": "q0"}', "exactly one of"),
        ('{"id": "q0", "output": "A", "answer": "A"}', "exactly one of"),
        ('{"id": "q0", "output": 3}', "field 'output'"),
        ('{"id": "q1", "answer": "A"}', "also given on line 1"),
    ],
)
def test_malformed_lines_name_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    path = write(tmp_path, '{"id": "q1", "answer": "B"}', line)
    with pytest.raises(DataError, match=message) as caught:
        score_predictions(single_task(), path)
    assert f"{path}:2:" in str(caught.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="absent.jsonl: no such file"):
        score_predictions(single_task(), tmp_path / "absent.jsonl")


async def test_inside_a_running_event_loop_the_async_twin_is_named(tmp_path: Path) -> None:
    """Before: asyncio.run's bare RuntimeError, and a coroutine left never awaited."""
    import gc
    import warnings

    from ebmeval._util.errors import UsageError
    from ebmeval.scorers import ascore_predictions

    path = write(tmp_path, '{"id": "q0", "answer": "A"}')
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(UsageError, match=r"running event loop \(a notebook\): use await ascore_predictions"):
            score_predictions(single_task(), path)
        gc.collect()
    assert not [w for w in caught if "never awaited" in str(w.message)]
    assert (await ascore_predictions(single_task(), path))["scored"] == 1
