"""One engine for run, rescore and the scoring of predictions: one error policy, one error record,
and declared scorer roles."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from ebmeval.models import ChatMessage, GenerateConfig, Model
from ebmeval.models.providers.scripted import ScriptedModel
from ebmeval.runner import RunConfig, rescore, run, summarize
from ebmeval.scorers import score_predictions
from ebmeval.store import RunStore
from ebmeval.tasks import Generation, Sample, SampleContext, Score, create_task
from tests.helpers.toy import ExactLetter, scripted_model, toy_task
from tests.test_docs_extending import files


def _config(tmp_path: Path, task: str = "toy", **fields: object) -> RunConfig:
    return RunConfig.model_validate({"task": task, "store": str(tmp_path / "runs.sqlite"), "cache": False, **fields})


def _judge(reply: str, name: str) -> Model:
    return Model(ScriptedModel(lambda _m, _c: reply, name=name))


def test_the_docs_judge_rescored_with_a_second_judge_gets_a_second_score_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "my_tasks.py").write_text(files()["my_tasks.py"], encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    task = create_task("my_tasks.py@mine/evidence-quiz")
    models = {"model": scripted_model(lambda _m, _c: "A"), "judge": _judge("yes", "scripted/judge-a")}
    result = run(_config(tmp_path, "my_tasks.py@mine/evidence-quiz"), task=task, models=models)
    assert result.run.status == "complete"
    says_yes = task.scorers[1]
    again = rescore(
        str(tmp_path / "runs.sqlite"), result.run.run_id, [says_yes], {"judge": _judge("no", "scripted/judge-b")}
    )
    assert again.done == 2 and again.resumed == 0  # scored again, not "resumed (skipped)"
    store = RunStore(tmp_path / "runs.sqlite", read_only=True)
    sets = {s.label: s for s in store.score_sets(result.run.run_id) if s.name == "mine/says-yes"}
    assert set(sets) == {"mine/says-yes[judge=judge-a]", "mine/says-yes[judge=judge-b]"}
    means = {m.scorer: m.value for m in summarize(store, result.run.run_id).metrics if m.metric == "yes"}
    assert means == {"mine/says-yes[judge=judge-a]": 1.0, "mine/says-yes[judge=judge-b]": 0.0}


class UndeclaredJudge:
    """Calls the ``judge`` role without declaring it."""

    name = "undeclared"

    async def __call__(self, sample: Sample, generation: Generation, ctx: SampleContext) -> Score:
        reply = await ctx.generate("undeclared", "ok?", role="judge")
        return Score(values={"yes": float(reply.text == "yes")})


class Broken:
    """A scorer with a bug."""

    name = "broken"

    async def __call__(self, sample: Sample, generation: Generation, ctx: SampleContext) -> Score:
        raise ZeroDivisionError("scorer bug")


def test_a_call_to_an_undeclared_role_is_refused_and_recorded(tmp_path: Path) -> None:
    task = toy_task(2)
    task.scorers = [UndeclaredJudge()]
    task.roles = ("judge",)
    judge = _judge("yes", "scripted/judge")
    result = run(_config(tmp_path), task=task, models={"model": scripted_model(), "judge": judge})
    errors = RunStore(tmp_path / "runs.sqlite", read_only=True).errors(result.run.run_id)
    assert result.run.status == "errors" and len(errors) == 2
    assert all("does not declare that role" in error for *_key, error, _at in errors)
    assert judge.stats.calls == 0


def test_every_scorer_is_tried_and_each_failure_recorded_alike_by_run_and_rescore(tmp_path: Path) -> None:
    task = toy_task(2)
    task.scorers = [Broken(), ExactLetter()]
    result = run(_config(tmp_path), task=task, models={"model": scripted_model()})
    store = RunStore(tmp_path / "runs.sqlite", read_only=True)
    accuracy = {m.scorer: m.n for m in summarize(store, result.run.run_id).metrics}
    assert accuracy == {"exact": 2}  # the scorer after the broken one still scored every sample
    ran = store.errors(result.run.run_id)
    assert {(stage, error.splitlines()[-1]) for _s, _e, stage, error, _at in ran} == {
        ("score:broken", "ZeroDivisionError: scorer bug")
    }
    rescore(str(tmp_path / "runs.sqlite"), result.run.run_id, [Broken()], {})
    both = RunStore(tmp_path / "runs.sqlite", read_only=True).errors(result.run.run_id)
    assert len(both) == 4 and len({error.splitlines()[-1] for *_k, error, _at in both}) == 1


def test_scoring_predictions_reports_the_run_metrics_a_run_reports(tmp_path: Path) -> None:
    task = create_task("ddi")
    ids = [s.id for s in list(task.dataset)[:6]]

    def reply(messages: Sequence[ChatMessage], _config: GenerateConfig) -> str:
        return "warfarin | EFFECT | aspirin" if "warfarin" in messages[-1].content.lower() else "none"

    result = run(_config(tmp_path, "ddi", limit=6, shuffle=False), task=task, models={"model": scripted_model(reply)})
    store = RunStore(tmp_path / "runs.sqlite", read_only=True)
    from_run = {m.metric: m.value for m in summarize(store, result.run.run_id).metrics}
    lines = [json.dumps({"id": s.id, "output": g.output}) for s, g in store.generations(result.run.run_id)]
    (tmp_path / "p.jsonl").write_text("\n".join(lines) + "\n")
    scored = score_predictions(task, tmp_path / "p.jsonl")
    from_predictions = {m["metric"]: m["value"] for m in scored["metrics"]}
    assert sorted(ids) == sorted(json.loads(line)["id"] for line in lines)
    assert "micro_f1" in from_run and from_predictions == from_run


def test_a_failing_scorer_of_predictions_is_recorded_and_the_others_still_score(tmp_path: Path) -> None:
    task = toy_task(2)
    task.scorers = [Broken(), ExactLetter()]
    (tmp_path / "p.jsonl").write_text('{"id": "q0", "output": "A"}\n{"id": "q1", "output": "A"}\n')
    scored = score_predictions(task, tmp_path / "p.jsonl")
    assert [(e["id"], e["stage"]) for e in scored["errors"]] == [("q0", "score:broken"), ("q1", "score:broken")]
    assert scored["metrics"] == [{"scorer": "exact", "metric": "accuracy", "value": 0.5, "n": 2, "missing": 0}]
