"""The report explains itself: templated HTML, run legend, glossary, chance level and paired-difference intervals."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats as scipy_stats

from ebmeval.report import collect, compare, write_report
from ebmeval.report._glossary import metric_definition
from ebmeval.runner import RunConfig, run
from ebmeval.stats import newcombe_paired_ci
from ebmeval.store import RunStore
from tests.helpers.browser import chromium

INJECTED = "<script>alert(1)</script>"


class _Elements(HTMLParser):
    """Tags, the text of each table cell, and the rows of the table captioned ``caption``."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.tables: dict[str, list[list[str]]] = {}
        self._caption: str | None = None
        self._cell: list[str] | None = None
        self._in_caption = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag == "caption":
            self._in_caption, self._caption = True, ""
        elif tag == "tr" and self._caption is not None:
            self.tables.setdefault(self._caption, []).append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "caption":
            self._in_caption = False
        elif tag in ("td", "th") and self._cell is not None and self._caption is not None:
            self.tables[self._caption][-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._in_caption:
            self._caption = (self._caption or "") + data
        elif self._cell is not None:
            self._cell.append(data)


def _parse(html: str) -> _Elements:
    parser = _Elements()
    parser.feed(html)
    return parser


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunStore, list[str]]:
    """Three pubmedqa runs (3 options): two of one model differing in seed only, one of a model named like markup."""
    path = tmp_path_factory.mktemp("reading") / "runs.sqlite"

    def one(model: str, seed: int = 0) -> str:
        config = RunConfig(task="pubmedqa", model=model, store=str(path), cache=False, limit=6, seed=seed)
        return run(config).run.run_id

    ids = [one("scripted:Answer: yes"), one("scripted:Answer: yes", seed=1), one(f"scripted:{INJECTED}")]
    return RunStore(path, read_only=True), ids


def test_markup_in_a_model_name_is_text_in_the_html_report(runs: tuple[RunStore, list[str]], tmp_path: Path) -> None:
    store, ids = runs
    files = write_report(collect(store, ids), tmp_path, title=f"report {INJECTED}")
    page = _parse(files.html.read_text())
    assert "script" not in page.tags
    legend = page.tables["Runs"]
    assert legend[0][:4] == ["label", "run id", "provider", "model"]
    assert [INJECTED] == [row[3] for row in legend[1:] if row[1] == ids[2]]


def test_labels_are_short_and_the_legend_holds_provider_and_options(runs: tuple[RunStore, list[str]]) -> None:
    store, ids = runs
    report = collect(store, ids)
    assert report.labels[ids[0]] == "pubmedqa · Answer: yes [1]"
    assert report.labels[ids[1]] == "pubmedqa · Answer: yes [2]"
    legend = report.legend_table()
    rows = {row[1]: row for row in legend.rows}
    assert rows[ids[0]][2] == "scripted" and "seed=0" in str(rows[ids[0]][6]) and "seed=1" in str(rows[ids[1]][6])


def test_labels_drop_the_endpoint_and_keep_the_model_name() -> None:
    from ebmeval.models import parse_model_spec
    from ebmeval.report._build import _model_name

    assert _model_name(parse_model_spec("openai-compatible:qwen3-8b@http://127.0.0.1:8080/v1")) == "qwen3-8b"
    assert _model_name(parse_model_spec("local:/models/tiny.gguf")) == "tiny"
    assert _model_name(parse_model_spec("local")) == "local"


def test_glossary_defines_each_metric_from_its_scorer_docstring(runs: tuple[RunStore, list[str]]) -> None:
    store, ids = runs
    glossary = collect(store, ids).glossary_table()
    rows = {(row[2]): row for row in glossary.rows}
    assert rows["accuracy"][3] == "binary (0/1)"
    assert rows["accuracy"][4] == metric_definition("accuracy", "accuracy")
    assert str(rows["accuracy"][4]).startswith("1 when the answer read from the reply is the gold option")
    assert metric_definition("multi_answer", "f1_lenient").startswith("the same metric on the answer read")


def test_chance_level_of_single_answer_multiple_choice(runs: tuple[RunStore, list[str]], tmp_path: Path) -> None:
    store, ids = runs
    report = collect(store, ids)
    assert report.chance_of(ids[0], "accuracy", "accuracy") == pytest.approx(1 / 3)
    metrics = report.metrics_table()
    column = metrics.header.index("chance")
    assert [row[column] for row in metrics.rows if row[2] == "accuracy"] == pytest.approx([1 / 3] * 3)
    assert "1/k for k options" in " ".join(metrics.notes)


def test_newcombe_interval_matches_the_published_worked_example() -> None:
    # Fagerland, Lydersen & Laake (2017), ch. 8: Cavo et al. (2012), 59/6/16/80 → −0.0621 (−0.1186 to −0.0046)
    low, high = newcombe_paired_ci(59, 6, 16, 80)
    assert (round(low, 4), round(high, 4)) == (-0.1186, -0.0046)
    assert newcombe_paired_ci(3, 0, 0, 0)[1] > 0.5  # no discordant pair: an interval, not a point


def _key() -> tuple[str, str]:
    return ("accuracy", "accuracy")


def test_binary_contrast_has_the_newcombe_interval_of_its_paired_table() -> None:
    a = {f"s{i}": float(i % 2) for i in range(20)}
    b = {f"s{i}": float(i % 4 == 0) for i in range(20)}
    (contrast,) = compare({_key(): a}, {_key(): b}, "A", "B", binary={_key()})
    both = sum(a[s] == b[s] == 1 for s in a)
    only_a = sum(a[s] == 1 and b[s] == 0 for s in a)
    only_b = sum(a[s] == 0 and b[s] == 1 for s in a)
    assert contrast.test == "mcnemar" and contrast.ci_method == "Newcombe paired score"
    assert contrast.ci == pytest.approx(newcombe_paired_ci(both, only_a, only_b, 20 - both - only_a - only_b))


def test_scale_contrast_has_the_paired_bootstrap_interval_over_samples() -> None:
    rng = np.random.default_rng(3)
    x, y = rng.normal(1.0, 1.0, 30), rng.normal(0.6, 1.0, 30)
    a = {f"s{i}": float(v) for i, v in enumerate(x)}
    b = {f"s{i}": float(v) for i, v in enumerate(y)}
    (contrast,) = compare({_key(): a}, {_key(): b}, "A", "B")
    order = sorted(a)
    xs, ys = np.array([a[s] for s in order]), np.array([b[s] for s in order])
    reference = scipy_stats.bootstrap(
        (xs, ys),
        lambda u, v, axis: u.mean(axis=axis) - v.mean(axis=axis),
        paired=True,
        vectorized=True,
        n_resamples=10_000,
        method="percentile",
        batch=2**20 // xs.size,
        random_state=np.random.Generator(np.random.SFC64(0)),
    ).confidence_interval
    assert contrast.ci_method == "paired bootstrap over samples"
    assert contrast.ci == pytest.approx((reference.low, reference.high), rel=1e-9)


def test_epoch_means_of_a_binary_metric_take_the_bootstrap_interval() -> None:
    a = {f"s{i}": (0.5 if i % 3 == 0 else 1.0) for i in range(12)}
    b = {f"s{i}": 0.0 for i in range(12)}
    (contrast,) = compare({_key(): a}, {_key(): b}, "A", "B", binary={_key()})
    assert contrast.test == "paired-t" and contrast.ci_method == "paired bootstrap over samples"
    assert contrast.ci is not None and contrast.ci[0] <= contrast.difference <= contrast.ci[1]


def test_compare_prints_the_interval_and_its_method(runs: tuple[RunStore, list[str]]) -> None:
    store, ids = runs
    cli = [sys.executable, "-c", "from ebmeval.cli import main; main()"]
    done = subprocess.run(
        [*cli, "compare", ids[0], ids[2], "--store", str(store.path), "--json"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    (row,) = [r for r in json.loads(done.stdout) if r["metric"] == "accuracy"]
    assert row["ci_method"] == "Newcombe paired score" and row["ci"][0] <= row["difference"] <= row["ci"][1]
    wide = {**os.environ, "COLUMNS": "300"}
    table = subprocess.run(
        [*cli, "compare", ids[0], ids[2], "--store", str(store.path)], capture_output=True, text=True, env=wide
    )
    assert "95% CI (A − B)" in table.stdout and "Newcombe paired score" in table.stdout


@pytest.fixture
def browser() -> Iterator[Any]:
    yield from chromium()


@pytest.mark.browser
def test_report_in_chromium_runs_no_injected_script_and_shows_legend_and_figures(
    browser: Any, runs: tuple[RunStore, list[str]], tmp_path: Path
) -> None:
    store, ids = runs
    files = write_report(collect(store, ids), tmp_path, title="<script>window.injected = 1</script>report")
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(files.html.as_uri())
    assert page.evaluate("window.injected === undefined") and errors == []
    assert page.locator("h1").inner_text() == "<script>window.injected = 1</script>report"
    legend = page.locator("table", has=page.locator("caption", has_text="Runs"))
    assert INJECTED in legend.inner_text()
    widths = page.locator("figure img").evaluate_all("images => images.map(i => i.naturalWidth)")
    assert widths and all(w > 100 for w in widths)
    page.screenshot(path=str(Path(os.environ.get("EBMEVAL_SCREENSHOTS", tmp_path)) / "report.png"), full_page=True)


def test_bars_carry_n_at_their_foot_and_the_chance_line(
    runs: tuple[RunStore, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from matplotlib.collections import LineCollection

    from ebmeval.report import _plots

    store, ids = runs
    drawn: list[Any] = []
    monkeypatch.setattr(_plots, "_png", lambda figure: drawn.append(figure) or b"")
    _plots.metric_bars(collect(store, ids))
    ((axis,),) = [figure.axes for figure in drawn]
    labels = [t for t in axis.texts if t.get_text().startswith("n=")]
    assert [t.get_text() for t in labels] == ["n=6"] * 3
    assert all(t.xy[1] == 0 and t.get_color() != "white" for t in labels)  # the zero bar's n shows too
    lines = [c for c in axis.collections if isinstance(c, LineCollection)]
    chance = [segment for c in lines for segment in c.get_segments() if c.get_linestyle()[0][1] is not None]
    assert len(chance) == 3 and all(s[0][1] == pytest.approx(1 / 3) for s in chance)
    assert [t.get_text() for t in axis.get_legend().get_texts()] == ["chance (1/k options)"]
