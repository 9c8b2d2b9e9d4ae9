"""An answer cut at its token limit is counted beside every metric and never graded as complete;
inputs cut to fit are counted beside it, separately."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ebmeval.cli._display import grid_table, metrics_table
from ebmeval.models import ChatMessage, GenerateConfig, Model, ModelOutput
from ebmeval.models.providers.scripted import ScriptedModel
from ebmeval.runner import RunConfig, rescore, run, summarize
from ebmeval.store import RunStore
from ebmeval.tasks import Sample, SampleContext, WorkflowResult
from tests.helpers.toy import TwoStepWorkflow, toy_task

CUT_ANSWERS = ("Q q0:", "Q q2:")
"""The final replies cut at their token limit (q0 and q2 would be right: the model answers A)."""


def _reply(messages: Sequence[ChatMessage], _config: GenerateConfig) -> ModelOutput:
    prompt = messages[-1].content
    if "Final letter" not in prompt:  # the draft of q4 is cut too: not the answer's reply
        return ModelOutput(text="thinking", model="scripted/cut", finish_reason="length" if "q4" in prompt else "stop")
    cut = prompt.startswith(CUT_ANSWERS)
    return ModelOutput(text="A", model="scripted/cut", finish_reason="length" if cut else "stop")


class InputCut(TwoStepWorkflow):
    """The toy workflow, recording that q1's input was cut to fit the context window."""

    async def __call__(self, sample: Sample, ctx: SampleContext) -> WorkflowResult:
        result = await super().__call__(sample, ctx)
        if sample.id == "q1":
            result.metadata["context"] = {"truncated": True}
        return result


def test_a_cut_answer_is_not_graded_and_is_counted_beside_each_metric_apart_from_inputs_cut(tmp_path: Path) -> None:
    task = toy_task(6)
    task.workflow = InputCut()
    config = RunConfig.model_validate({"task": "toy", "store": str(tmp_path / "runs.sqlite"), "cache": False})
    result = run(config, task=task, models={"model": Model(ScriptedModel(_reply, name="scripted/cut"))})
    store = RunStore(tmp_path / "runs.sqlite")
    generations = {g.sample_id: g for _s, g in store.generations(result.run.run_id)}
    assert [s for s, g in sorted(generations.items()) if g.answer_truncated] == ["q0", "q2"]
    assert generations["q4"].truncated and not generations["q4"].answer_truncated  # a cut draft, a whole answer
    scores = {sample: score for sample, _e, _l, score in store.scores(result.run.run_id)}
    assert scores["q0"].values == {} and scores["q2"].values == {} and scores["q4"].values == {"accuracy": 1.0}

    summary = summarize(store, result.run.run_id)
    (accuracy,) = summary.metrics
    # graded: q1, q3, q5 (answered A, wrong) and q4 (right); the cut q0 and q2 are neither right nor missing
    assert (accuracy.value, accuracy.n, accuracy.missing) == (0.25, 4, 0)
    assert (accuracy.truncated, accuracy.input_truncated) == (2, 1)
    assert (summary.truncated, summary.input_truncated) == (3, 1)
    shown = summary.as_dict()["metrics"][0]
    assert (shown["truncated"], shown["input_truncated"]) == (2, 1)
    for table in (metrics_table(summary), grid_table([summary])):
        columns = dict(zip(table.header, table.texts()[0], strict=True))
        assert (columns["truncated"], columns["inputs cut"]) == ("2", "1")


def test_a_judge_rescoring_the_run_is_not_asked_about_a_cut_answer(tmp_path: Path) -> None:
    from tests.runner.test_rescore_judges import VerdictJudge

    config = RunConfig.model_validate({"task": "toy", "store": str(tmp_path / "runs.sqlite"), "cache": False})
    result = run(config, task=toy_task(4), models={"model": Model(ScriptedModel(_reply, name="scripted/cut"))})
    judge = ScriptedModel(lambda _m, _c: "Verdict: YES", name="scripted/judge")
    rescore(str(tmp_path / "runs.sqlite"), result.run.run_id, [VerdictJudge()], {"judge": Model(judge)})
    assert len(judge.requests) == 2 * 2  # two questions about each of q1 and q3, none about the cut q0 and q2
    metrics = {m.metric: m for m in summarize(RunStore(tmp_path / "runs.sqlite"), result.run.run_id).metrics}
    assert (metrics["yes"].n, metrics["yes"].truncated) == (2, 2)


def test_a_score_set_whose_every_answer_was_cut_still_shows_its_truncations(tmp_path: Path) -> None:
    from ebmeval.runner._summary import NOT_GRADED

    config = RunConfig.model_validate({"task": "toy", "store": str(tmp_path / "runs.sqlite"), "cache": False})
    cut = ModelOutput(text="A", model="scripted/cut", finish_reason="length")
    result = run(config, task=toy_task(3), models={"model": Model(ScriptedModel(lambda _m, _c: cut))})
    (row,) = summarize(RunStore(tmp_path / "runs.sqlite"), result.run.run_id).metrics
    assert (row.scorer, row.metric, row.value, row.n, row.truncated) == ("exact", NOT_GRADED, None, 0, 3)
