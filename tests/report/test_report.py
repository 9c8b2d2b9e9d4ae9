from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from pylatexenc.latexwalker import LatexEnvironmentNode, LatexWalker
from scipy import stats as scipy_stats
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

from ebmeval.report import Table, collect, compare_runs, latex_escape, recall_curve, write_report
from ebmeval.runner import RunConfig, run, summarize
from ebmeval.store import RunStore
from ebmeval.tables import Column
from ebmeval.tasks import Document, Generation, RetrievedDocument, Sample, SampleContext, Score, WorkflowResult
from tests.helpers.toy import scripted_model, toy_task


def two_runs(tmp_path: Path) -> tuple[RunStore, str, str]:
    store_path = str(tmp_path / "runs.sqlite")
    task = toy_task(40)
    always_a = run(RunConfig(task="toy", store=store_path, cache=False), task=task, models={"model": scripted_model()})

    def mostly_b(messages, _config):
        if "Final letter" not in messages[-1].content:
            return "thinking"
        index = int(messages[-1].content.split()[1].rstrip(":")[1:])
        return "A" if index % 10 == 0 else "B"

    other = run(
        RunConfig(task="toy", store=store_path, cache=False, seed=1),
        task=task,
        models={"model": scripted_model(mostly_b)},
    )
    return RunStore(store_path), always_a.run.run_id, other.run.run_id


def test_report_files_and_numbers_match_the_summary(tmp_path: Path) -> None:
    store, a, b = two_runs(tmp_path)
    files = write_report(collect(store, [a, b]), tmp_path / "report")
    html = files.html.read_text()
    assert "<table>" in html and "data:image/png;base64," in html
    markdown = files.markdown.read_text()
    for run_id in (a, b):
        (accuracy,) = [m for m in summarize(store, run_id).metrics if m.metric == "accuracy"]
        assert f"{accuracy.value:.3f}" in markdown
        assert f"[{accuracy.ci[0]:.3f}, {accuracy.ci[1]:.3f}]" in markdown
    assert {p.suffix for p in files.figures} == {".png"}
    assert all(p.stat().st_size > 1000 for p in files.figures)


def test_contrast_uses_mcnemar_on_binary_metrics(tmp_path: Path) -> None:
    store, a, b = two_runs(tmp_path)
    (contrast,) = collect(store, [a, b]).contrasts
    assert contrast.test == "mcnemar" and contrast.n == 40
    values_a = [1.0 if i % 2 == 0 else 0.0 for i in range(40)]
    values_b = [1.0 if (i % 10 == 0) == (i % 2 == 0) else 0.0 for i in range(40)]
    table = np.zeros((2, 2))
    for x, y in zip(values_a, values_b, strict=True):
        table[int(1 - x), int(1 - y)] += 1
    reference = sm_mcnemar(table, exact=True)
    assert contrast.pvalue == pytest.approx(reference.pvalue, rel=1e-12)
    assert contrast.pvalue_adjusted == pytest.approx(reference.pvalue, rel=1e-12)  # one test: Holm changes nothing
    assert contrast.difference == pytest.approx(np.mean(values_a) - np.mean(values_b))


class ZeroOneRubric:
    """A 0-5 rubric scorer (not declared binary) that happens to give only 0s and 1s."""

    name = "toy/rubric-0-5"

    async def __call__(self, sample: Sample, generation: Generation, ctx: SampleContext) -> Score:
        return Score(values={"score": float(generation.output.strip() == "A")})


def test_contrast_test_follows_the_declared_metric_type_not_the_values(tmp_path: Path) -> None:
    task = toy_task(40)
    task.scorers = [ZeroOneRubric()]
    store_path = str(tmp_path / "runs.sqlite")
    a = run(RunConfig(task="toy", store=store_path, cache=False), task=task, models={"model": scripted_model()})

    def mostly_b(messages, _config):
        if "Final letter" not in messages[-1].content:
            return "thinking"
        return "A" if int(messages[-1].content.split()[1].rstrip(":")[1:]) % 4 == 0 else "B"

    b = run(
        RunConfig(task="toy", store=store_path, cache=False, seed=1),
        task=task,
        models={"model": scripted_model(mostly_b)},
    )
    (contrast,) = compare_runs(RunStore(store_path), [a.run.run_id, b.run.run_id])
    x, y = np.ones(40), np.array([1.0 if i % 4 == 0 else 0.0 for i in range(40)])
    assert contrast.test == "paired-t"
    assert contrast.pvalue == pytest.approx(scipy_stats.ttest_rel(x, y).pvalue, rel=1e-9)
    assert contrast.effect_size == pytest.approx(np.mean(x - y) / np.std(x - y, ddof=1), rel=1e-12)


def test_latex_tables_parse_and_escape(tmp_path: Path) -> None:
    store, a, b = two_runs(tmp_path)
    files = write_report(collect(store, [a, b]), tmp_path / "report")
    text = files.latex.read_text()
    nodes, _, _ = LatexWalker(text, tolerant_parsing=False).get_latex_nodes()
    environments = [n for n in nodes if isinstance(n, LatexEnvironmentNode)]
    assert environments and all(e.environmentname == "table" for e in environments)
    assert latex_escape("50% of a_b & c#") == r"50\% of a\_b \& c\#"


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="pdflatex is not installed")
def test_latex_tables_compile(tmp_path: Path) -> None:
    store, a, b = two_runs(tmp_path)
    files = write_report(collect(store, [a, b]), tmp_path / "report")
    document = tmp_path / "doc.tex"
    document.write_text(
        "\\documentclass{article}\\usepackage{booktabs}\\usepackage[utf8]{inputenc}"
        "\\usepackage{newunicodechar}\\newunicodechar{−}{-}\\newunicodechar{—}{--}\\newunicodechar{·}{$\\cdot$}"
        "\\begin{document}\\input{" + str(files.latex) + "}\\end{document}"
    )
    done = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", document.name], cwd=tmp_path, capture_output=True
    )
    assert done.returncode == 0, done.stdout.decode()[-2000:]


def test_markdown_table_escapes_pipes() -> None:
    table = Table("t", ["a", Column("b", "number")])
    table.add("x|y", 3)
    assert "x\\|y" in table.markdown() and "---:" in table.markdown()
    with pytest.raises(ValueError, match="2 columns"):
        table.add("only one")


class RetrievingWorkflow:
    name = "retrieve"

    async def __call__(self, sample: Sample, ctx: SampleContext) -> WorkflowResult:
        # gold document at rank 2 for every sample; two gold documents in all
        docs = [Document(id=f"d{i}", text="t") for i in range(4)]
        gold = {"d1", "d3"}
        ranked = [
            RetrievedDocument(document=d, score=1.0 / (i + 1), rank=i + 1, gold=d.id in gold)
            for i, d in enumerate(docs)
        ]
        return WorkflowResult(output="A", retrieved=ranked)


def test_recall_curve_from_gold_flags(tmp_path: Path) -> None:
    task = toy_task(3)
    task.workflow = RetrievingWorkflow()
    result = run(
        RunConfig(task="toy", store=str(tmp_path / "r.sqlite"), cache=False),
        task=task,
        models={"model": scripted_model()},
    )
    curve = recall_curve(RunStore(tmp_path / "r.sqlite"), result.run.run_id)
    assert curve == pytest.approx([0.0, 0.5, 0.5, 1.0])


def test_cli_report_and_compare(tmp_path: Path) -> None:
    store, a, b = two_runs(tmp_path)
    cli = [sys.executable, "-c", "from ebmeval.cli import main; main()"]
    done = subprocess.run(
        [*cli, "report", a, b, "--out", "rep", "--store", str(store.path)], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "rep" / "report.html").exists()
    # the toy scorer declares its metric binary where it is defined: the process must import it
    declared = [sys.executable, "-c", "import tests.helpers.toy; from ebmeval.cli import main; main()"]
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([*sys.path, str(Path(__file__).parents[2])])}
    for command, test in ((cli, "paired-t"), (declared, "mcnemar")):
        done = subprocess.run(
            [*command, "compare", a, b, "--store", str(store.path), "--json"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env=environment,
        )
        (row,) = json.loads(done.stdout)
        assert row["test"] == test and row["n"] == 40


def test_judge_versus_human_section(tmp_path: Path) -> None:
    from scipy.stats import pearsonr

    from ebmeval.report import HumanComparison
    from ebmeval.tasks import Score

    store, a, _b = two_runs(tmp_path)
    judge = [0.0, 1.0, 2.0, 4.0, 5.0, 3.0]
    human = {"ann1": [0.0, 2.0, 2.0, 4.0, 5.0, 2.0], "ann2": [1.0, 1.0, 3.0, 5.0, 4.0, 3.0]}
    judged = store.register_score_set(a, {"name": "judge/rubric"}, "judge/rubric")
    for i, value in enumerate(judge):
        store.put_score(a, f"q{i}", 0, judged.id, Score(values={"score": value}))
        for annotator, values in human.items():
            store._write(
                "INSERT INTO human_scores (run_id, sample_id, epoch, study, annotator, form, field, value, raw,"
                " answered_at, created_at) VALUES (?, ?, 0, 'pilot', ?, 'rubric', 'score', ?, '', 'now', 'now')",
                (a, f"q{i}", annotator, values[i]),
            )
    data = collect(store, [a], human=[HumanComparison("pilot", "judge/rubric", "score")])
    (comparison,) = data.human
    means = [(x + y) / 2 for x, y in zip(human["ann1"], human["ann2"], strict=True)]
    assert comparison.n_pairs == 6
    assert comparison.pearson["value"] == pytest.approx(pearsonr(judge, means).statistic, rel=1e-12)
    assert comparison.bland_altman["bias"] == pytest.approx(np.mean(np.subtract(means, judge)), rel=1e-12)
    files = write_report(data, tmp_path / "rep")
    markdown = files.markdown.read_text()
    assert "Judge versus human" in markdown and "bias (human − judge)" in markdown and "pooled" in markdown
    assert any(p.stem == "human-0" for p in files.figures)


class SnippetWorkflow:
    name = "snippets"

    async def __call__(self, sample: Sample, ctx: SampleContext) -> WorkflowResult:
        # three snippets of gold article 7, then one of gold article 9; two gold articles in all
        pmids = ["7", "7", "7", "9"]
        ranked = [
            RetrievedDocument(
                document=Document(id=f"s{i}", text="t", metadata={"pmid": p}), score=1.0, rank=i + 1, gold=True
            )
            for i, p in enumerate(pmids)
        ]
        return WorkflowResult(output="A", retrieved=ranked)


def test_recall_counts_each_gold_article_once(tmp_path: Path) -> None:
    task = toy_task(1)
    task.dataset = [s.model_copy(update={"metadata": {"pmids": ["7", "9"]}}) for s in task.dataset]
    task.workflow = SnippetWorkflow()
    result = run(
        RunConfig(task="toy", store=str(tmp_path / "r.sqlite"), cache=False),
        task=task,
        models={"model": scripted_model()},
    )
    assert recall_curve(RunStore(tmp_path / "r.sqlite"), result.run.run_id) == pytest.approx([0.5, 0.5, 0.5, 1.0])


def test_synthesis_recall_divides_by_the_studies_of_the_item_not_the_gold_found(tmp_path: Path) -> None:
    from ebmeval.synthesis import RetrievalRecall

    task = toy_task(1)
    studies = [Document(id=f"d{i}", text="t") for i in (1, 3, 5, 7)]  # four gold studies; d1, d3 retrieved
    task.dataset = [s.model_copy(update={"documents": studies}) for s in task.dataset]
    task.workflow = RetrievingWorkflow()
    task.scorers = [RetrievalRecall()]
    result = run(
        RunConfig(task="toy", store=str(tmp_path / "r.sqlite"), cache=False),
        task=task,
        models={"model": scripted_model()},
    )
    store = RunStore(tmp_path / "r.sqlite")
    ((_sample, _epoch, _label, score),) = store.scores(result.run.run_id)
    assert score.values["recall"] == 0.5
    assert recall_curve(store, result.run.run_id) == pytest.approx([0.0, 0.25, 0.25, 0.5])


def test_long_list_options_are_shortened_in_labels_but_stay_distinct() -> None:
    from ebmeval.report._build import _short

    many = [f"m3-{i}" for i in range(5)]
    assert _short(many).startswith("[m3-0, … 5 values #") and _short(many) != _short([*many[:4], "m3-9"])
    assert _short(["a", "b"]) == "['a', 'b']" and _short(10) == "10"


def test_report_csv_holds_numbers_not_formatted_text(tmp_path: Path) -> None:
    store, a, b = two_runs(tmp_path)
    data = collect(store, [a, b])
    files = write_report(data, tmp_path / "report")
    (metrics_csv,) = [p for p in files.csv if p.name.startswith("metrics")]
    rows = list(csv.DictReader(metrics_csv.open()))
    summary = data.summaries[a]
    (accuracy,) = [m for m in summary.metrics if m.metric == "accuracy" and m.group is None]
    (row,) = [r for r in rows if r["run"] == data.labels[a]]
    assert float(row["value"]) == accuracy.value
    assert (float(row["95% CI low"]), float(row["95% CI high"])) == accuracy.ci
    assert int(row["tokens in"]) == summary.usage.input_tokens and row["cost"] == ""  # no price: missing
    (contrasts_csv,) = [p for p in files.csv if p.name.startswith("paired")]
    (contrast,) = data.contrasts
    (row,) = list(csv.DictReader(contrasts_csv.open()))
    assert float(row["p"]) == contrast.pvalue  # the number itself; text tables round it (or show <0.001)
    assert f"| {contrast.pvalue:.3f} |" in files.markdown.read_text()


def test_identical_epochs_change_neither_the_interval_nor_the_paired_test(tmp_path: Path) -> None:
    """Ten epochs that repeat one reply carry the information of one: the sample is the unit of analysis."""

    def every_third_b(messages, _config):
        if "Final letter" not in messages[-1].content:
            return "thinking"
        return "B" if int(messages[-1].content.split()[1].rstrip(":")[1:]) % 3 == 0 else "A"

    found, said = {}, {}
    for epochs in (1, 10):
        store_path = str(tmp_path / f"epochs-{epochs}.sqlite")
        task = toy_task(12)
        config = RunConfig(task="toy", store=store_path, cache=False, epochs=epochs)
        a = run(config, task=task, models={"model": scripted_model()}).run.run_id
        b = run(config.model_copy(update={"seed": 1}), task=task, models={"model": scripted_model(every_third_b)})
        store = RunStore(store_path)
        (accuracy,) = [m for m in summarize(store, a).metrics if m.metric == "accuracy"]
        (contrast,) = compare_runs(store, [a, b.run.run_id])
        found[epochs] = (accuracy.value, accuracy.ci, accuracy.n, contrast.n, contrast.test, contrast.pvalue)
        said[epochs] = any("averaged per sample" in note for note in summarize(store, a).notes)
    assert found[10] == found[1]
    assert found[1][2] == found[1][3] == 12
    assert said == {1: False, 10: True}
