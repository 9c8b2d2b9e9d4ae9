"""A report that cannot be misread: Wilson intervals for proportions, n on bars, no empty plots, safe file names."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from statsmodels.stats.proportion import proportion_confint

from ebmeval.report import collect, write_report
from ebmeval.report._plots import metric_bars
from ebmeval.runner import RunConfig, run, summarize
from ebmeval.stats import wilson_ci
from ebmeval.store import RunStore


@pytest.mark.parametrize(("successes", "n"), [(0, 20), (3, 3), (0, 3), (7, 10), (1, 2), (50, 100)])
def test_wilson_interval_matches_statsmodels(successes: int, n: int) -> None:
    low, high = proportion_confint(successes, n, alpha=0.05, method="wilson")
    assert wilson_ci(successes, n) == pytest.approx((max(0.0, low), min(1.0, high)), abs=1e-12)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunStore, str, str, str]:
    """An all-unparsed pubmedqa run (accuracy 0/3), and synthesis runs whose judge never / always gives a score.

    The judges' score set labels hold spaces, ``:`` and ``[]`` (``judge/rubric-0-5[judge=Overall: 3]``).
    """
    path = tmp_path_factory.mktemp("report") / "runs.sqlite"
    zero = run(RunConfig(task="pubmedqa", model="scripted:I cannot tell.", store=str(path), cache=False, limit=3))

    def synthesis(judge: str) -> str:
        config = RunConfig(
            task="synthesis",
            task_args={"workflow": "parametric-zero-shot", "text_metrics": False},
            model="scripted:Probably beneficial.",
            roles={"judge": f"scripted:{judge}"},
            store=str(path),
            cache=False,
            limit=2,
        )
        return run(config).run.run_id

    return RunStore(path, read_only=True), zero.run.run_id, synthesis("No: opinion"), synthesis("Overall: 3")


def test_a_proportion_at_zero_has_a_wilson_interval_not_a_point(store: tuple[RunStore, str, str, str]) -> None:
    runs, zero, _unscored, _scored = store
    (accuracy,) = [m for m in summarize(runs, zero).metrics if m.metric == "accuracy" and m.group is None]
    assert accuracy.value == 0.0 and accuracy.n == 3 and accuracy.ci_method == "wilson"
    assert accuracy.ci == pytest.approx(wilson_ci(0, 3)) and accuracy.ci[1] > 0.5  # not [0.000, 0.000]


def test_report_names_the_method_and_says_what_unparsed_answers_count_as(
    store: tuple[RunStore, str, str, str], tmp_path: Path
) -> None:
    runs, zero, unscored, _scored = store
    files = write_report(collect(runs, [zero, unscored]), tmp_path)
    html = files.html.read_text()
    assert "Wilson score interval for proportions" in html and ">wilson<" in html
    assert "unparsed=zero (the default of multiple-choice tasks) scores them 0" in html
    assert "left out of the mean" in html and "(e.g. unparsed answers), left out of the mean" not in html


def test_no_empty_plot_and_safe_file_names(store: tuple[RunStore, str, str, str], tmp_path: Path) -> None:
    runs, zero, unscored, scored = store
    report = collect(runs, [zero, unscored, scored])
    assert [m.value for m in report.summaries[unscored].metrics if m.metric == "rubric"] == [None]
    bars = metric_bars(report)
    assert not any("No: opinion" in stem for stem in bars)  # that judge gave no score: no empty plot
    assert any("Overall: 3" in stem for stem in bars)
    files = write_report(report, tmp_path)
    assert len(files.figures) == len(bars) == 2
    for figure in files.figures:
        assert re.fullmatch(r"[A-Za-z0-9._-]+\.png", figure.name), figure.name
