"""The viewer in Chromium: each page as a reader sees it, screenshotted, and a report link landing on its samples.

Screenshots go to ``$EBMEVAL_SCREENSHOTS`` (the ones in docs/screenshots were made with
``EBMEVAL_SCREENSHOTS=$PWD/docs/screenshots``), else to the test's temporary folder.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from ebmeval.report import collect, write_report
from ebmeval.store import RunStore
from ebmeval.view._app import create_app
from tests.helpers.browser import chromium, served

from .conftest import Runs

pytestmark = pytest.mark.browser
expect = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed").expect


@pytest.fixture
def browser():
    yield from chromium()


def test_viewer_pages_in_chromium(browser, runs: Runs, tmp_path: Path) -> None:
    shots = Path(os.environ.get("EBMEVAL_SCREENSHOTS", tmp_path))
    shots.mkdir(parents=True, exist_ok=True)
    errors: list[str] = []
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" and "favicon" not in m.text else None)
    with served(create_app(runs.store)) as base:
        page.goto(base)
        expect(page.locator("table.runs tbody tr")).to_have_count(5)
        page.screenshot(path=str(shots / "view-runs.png"), full_page=True)

        # a metric cell opens the run's samples; the wrong filter is ticked in the form
        page.locator(f'a.metric[href^="/runs/{runs.random}?"]').click()
        page.locator('input[name="kind"][value="wrong"]').check()
        page.get_by_role("button", name="Filter").click()
        assert "kind=wrong" in page.url
        flags = page.locator("table.samples tbody .flag")
        assert flags.count() >= 1 and set(flags.all_inner_texts()) == {"wrong"}
        page.screenshot(path=str(shots / "view-samples-wrong.png"), full_page=True)

        # one judged sample: the judge's reply and rationale, the negations, the prompt on demand
        page.goto(f"{base}/runs/{runs.judged}")
        page.locator("table.samples tbody a").first.click()
        expect(page.locator("#steps")).to_contain_text("The candidate keeps the direction of effect.")
        expect(page.locator("#steps")).to_contain_text("Early mobilisation increased falls.")
        page.locator("#steps details.prompt summary").last.click()
        expect(page.locator("#steps details.prompt").last).to_contain_text("You compare a candidate conclusion")
        page.screenshot(path=str(shots / "view-sample-judge.png"), full_page=True)

        # one retrieval sample: the documents with rank and score, the reading of the answer
        page.goto(f"{base}/runs/{runs.retrieval}")
        with_hits = [
            href
            for href in page.locator("table.samples tbody a").evaluate_all("els => els.map(e => e.href)")
            if "/samples/" in href
        ]
        for href in with_hits:
            page.goto(href)
            if page.locator("#retrieved").count():
                break
        expect(page.locator("#retrieved h2")).to_have_text("Retrieved documents (3)")
        expect(page.locator("#answer")).to_contain_text("Reading of the answer")
        page.screenshot(path=str(shots / "view-sample-retrieval.png"), full_page=True)

        # two runs side by side, from the form on the run list
        page.goto(base)
        page.locator('select[name="a"]').select_option(runs.retrieval)
        page.locator('select[name="b"]').select_option(runs.random)
        page.get_by_role("button", name="Compare").click()
        expect(page.locator("p.count")).to_contain_text("of 6 shared samples")
        page.get_by_role("link", name="differ").click()
        page.screenshot(path=str(shots / "view-side-by-side.png"), full_page=True)

        # a report's metric cell lands on the matching filtered view
        store = RunStore(runs.store, read_only=True)
        report = write_report(collect(store, [runs.unsure, runs.random], view_url=base), tmp_path / "report")
        page.goto(report.html.as_uri())
        page.locator("table a").filter(has_text=re.compile(r"\d")).first.click()
        assert page.url.startswith(f"{base}/runs/{runs.unsure}?score_set=accuracy&metric=accuracy")
        expect(page.locator("p.count")).to_contain_text("of 6 samples")
        expect(page.locator('select[name="metric"]')).to_have_value("accuracy")
        page.screenshot(path=str(shots / "view-from-report.png"), full_page=True)
    assert errors == []
