from __future__ import annotations

import pytest

from ebmeval._util.errors import ConfigError
from ebmeval.models import Model
from ebmeval.models.providers.scripted import ScriptedModel
from ebmeval.scorers import accuracy, exact_match, hamming_score, lca_score, multi_answer, set_f1
from ebmeval.tasks import Generation, ParsedAnswer, Sample, SampleContext

CTX = SampleContext({"model": Model(ScriptedModel())})


def generation(answer: ParsedAnswer) -> Generation:
    return Generation(sample_id="q", output="", answer=answer)


def test_set_metrics() -> None:
    gold = {"A", "C", "E"}
    assert exact_match({"A", "C", "E"}, gold) == 1.0
    assert exact_match({"A", "C"}, gold) == 0.0
    assert set_f1({"A", "C"}, gold) == pytest.approx(2 * 2 / 5)
    assert set_f1({"B"}, gold) == 0.0
    assert set_f1(set(), gold) == 0.0
    assert hamming_score({"A", "B"}, gold) == pytest.approx(1 / 4)
    assert hamming_score(set(), gold) == 0.0


@pytest.mark.parametrize(
    ("predicted", "expected"),
    [
        ({"A", "C", "E"}, 1.0),
        ({"A", "C"}, 0.5),
        ({"A", "C", "E", "B"}, 0.5),
        ({"A"}, 0.25),
        ({"A", "B", "C", "D", "E"}, 0.25),
        ({"A", "B", "D"}, 0.0),
        ({"B", "D"}, 0.0),
        (set(), 0.0),
    ],
)
def test_lca_credit_by_discordances(predicted: set[str], expected: float) -> None:
    assert lca_score(predicted, {"A", "C", "E"}) == expected


def test_lca_essential_and_unacceptable_answers() -> None:
    gold = {"A", "C", "E"}
    assert lca_score({"C", "E"}, gold, essential={"A"}) == 0.0
    assert lca_score({"A", "C"}, gold, essential={"A"}) == 0.5
    assert lca_score({"A", "C", "E", "D"}, gold, unacceptable={"D"}) == 0.0
    assert lca_score({"A", "C", "E", "B"}, gold, unacceptable={"D"}) == 0.5
    assert lca_score({"A"}, gold, credit=(1.0, 0.5, 0.2)) == 0.2


async def test_accuracy_scorer() -> None:
    sample = Sample(id="q", input="?", target="B", choices={"A": "x", "B": "y"})
    right = await accuracy()(sample, generation(ParsedAnswer(value="b")), CTX)
    wrong = await accuracy()(sample, generation(ParsedAnswer(value="A")), CTX)
    assert right.values == {"accuracy": 1.0}
    assert wrong.values == {"accuracy": 0.0}


async def test_unparsed_policies() -> None:
    sample = Sample(id="q", input="?", target=["A", "C"], metadata={"essential_answers": ["A"]})
    missing = generation(ParsedAnswer.unparsed("no-answer-found"))
    zero = await multi_answer()(sample, missing, CTX)
    skip = await multi_answer(unparsed="skip")(sample, missing, CTX)
    assert zero.values == {"exact_match": 0.0, "f1": 0.0, "hamming": 0.0, "lca": 0.0}
    assert skip.values == {"exact_match": None, "f1": None, "hamming": None, "lca": None}
    assert zero.metadata["unparsed"] and skip.metadata["unparsed"]
    single = Sample(id="q", input="?", target="A")
    assert (await accuracy()(single, missing, CTX)).values == {"accuracy": 0.0}
    assert (await accuracy("skip")(single, missing, CTX)).values == {"accuracy": None}
    with pytest.raises(ConfigError):
        accuracy("ignore")  # type: ignore[arg-type]


async def test_multi_answer_scorer_uses_sample_metadata() -> None:
    sample = Sample(
        id="q",
        input="?",
        target=["A", "C", "E"],
        metadata={"essential_answers": ["A"], "unacceptable_answers": ["D"]},
    )
    score = await multi_answer()(sample, generation(ParsedAnswer(value=["A", "C"])), CTX)
    assert score.values == pytest.approx({"exact_match": 0.0, "f1": 0.8, "hamming": 2 / 3, "lca": 0.5})
    bad = await multi_answer()(sample, generation(ParsedAnswer(value=["A", "C", "E", "D"])), CTX)
    assert bad.values["lca"] == 0.0
    assert bad.values["f1"] == pytest.approx(6 / 7)


def test_scorers_are_registered_by_name() -> None:
    from ebmeval.tasks import create_scorer

    assert create_scorer("accuracy").name == "accuracy"
    assert create_scorer("multi_answer", unparsed="skip").name == "multi_answer"
