from __future__ import annotations

import json
import statistics
from collections import Counter
from pathlib import Path

import pytest

from ebmeval import create_task
from ebmeval.builtin_tasks.caremedeval import answer_ranking, load_caremedeval
from ebmeval.models import GenerateConfig, Model
from ebmeval.models.providers.baseline import DEFAULT_RANKING, BaselineModel
from ebmeval.scorers import multi_answer
from ebmeval.tasks import Generation, SampleContext, Task
from tests.helpers.cli import ebmeval

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "caremedeval" / "data"


def test_sizes_subsets_and_languages() -> None:
    samples = load_caremedeval()
    assert len(samples) == 534
    assert Counter(len(s.targets) for s in samples) == {1: 102, 2: 153, 3: 153, 4: 107, 5: 19}
    assert len({s.metadata["article"] for s in samples}) == 37
    assert sum(bool(s.metadata["essential_answers"]) for s in samples) == 23
    assert sum(bool(s.metadata["unacceptable_answers"]) for s in samples) == 19
    assert len(load_caremedeval(subset="with_justifications")) == 204
    annotated = load_caremedeval("fr", subset="requires_context")
    assert len(annotated) == 16
    assert Counter(s.metadata["requires_context"] for s in annotated) == {True: 11, False: 5}
    french = load_caremedeval("fr", context="none")
    assert [s.id for s in french] == [s.id for s in samples]
    assert [s.target for s in french] == [s.target for s in samples]
    assert french[0].input != samples[0].input and french[0].documents == []


def test_samples_match_upstream() -> None:
    if not SHARED.exists():
        pytest.skip("upstream data not available")
    upstream = json.loads((SHARED / "english_only" / "all" / "questions_en.json").read_text())
    full, abstract = load_caremedeval(), load_caremedeval(context="abstract")
    for item, sample, short in zip(upstream, full, abstract, strict=True):
        assert sample.id == item["id"] and sample.input == item["question"]
        assert sample.choices == {k.upper(): v for k, v in item["answers"].items()}
        assert sample.target == sorted(a.upper() for a in item["correct_answers"])
        assert short.documents[0].id == sample.documents[0].id == item["id_article"]
        assert sample.metadata["nb_correct_answers"] == item["nb_correct_answers"]
        assert sample.metadata["source_exam"] == item["source_exam"]
    article = (SHARED / "english_only" / "all" / "articles" / "article_1.txt").read_text()
    assert full[0].documents[0].text == article
    assert abstract[0].documents[0].text == (SHARED / "english_only/all/articles_abstract/article_1.txt").read_text()


def test_answer_ranking_is_the_baseline_default() -> None:
    assert answer_ranking(load_caremedeval(context="none")) == DEFAULT_RANKING == "CABDE"


async def run_baseline(
    task: Task, api: BaselineModel, seed: int | None = None, credit: tuple[float, ...] | None = None
) -> dict[str, float]:
    model = Model(api, config=GenerateConfig(seed=seed))
    scorer = multi_answer(lca_credit=credit) if credit else task.scorers[0]
    totals: dict[str, float] = Counter()
    for sample in task.dataset:
        ctx = SampleContext({"model": model})
        result = await task.workflow(sample, ctx)
        generation = Generation(sample_id=sample.id, output=result.output, answer=task.parser(result.output, sample))
        score = await scorer(sample, generation, ctx)
        for key, value in score.values.items():
            assert value is not None
            totals[key] += value
    return {key: round(total / len(task.dataset), 4) for key, total in totals.items()}


# exact match, F1, Hamming, LCA; see docs/tasks/caremedeval.md
PINNED = {
    "most-frequent-2": {"exact_match": 0.0337, "f1": 0.4515, "hamming": 0.3329, "lca": 0.1948},
    "most-frequent-3": {"exact_match": 0.0337, "f1": 0.5513, "hamming": 0.4189, "lca": 0.2102},
    "first-option": {"exact_match": 0.0337, "f1": 0.2813, "hamming": 0.2017, "lca": 0.1718},
}


@pytest.mark.parametrize("kind", sorted(PINNED))
async def test_reference_baselines_table(kind: str) -> None:
    task = create_task("caremedeval", context="none")
    assert await run_baseline(task, BaselineModel(kind)) == PINNED[kind]


async def test_random_baseline_over_seeds_approaches_its_expectation() -> None:
    task = create_task("caremedeval", context="none")
    runs = [await run_baseline(task, BaselineModel("random"), seed=seed) for seed in range(10)]
    mean = {key: statistics.mean(run[key] for run in runs) for key in runs[0]}
    # exact expectation of "K uniform in 1..3, then K options uniformly", computed in the data card
    expected = {"exact_match": 0.0323, "f1": 0.4142, "hamming": 0.3063, "lca": 0.1804}
    assert mean == pytest.approx(expected, abs=0.012)


async def test_ecn_credit_reading() -> None:
    task = create_task("caremedeval", context="none")
    two = await run_baseline(task, BaselineModel("most-frequent-2"), credit=(1.0, 0.5, 0.2))
    three = await run_baseline(task, BaselineModel("most-frequent-3"), credit=(1.0, 0.5, 0.2))
    assert (two["lca"], three["lca"]) == (0.1798, 0.1942)


def test_number_of_correct_answers_and_exam_source_are_metadata() -> None:
    samples = load_caremedeval(context="none")
    assert all(s.metadata["nb_correct_answers"] == len(s.targets) for s in samples)
    assert Counter(s.metadata["exam"] for s in samples) == {"ECN": 264, "CNET": 270}
    assert len({s.metadata["source_exam"] for s in samples}) == 28
    assert all(s.metadata["source_exam"].startswith("https://") for s in samples)


def test_emr_by_number_of_correct_answers_on_a_baseline_run(tmp_path: Path) -> None:
    args = ("run", "--task", "caremedeval", "--model", "baseline/most-frequent-2", "--by", "nb_correct_answers")
    done = ebmeval(*args, "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    emr = {m["group"]: m for m in json.loads(done.stdout)["metrics"] if m["metric"] == "exact_match"}
    samples = load_caremedeval(context="none")
    two = [s for s in samples if len(s.targets) == 2]
    assert emr["2"]["n"] == 153 and emr["2"]["value"] == pytest.approx(sum(s.targets == ["A", "C"] for s in two) / 153)
    assert {g: emr[g]["value"] for g in ("1", "3", "4", "5")} == dict.fromkeys(("1", "3", "4", "5"), 0.0)
    by_exam = ebmeval("show", json.loads(done.stdout)["run_id"], "--by", "exam", "--json", cwd=tmp_path)
    assert {m["group"] for m in json.loads(by_exam.stdout)["metrics"]} == {None, "ECN", "CNET"}


def test_the_inconsistent_item_is_flagged_and_reported() -> None:
    samples = {s.id: s for s in load_caremedeval(context="none")}
    flagged = [s for s in samples.values() if "data_issue" in s.metadata]
    assert [s.id[:8] for s in flagged] == ["350275dd"]
    (item,) = flagged
    assert item.targets == ["C"] and item.metadata["essential_answers"] == ["B"]
    assert "essential answer B is not among the correct answers (C)" in item.metadata["data_issue"]
    assert multi_answer().grade(item.targets, item) == {"exact_match": 1.0, "f1": 1.0, "hamming": 1.0, "lca": 0.0}


def test_a_run_with_the_inconsistent_item_says_so(tmp_path: Path) -> None:
    from ebmeval import RunConfig, run, summarize
    from ebmeval.store import RunStore

    config = RunConfig(task="caremedeval", model="baseline/random", store=str(tmp_path / "s.db"))
    whole = run(config)
    notes = summarize(RunStore(config.store), whole.run.run_id).notes
    assert [n for n in notes if n.startswith("sample 350275dd")] == [
        "sample 350275dda4a98c339efab437f4748327ca09f139cd9007c836e9fb98483b9f5c: essential answer B is not "
        "among the correct answers (C): the correct answer scores LCA 0"
    ]
    others = {s.id for s in load_caremedeval(context="none")} - {n.split()[1].rstrip(":") for n in notes}
    without = summarize(RunStore(config.store), whole.run.run_id, samples=set(list(others)[:20])).notes
    assert not [n for n in without if n.startswith("sample ")]
