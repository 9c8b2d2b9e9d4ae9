"""Scorer options on ``run`` and ``score`` (``--scorer-arg``), for any task's scorers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ebmeval import RunConfig, run
from ebmeval._util.errors import ConfigError
from ebmeval.builtin_tasks.caremedeval import load_caremedeval
from ebmeval.scorers import MultiAnswer
from ebmeval.tasks import create_task, with_scorer_args
from tests.helpers.cli import ebmeval

EXAM_CREDIT = "lca_credit=[1, 0.5, 0.2]"


def _lca(summary: dict[str, object]) -> float:
    metrics = summary["metrics"]
    assert isinstance(metrics, list)
    (value,) = [m["value"] for m in metrics if m["metric"] == "lca" and m.get("group") is None]
    return float(value)


def test_run_takes_scorer_options(tmp_path: Path) -> None:
    base = ("run", "--task", "caremedeval", "--model", "baseline/most-frequent-2", "--json")
    done = ebmeval(*base, "--scorer-arg", EXAM_CREDIT, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert _lca(json.loads(done.stdout)) == pytest.approx(0.1798, abs=1e-4)
    named = ebmeval(*base, "--scorer-arg", f"multi_answer:{EXAM_CREDIT}", cwd=tmp_path)
    assert json.loads(named.stdout)["run_id"] == json.loads(done.stdout)["run_id"]


def test_score_takes_scorer_options(tmp_path: Path) -> None:
    samples = load_caremedeval(context="none")
    lines = [json.dumps({"id": s.id, "answer": "A, C"}) for s in samples]
    (tmp_path / "preds.jsonl").write_text("\n".join(lines) + "\n")
    args = ("score", "caremedeval", "--predictions", "preds.jsonl", "--json")
    default = json.loads(ebmeval(*args, cwd=tmp_path).stdout)
    exam = ebmeval(*args, "--scorer-arg", EXAM_CREDIT, cwd=tmp_path)
    assert exam.returncode == 0, exam.stderr
    assert _lca(default) == pytest.approx(0.1948, abs=1e-4)
    assert _lca(json.loads(exam.stdout)) == pytest.approx(0.1798, abs=1e-4)
    # the question whose keys contradict each other is named wherever it is scored
    assert [note[:15] for note in default["notes"]] == ["sample 350275dd"]
    shown = ebmeval("score", "caremedeval", "--predictions", "preds.jsonl", cwd=tmp_path)
    assert "note: sample" in shown.stdout and "essential answer B is not among" in " ".join(shown.stdout.split())


def test_an_unknown_scorer_or_option_exits_2(tmp_path: Path) -> None:
    base = ("run", "--task", "caremedeval", "--model", "baseline/random", "--limit", "2")
    unknown = ebmeval(*base, "--scorer-arg", "accuracy:unparsed=skip", cwd=tmp_path)
    assert unknown.returncode == 2 and "has no scorer 'accuracy'" in unknown.stderr
    bad = ebmeval(*base, "--scorer-arg", "lca_credits=[1]", cwd=tmp_path)
    assert bad.returncode == 2 and "lca_credits" in bad.stderr and "Traceback" not in bad.stderr


def test_other_scorer_options_score_the_same_run_into_another_score_set(tmp_path: Path) -> None:
    config = RunConfig(task="caremedeval", model="baseline/most-frequent-2", limit=10, store=str(tmp_path / "s.db"))
    first = run(config)
    second = run(config.model_copy(update={"scorer_args": {"multi_answer": {"lca_credit": [1, 0.5, 0.2]}}}))
    assert second.run.run_id == first.run.run_id and second.progress.resumed == 0
    assert [s.spec["args"]["lca_credit"] for s in second.score_sets] == [[1.0, 0.5, 0.2]]
    assert first.score_sets[0].id != second.score_sets[0].id


def test_scorer_options_keep_the_tasks_own() -> None:
    task = with_scorer_args(create_task("caremedeval", unparsed="skip"), {"": {"lca_credit": [1, 0.5, 0.2]}})
    (scorer,) = task.scorers
    assert isinstance(scorer, MultiAnswer)
    assert scorer.unparsed == "skip" and scorer.lca_credit == (1, 0.5, 0.2)
    with pytest.raises(ConfigError, match="has no scorer 'judge'"):
        with_scorer_args(create_task("caremedeval"), {"judge": {}})


def test_a_role_the_task_defaults_is_played_by_that_model_and_said_so(tmp_path) -> None:
    from ebmeval.runner import RunConfig, run, summarize
    from ebmeval.store import RunStore
    from ebmeval.tasks import create_task

    task = create_task("synthesis", source="ms2", workflow="negated-rag", text_metrics=False)
    # the same negator for every model under evaluation; its model checks the negations
    assert task.role_defaults == {"negator": "local", "negation_checker": "role:negator"}
    task.role_defaults = {"negator": "scripted:NEGATED", "negation_checker": "role:negator"}
    config = RunConfig(task="synthesis", model="scripted:Score: 3", store=str(tmp_path / "r.sqlite"), cache=False)
    result = run(config, task=task)
    assert result.progress.errors == 0
    store = RunStore(tmp_path / "r.sqlite", read_only=True)
    notes = summarize(store, result.run.run_id).notes
    (_sample, generation), *_ = store.generations(result.run.run_id)
    store.close()
    assert any(n.startswith("role negator: played by the task's default model (scripted/NEGATED)") for n in notes)
    assert any(n.startswith("role judge: played by the model under evaluation") for n in notes)
    assert {r["negator"] for r in generation.metadata["negations"]} == {"scripted/NEGATED"}
    assert any(
        n.startswith("role negation_checker: played by the task's default model (scripted/NEGATED)") for n in notes
    )
    # the checker's reply "NEGATED" is neither yes nor no: every negation used, counted unchecked
    checks = generation.metadata["negation_checks"]
    assert checks["inverted"] == 0 and checks["unchecked"] == len(generation.metadata["negations"]) > 0
