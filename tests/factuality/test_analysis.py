import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as scipy_stats

from ebmeval.factuality import (
    Assessment,
    FactualityLabels,
    SummaryPair,
    agreement,
    analyze,
    confusion_matrix,
    correctness_rates,
    label_accuracy,
    rouge_by_correctness,
    ttest,
    welch_ttest,
)
from ebmeval.stats import StatsInputError, cohen_kappa
from ebmeval.store import RunStore
from tests.helpers.cli import ebmeval


def make(i: int, correct: bool, t_dir: str = "positive", g_dir: str = "positive") -> Assessment:
    labels = FactualityLabels(
        population=correct, intervention=True, outcome=True, direction=t_dir == g_dir, modality=True,
        grammar=True, lexical=True, non_redundancy=True,
    )  # fmt: skip
    generated = "statins reduce mortality" if correct else "aspirin for stroke"
    pair = SummaryPair(f"r{i}", generated, "statins reduce mortality")
    return Assessment(pair, labels, t_dir, "moderate", g_dir, "weak")  # type: ignore[arg-type]


def test_correctness_rates_with_bootstrap_ci() -> None:
    items = [make(i, i % 4 != 0) for i in range(8)]
    rates = {r.category: r for r in correctness_rates(items, n_resamples=500)}
    population = rates["population"].rate
    assert population is not None and population.value == 0.75 and population.n == 8
    assert population.ci is not None and population.ci[0] < 0.75 < population.ci[1]
    assert rates["factually_correct"].rate is not None and rates["factually_correct"].rate.value == 0.75


def test_confusion_matrix_rows_are_target() -> None:
    items = [make(0, True, "positive", "negative"), make(1, True, "positive", "positive"), make(2, True)]
    items.append(Assessment(items[0].pair, items[0].labels))
    matrix = confusion_matrix(items, "direction")
    assert matrix.labels == ("positive", "negative", "no effect")
    assert matrix.counts[0] == (2, 1, 0) and matrix.missing == 1
    assert confusion_matrix(items, "modality").counts[1][2] == 3


def test_welch_matches_scipy_and_refuses_degenerate_groups() -> None:
    a, b = [0.1, 0.4, 0.35, 0.8], [0.2, 0.25, 0.1]
    result = welch_ttest(a, b)
    expected = scipy_stats.ttest_ind(a, b, equal_var=False)
    assert result.statistic == pytest.approx(expected.statistic) and result.pvalue == pytest.approx(expected.pvalue)
    assert result.value == pytest.approx(np.mean(a) - np.mean(b))
    with pytest.raises(StatsInputError):
        welch_ttest([0.1], b)
    with pytest.raises(StatsInputError):
        welch_ttest([0.5, 0.5], [0.2, 0.2])


def test_rouge_split_by_correctness() -> None:
    items = [make(i, i % 2 == 0) for i in range(6)]
    scores = [{"rougeL": 0.9 - 0.01 * i if i % 2 == 0 else 0.1 + 0.02 * i} for i in range(6)]
    tests = {t.category: t for t in rouge_by_correctness(items, scores)}
    assert tests["population"].n_correct == 3 and tests["population"].test is not None
    assert tests["population"].test.value == pytest.approx(0.88 - 0.16)
    assert tests["intervention"].test is None and "at least 2" in tests["intervention"].note


def test_agreement_two_raters_matches_stats() -> None:
    a = {"x": True, "y": False, "z": True, "w": True}
    b = {"x": True, "y": True, "z": True, "w": None}
    result = agreement("population", {"a": a, "b": b})
    assert result.n == 3 and result.percent == pytest.approx(2 / 3)
    assert result.cohen == pytest.approx(cohen_kappa([1, 0, 1], [1, 1, 1], categories=[0, 1]).value)
    assert result.fleiss is not None and result.ac1 is not None
    empty = agreement("population", {"a": {"x": True}, "b": {"y": True}})
    assert empty.n == 0 and empty.percent is None


def test_label_accuracy_counts_unlabelled_as_wrong() -> None:
    gold = {"1": "positive", "2": "negative", "3": "no effect", "4": None}
    predicted = {"1": "positive", "2": None, "3": "no effect", "4": "positive"}
    result = label_accuracy("direction", gold, predicted, ["positive", "negative", "no effect"])
    assert (result.n, result.unparsed, result.accuracy) == (3, 1, 2 / 3)
    assert result.agreement.n == 2 and result.agreement.percent == 1.0


def test_analyze_report_markdown() -> None:
    items = [make(i, i % 3 != 0, "positive", "negative" if i == 1 else "positive") for i in range(6)]
    stock = "There is insufficient evidence to support it."
    items[0] = Assessment(
        SummaryPair("bg", stock, "x", background=stock),
        items[0].labels,
    )
    raters = {"a": {a.pair.review_id: a.labels for a in items}, "b": {a.pair.review_id: a.labels for a in items}}
    report = analyze(items, agreement_raters={"a vs b": raters})
    assert report.n == 6 and report.n_background == 1 and report.rouge_background["rouge1"] == 1.0
    assert report.openings[0].opening == "there is insufficient evidence to support"
    text = report.to_markdown()
    assert "### Correctness by category" in text and "| population | 6 | 0.667 |" in text
    assert "### Agreement: a vs b" in text and "| population | 6 | 1.000 |" in text
    assert not math.isnan(report.rouge_target["rougeL"])


def test_cli_analyze_from_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "g.csv").write_text("ReviewID,Generated\nr1,Statins reduce mortality.\nr2,Aspirin helps.\nr3,X\n")
    (tmp_path / "t.csv").write_text("ReviewID,Target\nr1,Statins reduce mortality.\nr2,Aspirin harms.\nr3,X\n")
    cats = ("population", "intervention", "outcome", "direction", "modality")
    header = ",".join(f"{c}__{a}" for a in ("ann1", "ann2") for c in cats)
    (tmp_path / "h.csv").write_text(
        f"ReviewID,{header}\nr1,{','.join(['1'] * 10)}\nr2,{','.join(['1', '1', '1', '0', '1'] * 2)}\n"
        f"r3,{','.join(['0'] * 5 + ['1'] * 5)}\n"
    )
    out = tmp_path / "report.md"
    args = ["factuality", "analyze", "--generated", str(tmp_path / "g.csv"), "--targets", str(tmp_path / "t.csv")]
    args += ["--human", str(tmp_path / "h.csv"), "--main-annotator", "ann1", "--plot", str(tmp_path / "rouge1.png")]
    done = ebmeval(*args, "--out", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert text in done.stdout
    assert "Summaries analysed: 3." in text and "### Agreement: annotators" in text
    assert "| direction | 3 | 0.667 |" in text
    assert "### Agreement with the main annotator ann1 (Table 1 protocol)" in text
    assert "| % agreement (mean over annotators) | 0.667 | 0.667 | 0.667 | — | — | — | 0.667 | 0.667 |" in text
    assert (tmp_path / "rouge1.png").read_bytes().startswith(b"\x89PNG")
    missing = ebmeval("factuality", "analyze", "--generated", str(tmp_path / "g.csv"), cwd=tmp_path)
    assert missing.returncode == 2 and "needs --generated" in missing.stderr and "Traceback" not in missing.stderr


def test_cli_run_reads_task_options_like_every_other_command(tmp_path: Path) -> None:
    store = str(tmp_path / "runs.sqlite")
    args = ["factuality", "--store", store, "run", "factuality/evidence-inference", "--task-arg", "order_seed=01"]
    args += ["--model", "scripted:Change: increased", "--model-arg", "max_concurrency=2", "--concurrency", "2"]
    done = ebmeval(*args, "--limit", "2", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "2/2 done, 0 errors" in done.stdout
    (run,) = RunStore(store).list_runs()
    assert run.config["task_args"]["order_seed"] == 1 and run.config["concurrency"] == 2
    bad = ebmeval("factuality", "run", "factuality/evidence-inference", "--task-arg", "order_seed", cwd=tmp_path)
    assert bad.returncode == 2 and "expected KEY=VALUE" in bad.stderr and "Traceback" not in bad.stderr
    bad = ebmeval("factuality", "run", "factuality/m3-conclusions", "--role-arg", "judge:timeout=5", cwd=tmp_path)
    assert bad.returncode == 2 and "for a role given by --role" in bad.stderr


def test_cli_validate_and_analyze_take_run_prefixes_and_refuse_unknown_runs(tmp_path: Path) -> None:
    """``validate --run PREFIX`` printed an empty table and a nonexistent run exited 0."""
    store = str(tmp_path / "runs.sqlite")
    for seed in ("1", "2"):
        args = [
            "factuality",
            "--store",
            store,
            "run",
            "factuality/evidence-inference",
            "--task-arg",
            f"order_seed={seed}",
        ]
        done = ebmeval(*args, "--model", "scripted:Change: increased", "--limit", "2", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    runs = [r.run_id for r in RunStore(store).list_runs()]
    done = ebmeval("factuality", "--store", store, "validate", "--run", runs[0][:5], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"| {runs[0]} | direction | 2 |" in done.stdout
    missing = ebmeval("factuality", "--store", store, "validate", "--run", "ffffffff", cwd=tmp_path)
    assert missing.returncode == 2 and "no run 'ffffffff'" in missing.stderr and "Traceback" not in missing.stderr
    made = RunStore(store)
    for run_id in ("abcd1111", "abcd2222"):
        made.begin_run(run_id=run_id, config_hash=run_id, config={}, task="t", model="m", seed=0, provenance={})
    made.close()
    ambiguous = ebmeval("factuality", "--store", store, "validate", "--run", "abcd", cwd=tmp_path)
    assert ambiguous.returncode == 2 and "prefix 'abcd' is ambiguous" in ambiguous.stderr
    missing = ebmeval("factuality", "--store", store, "analyze", "--run", "ffffffff", cwd=tmp_path)
    assert missing.returncode == 2 and "no run 'ffffffff'" in missing.stderr
    nostore = ebmeval("factuality", "--store", str(tmp_path / "none.db"), "validate", "--run", "abcd", cwd=tmp_path)
    assert nostore.returncode == 2 and "no run store" in nostore.stderr


def test_rouge_tests_are_student_on_rouge1_2_and_l_with_welch_as_an_option() -> None:
    """The tests were Welch's on ROUGE-L only; the paper uses Student's t on ROUGE-1, -2 and -L."""
    words = ["statins", "reduce", "mortality", "in", "adults", "with", "heart", "disease"]
    items = [
        Assessment(SummaryPair(f"r{i}", " ".join(words[: i + 1]), " ".join(words)), make(i, i % 2 == 0).labels)
        for i in range(8)
    ]
    report = analyze(items)
    assert sorted({t.metric for t in report.rouge_tests}) == ["rouge1", "rouge2", "rougeL"]
    population = [t for t in report.rouge_tests if t.category == "population"]
    assert {t.test.method for t in population if t.test} == {"Student t-test"}
    assert "### rouge1 of correct vs incorrect summaries (Student t-test)" in report.to_markdown()
    welch = [t for t in analyze(items, welch=True).rouge_tests if t.category == "population" and t.test]
    assert {t.test.method for t in welch if t.test} == {"Welch t-test"}


def test_student_ttest_matches_scipy_pooled_variance() -> None:
    a, b = [0.1, 0.4, 0.35, 0.8], [0.2, 0.25, 0.1]
    expected = scipy_stats.ttest_ind(a, b, equal_var=True)
    result = ttest(a, b)
    assert result.statistic == pytest.approx(expected.statistic) and result.pvalue == pytest.approx(expected.pvalue)
    assert result.statistic != pytest.approx(welch_ttest(a, b).statistic)


def test_direction_matrix_counts_applicable_pairs_only() -> None:
    """A target "no evidence" or a generated "no claim" has no direction to compare."""
    pair = SummaryPair("r", "x", "y")
    labels = FactualityLabels()
    items = [
        Assessment(pair, labels, "positive", "moderate", "positive", "weak"),
        Assessment(pair, labels, "positive", "no evidence", "negative", "moderate"),
        Assessment(pair, labels, "negative", "moderate", "positive", "no claim"),
    ]
    matrix = confusion_matrix(items, "direction")
    assert sum(map(sum, matrix.counts)) == 1 and matrix.counts[0][0] == 1
    assert matrix.not_applicable == 2 and matrix.missing == 0


def test_copying_runs_over_every_summary_not_only_the_labelled_ones() -> None:
    labelled = [make(i, True) for i in range(2)]
    stock = "The results of this systematic review suggest that it helps."
    unlabelled = [SummaryPair(f"u{i}", stock, "statins reduce mortality", background=stock) for i in range(3)]
    report = analyze(labelled, pairs=[a.pair for a in labelled] + unlabelled)
    assert report.n == 2 and report.n_copying == 5 and report.n_background == 3
    assert [(o.opening, o.count, o.share) for o in report.openings] == [
        ("the results of this systematic review suggest", 3, 0.6)
    ]
    assert report.rouge_background["rouge1"] == 1.0
    custom = analyze(labelled, pairs=unlabelled, openings=["the results of this"])
    assert [o.opening for o in custom.openings] == ["the results of this"]


def test_bertscore_tests_beside_rouge_on_request() -> None:
    """The paper's footnote 9: the same t-tests on BERTScore."""
    pytest.importorskip("bert_score")
    words = ["statins", "reduce", "mortality", "in", "adults", "with", "heart", "disease"]
    items = [
        Assessment(SummaryPair(f"r{i}", " ".join(words[: i + 2]), " ".join(words)), make(i, i % 2 == 0).labels)
        for i in range(6)
    ]
    report = analyze(items, bertscore=True)
    bert = [t for t in report.rouge_tests if t.metric == "bertscore" and t.category == "population"]
    assert len(bert) == 1 and bert[0].test is not None and bert[0].test.method == "Student t-test"
    assert bert[0].mean_correct is not None and 0.0 < bert[0].mean_correct <= 1.0
    assert "### bertscore of correct vs incorrect summaries (Student t-test)" in report.to_markdown()
    assert not any(t.metric == "bertscore" for t in analyze(items).rouge_tests)
