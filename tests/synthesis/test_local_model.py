from __future__ import annotations

from pathlib import Path

import pytest

import ebmeval.builtin_tasks.synthesis  # noqa: F401  (registers the task)
from ebmeval.models import GenerateConfig, get_model
from ebmeval.runner import RunConfig, run
from ebmeval.store import RunStore

pytestmark = pytest.mark.local_model


def test_zero_shot_and_rubric_judge_with_smollm2(tmp_path: Path) -> None:
    model = get_model("local:smollm2", config=GenerateConfig(temperature=0.0, max_tokens=256))
    config = RunConfig(
        task="synthesis",
        task_args={"source": "m3", "workflow": "parametric-zero-shot", "items": ["m3-27490232"], "text_metrics": False},
        model="local:smollm2",
        store=str(tmp_path / "runs.sqlite"),
        cache=False,
    )
    result = run(config, models={"model": model, "judge": model})
    store = RunStore(tmp_path / "runs.sqlite")
    steps = [step for step, _ in store.steps(result.run.run_id, "m3-27490232")]
    scores = [s for _, _, _, s in store.scores(result.run.run_id, "judge/rubric-0-5")]
    errors = store.errors(result.run.run_id)
    ((_sample, generation),) = list(store.generations(result.run.run_id))
    store.close()
    assert steps[:1] == ["answer"]
    assert not generation.answer_truncated  # greedy, its answer ends within 256 tokens: the judge is asked
    if errors:  # the small judge rambled past its budget: an error, never a score read from a cut-off reply
        ((_sample, _epoch, stage, error, _at),) = errors
        assert stage.startswith("score:judge/rubric-0-5") and "token limit" in error and not scores
        return
    (score,) = scores
    assert steps[1] == "judge/rubric-0-5" and set(score.values) == {"rubric"}
    assert score.values["rubric"] is None or 0 <= score.values["rubric"] <= 5
