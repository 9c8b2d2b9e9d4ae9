from __future__ import annotations

import pytest

from ebmeval._util.errors import ConfigError, ModelError
from ebmeval.models import GenerateConfig, get_model, user
from ebmeval.models.providers.baseline import baseline, prompt_options
from ebmeval.tasks import Sample
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
