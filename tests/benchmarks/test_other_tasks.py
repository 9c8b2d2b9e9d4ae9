from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from ebmeval import create_task
from ebmeval._util.errors import ConfigError
from ebmeval.builtin_tasks.medthink import load_medthink
from ebmeval.builtin_tasks.mirage import DATASETS, load_mirage
from ebmeval.builtin_tasks.pubmedqa import load_pubmedqa
from ebmeval.builtin_tasks.relation_mcq import Triplet, ddi_triplets, mark_entities, relation_samples
from ebmeval.tasks import task_registry

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"


def test_every_family_is_registered() -> None:
    expected = {"caremedeval", "medthink", "pubmedqa", "relation-mcq", *(f"mirage/{d}" for d in DATASETS)}
    create_task("pubmedqa")
    assert expected <= set(task_registry)


@pytest.mark.parametrize(
    ("dataset", "size", "letters"),
    [
        ("mmlu_med", 1089, "ABCD"),
        ("medqa", 1273, "ABCD"),
        ("medmcqa", 4183, "ABCD"),
        ("pubmedqa", 500, "ABC"),
        ("bioasq", 618, "AB"),
    ],
)
def test_mirage_sizes_and_options(dataset: str, size: int, letters: str) -> None:
    samples = load_mirage(dataset)
    assert len(samples) == size
    assert all("".join(s.choices or {}) == letters and s.target in letters for s in samples)
    assert all(s.documents == [] for s in samples)


def test_mirage_pubmedqa_is_question_only_pubmedqa() -> None:
    star = {s.id: s for s in load_mirage("pubmedqa")}
    full = load_pubmedqa()
    assert set(star) == {s.id for s in full}
    assert all(star[s.id].target == s.target and star[s.id].input == s.input for s in full)
    assert all(star[s.id].metadata["pmids"] == [s.id] for s in full)


def test_mirage_matches_upstream_answers() -> None:
    if not SHARED.exists():
        pytest.skip("upstream data not available")
    benchmark = json.loads((SHARED / "mirage" / "benchmark.json").read_text())
    for dataset, (key, _) in DATASETS.items():
        assert {s.id: s.target for s in load_mirage(dataset)} == {q: v["answer"] for q, v in benchmark[key].items()}


def test_medthink_lettered_questions() -> None:
    samples = load_medthink()
    assert len(samples) == 499
    assert Counter(s.metadata["layout"] for s in samples) == {"lines": 245, "inline": 254}
    assert len(load_medthink("inline")) == 254
    first = samples[0]
    assert (
        first.id == "1"
        and first.target == "A"
        and first.choices == {"A": "IGF1", "B": "ACTH", "C": "TSH", "D": "Serum coisol"}
    )
    assert first.input.endswith("Which of the following test will you do for diagnosis?")
    assert len(first.metadata["scoring_points"]) == 2
    inline = next(s for s in samples if s.id == "10")
    assert "Answer Choices" not in inline.input and len(inline.choices or {}) == 10 and inline.target == "G"
    assert all(s.target in (s.choices or {}) for s in samples)
    with pytest.raises(ConfigError):
        load_medthink("table")  # type: ignore[arg-type]


def test_ddi_counts_match_the_standard_test_split() -> None:
    counts = Counter(t.relation for t in ddi_triplets())
    assert counts == {None: 4737, "effect": 360, "mechanism": 302, "advise": 221, "int": 96}
    assert len(create_task("relation-mcq").dataset) == 979
    with_negatives = create_task("relation-mcq", negatives=True)
    assert len(with_negatives.dataset) == 5716
    assert with_negatives.dataset[0].choices == {
        "A": "advise",
        "B": "effect",
        "C": "mechanism",
        "D": "int",
        "E": "none",
    }


def test_relation_converter() -> None:
    text = "Aspirin increases the effect of warfarin; aspirin is common."
    triplet = Triplet(
        id="t1",
        subject="aspirin",
        relation="effect",
        object="warfarin",
        text=text,
        subject_span=(42, 49),
        object_span=(32, 40),
    )
    assert mark_entities(triplet) == "Aspirin increases the effect of [[warfarin]]; <<aspirin>> is common."
    overlapping = Triplet(
        id="t2", subject="a", relation=None, object="b", text=text, subject_span=(0, 10), object_span=(5, 12)
    )
    assert mark_entities(overlapping) == text
    samples = relation_samples(
        [triplet, overlapping], {"effect": "an effect", "advise": "advice"}, no_relation=("none", "nothing")
    )
    assert samples[0].choices == {"A": "effect", "B": "advise", "C": "none"}
    assert [s.target for s in samples] == ["A", "C"]
    assert samples[0].input.startswith(
        'Which relation does the text state between "aspirin" and "warfarin"? They are marked'
    )
    assert "- none: nothing" in samples[0].input
    assert "marked" not in samples[1].input
    with pytest.raises(ConfigError, match="no 'no relation' option"):
        relation_samples([overlapping], {"effect": "an effect"})
    with pytest.raises(ConfigError, match="unknown relation 'int'"):
        relation_samples([Triplet(id="t3", subject="a", relation="int", object="b")], {"effect": "an effect"})
