"""Triplet parsing and strict micro-F1."""

from __future__ import annotations

from pathlib import Path

import pytest

from ebmeval.models import Model
from ebmeval.models.providers.scripted import ScriptedModel
from ebmeval.runner import RunConfig, run, summarize
from ebmeval.scorers._triplets import (
    Counts,
    TripletF1,
    match_triplets,
    micro_f1,
    normalise,
    parse_triplets,
    triplet_parser,
)
from ebmeval.store import RunStore
from ebmeval.tasks import Generation, ParsedAnswer, Sample, SampleContext, Task, WorkflowResult, create_scorer

GOLD = [("aspirin", "effect", "warfarin"), ("ketoconazole", "mechanism", "midazolam")]


def f1(predicted: list[tuple[str, str, str]], *, symmetric: bool = False) -> float | None:
    return match_triplets(predicted, GOLD, symmetric=symmetric)[0].f1


@pytest.mark.parametrize(
    ("reply", "expected", "method"),
    [
        ('[["A", "effect", "B"]]', [("A", "effect", "B")], "json"),
        ('Here you go: {"triplets": [{"drug1": "A", "type": "int", "drug2": "B"}]}', [("A", "int", "B")], "json"),
        ('[{"subject": "x", "relation": "INHIBITOR", "object": "y"}]', [("x", "INHIBITOR", "y")], "json"),
        ("- A - advise - B\n2. C | effect | D", [("A", "advise", "B"), ("C", "effect", "D")], "lines"),
        ("(A, mechanism, 5-fluorouracil)", [("A", "mechanism", "5-fluorouracil")], "lines"),
        ("A -> int -> B", [("A", "int", "B")], "lines"),
        ("<think>A | effect | Z</think>**A** | effect | B", [("A", "effect", "B")], "lines"),
    ],
)
def test_parse_formats(reply: str, expected: list[tuple[str, str, str]], method: str) -> None:
    found = parse_triplets(reply)
    assert found.triplets == expected
    assert found.method == method
    assert found.parsed


def test_unparseable_lines_are_kept_and_counted() -> None:
    found = parse_triplets("Interactions:\nA | effect | B\nthe drugs may interact somehow")
    assert found.triplets == [("A", "effect", "B")]
    assert found.unparsed_lines == ["the drugs may interact somehow"]


@pytest.mark.parametrize("reply", ["none", "No interactions.", "[]", "- None"])
def test_explicit_none_is_an_answer(reply: str) -> None:
    found = parse_triplets(reply)
    assert found.triplets == [] and found.stated_none and found.parsed
    assert triplet_parser(reply, Sample(id="s", input="")) == ParsedAnswer(value=[], method=found.method)


def test_prose_without_triplets_is_unparsed() -> None:
    assert not parse_triplets("I am not sure what the sentence means.").parsed
    assert not triplet_parser("I am not sure.", Sample(id="s", input="")).parsed


def test_normalisation_case_whitespace_and_relation_separators() -> None:
    assert normalise(["  Aspirin ", "Effect", '"WARFARIN".']) == ("aspirin", "effect", "warfarin")
    assert normalise(["x", "SUBSTRATE_PRODUCT-OF", "y"]) == ("x", "substrate-product-of", "y")
    assert normalise(["b", "int", "a"], symmetric=True) == ("a", "int", "b")


def test_gold_triplets_score_one() -> None:
    assert f1(list(GOLD)) == 1.0
    assert f1([("ASPIRIN", "EFFECT", "warfarin "), ("Ketoconazole", "mechanism", "Midazolam")]) == 1.0


@pytest.mark.parametrize(
    ("predicted", "counts"),
    [
        # one component wrong: the triplet is a false positive and its gold a false negative
        ([("ibuprofen", "effect", "warfarin"), GOLD[1]], Counts(1, 1, 1)),  # wrong subject
        ([("aspirin", "advise", "warfarin"), GOLD[1]], Counts(1, 1, 1)),  # wrong relation
        ([("aspirin", "effect", "heparin"), GOLD[1]], Counts(1, 1, 1)),  # wrong object
        ([*GOLD, ("aspirin", "int", "heparin")], Counts(2, 1, 0)),  # extra triplet
        ([GOLD[0]], Counts(1, 0, 1)),  # missing triplet
        ([("warfarin", "effect", "aspirin"), GOLD[1]], Counts(1, 1, 1)),  # swapped order, ordered pairs
    ],
)
def test_each_component_error_lowers_f1_as_specified(predicted: list[tuple[str, str, str]], counts: Counts) -> None:
    found, _ = match_triplets(predicted, GOLD)
    assert found == counts
    # F1 = 2 tp / (2 tp + fp + fn): 2/4 for one wrong component, 4/5 for an extra, 2/3 for a missing triplet
    assert found.f1 == pytest.approx(2 * counts.tp / (2 * counts.tp + counts.fp + counts.fn))
    assert found.f1 is not None and found.f1 < 1.0


def test_swapped_order_matches_when_pairs_are_unordered() -> None:
    swapped = [("warfarin", "effect", "aspirin"), ("midazolam", "mechanism", "ketoconazole")]
    assert f1(swapped) == 0.0
    assert f1(swapped, symmetric=True) == 1.0


def test_repeated_triplets_count_once_and_per_type_counts() -> None:
    counts, per_type = match_triplets([GOLD[0], GOLD[0], ("a", "int", "b")], GOLD)
    assert counts == Counts(1, 1, 1)
    assert per_type == {"effect": Counts(1, 0, 0), "int": Counts(0, 1, 0), "mechanism": Counts(0, 0, 1)}


def test_counts_undefined_scores_are_none() -> None:
    assert Counts().f1 is None and Counts().precision is None and Counts(fn=2).precision is None
    assert Counts(fn=2).recall == 0.0


async def test_scorer_values_and_metadata() -> None:
    sample = Sample(id="s1", input="text", metadata={"triplets": [list(t) for t in GOLD]})
    reply = "aspirin | effect | warfarin\nsomething unreadable"
    generation = Generation(sample_id="s1", output=reply, answer=ParsedAnswer(value=None))
    score = await TripletF1(symmetric=True)(sample, generation, SampleContext({}))
    assert score.values["tp"] == 1 and score.values["fp"] == 0 and score.values["fn"] == 1
    assert score.values["precision"] == 1.0 and score.values["recall"] == 0.5
    assert score.values["f1"] == pytest.approx(2 / 3)
    assert score.values["unparsed_lines"] == 1
    assert score.metadata["per_type"] == {"effect": [1, 0, 0], "mechanism": [0, 0, 1]}


def test_scorer_is_registered() -> None:
    built = create_scorer("triplet-f1", symmetric=True)
    assert isinstance(built, TripletF1) and built.symmetric


class _Echo:
    name = "echo"

    async def __call__(self, sample: Sample, ctx: SampleContext) -> WorkflowResult:
        return WorkflowResult(output=(await ctx.generate("extract", sample.input)).text)


def test_micro_f1_sums_counts_over_the_corpus(tmp_path: Path) -> None:
    samples = [
        Sample(id="one", input="q1", metadata={"triplets": [["a", "effect", "b"]]}),
        Sample(id="two", input="q2", metadata={"triplets": [["c", "int", "d"], ["e", "int", "f"], ["g", "int", "h"]]}),
    ]
    replies = {"q1": "a | effect | b", "q2": "none"}
    task = Task(name="toy-extraction", dataset=samples, workflow=_Echo(), scorers=[TripletF1()], parser=triplet_parser)
    model = Model(ScriptedModel(lambda messages, _config: replies[messages[-1].content]))
    store_path = tmp_path / "runs.sqlite"
    result = run(RunConfig(task="toy-extraction", store=str(store_path)), task=task, models={"model": model})
    store = RunStore(store_path)
    report = micro_f1(store, result.run.run_id)
    # micro: 2*1 / (2*1 + 0 + 3) = 0.4, not the mean of per-sample F1 (1.0 and 0.0 → 0.5)
    assert report.overall == Counts(1, 0, 3)
    assert report.overall.f1 == pytest.approx(0.4)
    assert report.per_type["int"] == Counts(0, 0, 3)
    assert report.unparsed == 0 and report.samples == 2
    assert report.f1_ci is not None and 0.0 <= report.f1_ci[0] <= report.f1_ci[1] <= 1.0
    means = {m.metric: m.value for m in summarize(store, result.run.run_id).metrics if m.group is None}
    # the run summary's means of tp/fp/fn give the same micro-F1
    assert 2 * means["tp"] / (2 * means["tp"] + means["fp"] + means["fn"]) == pytest.approx(0.4)
    assert "| **micro** | 1 | 0 | 3 |" in report.to_markdown()
    store.close()
