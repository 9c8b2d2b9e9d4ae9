from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from ebmeval._util.errors import ConfigError, ModelError
from ebmeval.models import GenerateConfig, get_model, user
from ebmeval.models.providers.baseline import MULTI_MARK, SINGLE_MARK, answer_kind, baseline, prompt_options
from ebmeval.prompts import FORMAT_MULTI, FORMAT_SINGLE
from ebmeval.runner import RunConfig, run, summarize
from ebmeval.store import RunStore
from ebmeval.tasks import Sample, create_task
from ebmeval.workflows import qa_workflow

SAMPLE = Sample(
    id="q",
    input="This is a study:",
    target=["A", "C"],
    choices={"A": "observational", "B": "randomized", "C": "etiological", "D": "prospective", "E": "retrospective"},
)
PROMPT = qa_workflow("direct", multi_answer=True).render_prompts(SAMPLE)["direct"]


async def answer(spec: str, config: GenerateConfig | None = None, **options: object) -> str:
    model = get_model(spec, **options)
    return (await model.generate(PROMPT, config)).text


def test_options_are_read_from_the_prompt() -> None:
    assert prompt_options(PROMPT) == ["A", "B", "C", "D", "E"]
    with pytest.raises(ModelError, match="Options:"):
        prompt_options([user("What is 2 + 2?")])


async def test_first_option_and_most_frequent() -> None:
    assert await answer("baseline/first-option") == "A"
    assert await answer("baseline/most-frequent-2") == "A, C"
    assert await answer("baseline/most-frequent-3") == "A, B, C"
    assert await answer("baseline/most-frequent-2", ranking="EDCBA") == "D, E"
    assert await answer("baseline/most-frequent-3", ranking="Z") == "A, B, C"


async def test_random_is_seeded_and_draws_one_to_three_options() -> None:
    api = baseline("random")
    answers = set()
    for seed in range(40):
        config = GenerateConfig(seed=seed)
        first = (await api.generate(PROMPT, config)).text
        assert first == (await api.generate(PROMPT, config)).text
        letters = first.split(", ")
        assert 1 <= len(letters) <= 3 and letters == sorted(set(letters))
        answers.add(first)
    assert len(answers) > 10
    assert (await baseline("random", seed=7).generate(PROMPT, GenerateConfig())).text == (
        await api.generate(PROMPT, GenerateConfig(seed=7))
    ).text
    assert {
        len(
            (
                await baseline("random", min_options=2, max_options=2).generate(PROMPT, GenerateConfig(seed=s))
            ).text.split(", ")
        )
        for s in range(5)
    } == {2}


def test_bad_specs_and_options() -> None:
    with pytest.raises(ConfigError, match="unknown baseline"):
        baseline("most-frequent")
    with pytest.raises(ConfigError, match="ranking"):
        baseline("most-frequent-2", ranking="A,B")
    with pytest.raises(ConfigError, match="unknown option"):
        baseline("random", temperature=1)
    with pytest.raises(ConfigError, match="min_options"):
        baseline("random", min_options=3, max_options=1)
    with pytest.raises(ConfigError, match="integer"):
        baseline("random", seed="x")


SINGLE_PROMPT = qa_workflow("direct").render_prompts(SAMPLE)["direct"]


def test_the_answer_format_sentences_are_the_templates() -> None:
    """The baselines tell single from multi by these sentences; a template change must update them."""
    assert FORMAT_SINGLE.render().startswith(SINGLE_MARK)
    assert FORMAT_MULTI.render().startswith(MULTI_MARK)
    assert answer_kind(SINGLE_PROMPT) == "single" and answer_kind(PROMPT) == "multi"
    bare = [user("Question?\n\nOptions:\nA. x\nB. y")]
    with pytest.raises(ModelError, match="answers=single"):
        answer_kind(bare)
    assert answer_kind(bare, "single") == "single"


async def test_random_draws_one_option_on_single_answer_questions() -> None:
    api = baseline("random")
    answers = {(await api.generate(SINGLE_PROMPT, GenerateConfig(seed=seed))).text for seed in range(60)}
    assert answers == {"A", "B", "C", "D", "E"}
    bare = [user("Question?\n\nOptions:\nA. x\nB. y\nC. z")]
    assert {
        (await baseline("random", answers="single").generate(bare, GenerateConfig(seed=s))).text for s in range(30)
    } == {"A", "B", "C"}
    with pytest.raises(ModelError, match="answer format"):
        await api.generate(bare, GenerateConfig())


async def test_majority_answers_the_most_common_gold_letter() -> None:
    api = baseline("majority", answer="C")
    assert (await api.generate(SINGLE_PROMPT, GenerateConfig())).text == "C"
    two = [user("Question?\n\nOptions:\nA. x\nB. y\n\nExactly one option is correct. Answer with its letter.")]
    assert (await api.generate(two, GenerateConfig())).text == "A"  # C absent: the next one present
    with pytest.raises(ModelError, match="single-answer"):
        await api.generate(PROMPT, GenerateConfig())


def test_majority_learns_from_the_task_dataset_and_records_it() -> None:
    api = baseline("majority", task="mirage/medqa")
    counts = Counter(sample.target for sample in create_task("mirage/medqa").dataset)
    described = api.describe()
    assert described["counts"] == dict(counts) and sum(counts.values()) == 1273
    assert described["answer"] == counts.most_common(1)[0][0] and described["task"] == "mirage/medqa"
    tied = [baseline("majority", answer="B", seed=s).describe()["answer"] for s in range(3)]
    assert tied == ["B"] * 3
    with pytest.raises(ConfigError, match="single-answer"):
        baseline("majority", task="caremedeval")
    with pytest.raises(ConfigError, match="exactly one"):
        baseline("majority")
    with pytest.raises(ConfigError, match="only baseline/majority"):
        baseline("random", task="mirage/medqa")


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["baseline/random", "baseline/majority"])
def test_medqa_baselines_are_chance_and_majority_with_nothing_unparsed(tmp_path: Path, spec: str) -> None:
    task = create_task("mirage/medqa")
    args = {"task": "mirage/medqa"} if spec.endswith("majority") else {}
    config = RunConfig(
        task="mirage/medqa", model=spec, model_args=args, store=str(tmp_path / "runs.sqlite"), cache=False
    )
    result = run(config, task=task)
    summary = summarize(RunStore(tmp_path / "runs.sqlite"), result.run.run_id)
    accuracy = next(m.value for m in summary.metrics if m.metric == "accuracy")
    assert summary.generations == 1273 and summary.unparsed == 0
    if spec.endswith("random"):
        assert abs(accuracy - 0.25) < 0.04  # chance with 4 options; one standard error is 0.012
    else:
        counts = Counter(sample.target for sample in task.dataset)
        assert accuracy == pytest.approx(counts.most_common(1)[0][1] / 1273)
