from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from ebmeval._util.errors import DataError, UsageError
from ebmeval.analysis import format_table, human_agreement, read_human_scores, step_agreement, sweep
from ebmeval.builtin_tasks.medthink_reasoning import ZeroShotReasoning, parse_final_answer
from ebmeval.models import ChatMessage, GenerateConfig, Model
from ebmeval.models.providers.scripted import ScriptedModel
from ebmeval.report import SIGN
from ebmeval.runner import RunConfig, run
from ebmeval.scorers.judges import StepsWithoutReference, StepsWithReference, StepsWithReferenceSingle
from ebmeval.stats import bootstrap_ci, cohen_kappa, pearson
from ebmeval.tasks import Sample, Task

WORDS = ("alpha", "beta", "gamma", "delta")
# Sample i's rationale names the first i step words; sample 5 makes the per-step judge ramble.
RATIONALES = {"1": "alpha", "2": "alpha beta", "3": "alpha beta gamma", "4": "alpha beta gamma delta", "5": "zeta"}
SAMPLES = [Sample(id=i, input=f"Question {i}?", target="A", metadata={"scoring_points": list(WORDS)}) for i in "12345"]


def answer(messages: Sequence[ChatMessage], _config: GenerateConfig) -> str:
    number = re.search(r"Question (\d)", messages[0].content)
    assert number is not None
    return f"Reasoning: {RATIONALES[number.group(1)]}.\nFinal answer: A"


def judge(messages: Sequence[ChatMessage], _config: GenerateConfig) -> str:
    prompt = messages[0].content
    if "Required steps" in prompt:
        return "Required steps: 4\nCovered steps: 2"
    # A step word written twice is in both the rationale and the step(s) shown.
    supported = [w for w in WORDS if prompt.count(w) == 2]
    if "<number>: YES" in prompt:
        return "\n".join(f"{n}: {'YES' if w in supported else 'NO'}" for n, w in enumerate(WORDS, start=1))
    if "zeta" in prompt:
        return "It is hard to say."
    return "Verdict: YES" if supported else "Verdict: NO"


def stored_run(tmp_path: Path) -> tuple[str, str]:
    store = str(tmp_path / "runs.db")
    task = Task(
        name="medthink/reasoning",
        dataset=SAMPLES,
        workflow=ZeroShotReasoning(),
        scorers=[StepsWithReference(), StepsWithReferenceSingle(), StepsWithoutReference()],
        parser=parse_final_answer,
        roles=("judge",),
    )
    models = {"model": Model(ScriptedModel(answer)), "judge": Model(ScriptedModel(judge, name="scripted/judge"))}
    result = run(RunConfig(shuffle=False, task="medthink/reasoning", store=store), task=task, models=models)
    return store, result.run.run_id


def test_run_stores_rationale_answer_and_verdicts(tmp_path: Path) -> None:
    from ebmeval.store import RunStore

    store_path, run_id = stored_run(tmp_path)
    store = RunStore(store_path)
    found = store.get_generation(run_id, "3")
    assert found is not None
    _sample, generation = found
    assert generation.metadata["rationale"] == "Reasoning: alpha beta gamma."
    assert generation.answer.value == "A"
    steps = dict(store.steps(run_id, "3"))
    assert steps["judge/steps-with-reference/verdicts"]["supported"] == 3
    scores = {name.split("[")[0]: score for sample, _e, name, score in store.scores(run_id) if sample == "3"}
    assert scores["judge/steps-with-reference"].values["steps_supported"] == pytest.approx(0.75)
    assert scores["judge/steps-with-reference-single"].values["steps_supported"] == pytest.approx(0.75)
    assert scores["judge/steps-without-reference"].values["steps_covered"] == pytest.approx(0.5)
    five = {name.split("[")[0]: score for sample, _e, name, score in store.scores(run_id) if sample == "5"}
    assert five["judge/steps-with-reference"].values["steps_supported"] is None
    store.close()


def test_sweep_over_judges_and_prompts(tmp_path: Path) -> None:
    store, run_id = stored_run(tmp_path)
    judges = {"a": Model(ScriptedModel(judge)), "b": Model(ScriptedModel(lambda _m, _c: "Verdict: NO"))}
    rows = sweep(store, run_id, judges, ("p1", "p2", "p3"), n_resamples=200)
    assert [(r.strategy, r.judge, r.prompt) for r in rows] == [
        ("steps-with-reference", "a", "p1"),
        ("steps-with-reference", "b", "p1"),
        ("steps-with-reference", "a", "p2"),
        ("steps-with-reference", "a", "p3"),
    ]
    first = rows[0]
    assert first.scorer == "judge/steps-with-reference[a]"
    values = [0.25, 0.5, 0.75, 1.0]
    assert (first.n, first.unparsed, first.scored) == (4, 1, 5)
    assert first.mean == pytest.approx(0.625)
    assert first.ci == bootstrap_ci(values, n_resamples=200, seed=0).ci
    assert rows[1].mean == 0.0 and rows[1].unparsed == 0
    assert rows[2].scorer == "judge/steps-with-reference@p2[a]" and rows[2].mean == pytest.approx(0.625)
    table = format_table(rows)
    assert "| steps-with-reference | a | p2 | 0.625 [" in table
    again = sweep(store, run_id, judges, ("p1",), n_resamples=200)
    assert again[0].scored == 0 and again[0].mean == first.mean


def test_sweep_times_each_strategy(tmp_path: Path) -> None:
    store, run_id = stored_run(tmp_path)
    strategies = ("steps-with-reference", "steps-with-reference-single", "steps-without-reference")
    rows = sweep(store, run_id, {"a": Model(ScriptedModel(judge))}, ("p1",), strategies=strategies, n_resamples=200)
    assert [r.strategy for r in rows] == list(strategies)
    assert [r.prompt for r in rows] == ["p1", "-", "-"]
    assert rows[2].metric == "steps_covered" and rows[2].mean == pytest.approx(0.5)
    assert all(r.wall_s >= 0 and r.scored == 5 for r in rows)


def test_sweep_rejects_an_unknown_prompt_judge(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="prompt_judge"):
        sweep(str(tmp_path / "x.db"), "r", {"a": Model(ScriptedModel())}, prompt_judge="z")


def test_step_agreement_between_per_step_and_single(tmp_path: Path) -> None:
    store, run_id = stored_run(tmp_path)
    agreement = step_agreement(store, run_id)
    # Samples 1-4 agree on every step (16 verdicts); sample 5's per-step verdicts are unreadable.
    assert agreement.n_steps == 16
    assert agreement.kappa.value == pytest.approx(1.0)
    assert agreement.n_samples == 4
    assert agreement.correlation is not None
    assert agreement.correlation.value == pytest.approx(pearson([0.25, 0.5, 0.75, 1.0], [0.25, 0.5, 0.75, 1.0]).value)


def test_human_agreement_from_csv(tmp_path: Path) -> None:
    store, run_id = stored_run(tmp_path)
    path = tmp_path / "human.csv"
    path.write_text("sample_id,score\n1,0.5\n2,0.5\n3,1.0\n4,0.75\n9,1.0\n", encoding="utf-8")
    result = human_agreement(store, run_id, "judge/steps-with-reference", "steps_supported", path)
    assert result.n == 4
    assert result.unmatched == ["9"]
    human, auto = [0.5, 0.5, 1.0, 0.75], [0.25, 0.5, 0.75, 1.0]
    assert result.pearson.value == pytest.approx(pearson(human, auto).value)
    assert result.bland_altman.value == pytest.approx(sum(h - a for h, a in zip(human, auto, strict=True)) / 4)
    assert result.sign == SIGN and result.sign.startswith("d = human − judge")  # as `annotate report`
    assert result.condition.startswith("medthink")


def test_human_agreement_needs_three_matches(tmp_path: Path) -> None:
    store, run_id = stored_run(tmp_path)
    with pytest.raises(UsageError, match="only 2 samples"):
        human_agreement(store, run_id, "judge/steps-with-reference", "steps_supported", {"1": 0.1, "2": 0.2})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("id,score\n1,0.5\n", "field 'sample_id': missing column"),
        ("sample_id,score\n1,high\n", ":2: field 'score': not a number"),
        ("sample_id,score\n1,nan\n", ":2: field 'score': not a finite number"),
        ("sample_id,score\n1,0.5\n1,0.7\n", ":3: field 'sample_id': sample id given twice"),
    ],
)
def test_read_human_scores_errors(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "h.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DataError, match=re.escape(message)):
        read_human_scores(path)


def test_step_agreement_with_a_judge_that_always_says_no(tmp_path: Path) -> None:
    store, run_id = stored_run(tmp_path)
    sweep(store, run_id, {"b": Model(ScriptedModel(lambda _m, _c: "Verdict: NO"))}, ("p1",), n_resamples=200)
    agreement = step_agreement(store, run_id, "judge/steps-with-reference", "judge/steps-with-reference[b]")
    # Samples 1-4 have 1..4 of their 4 steps supported by the first judge; the second supports none.
    first = [1.0 if k < i else 0.0 for i in range(1, 5) for k in range(4)]
    assert agreement.kappa.value == pytest.approx(cohen_kappa(first, [0.0] * 16, categories=[0.0, 1.0]).value)
    assert agreement.kappa.value == pytest.approx(0.0)
    assert agreement.correlation is None
