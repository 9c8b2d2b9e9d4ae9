from __future__ import annotations

import os
import re
from pathlib import Path
from types import ModuleType

import httpx
import pytest

from ebmeval.annotate import create_study
from tests.helpers.browser import chromium

from .conftest import CANDIDATE_RE, SYSTEMS, csrf_of, write_calibration, write_items

pytestmark = pytest.mark.browser
expect = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed").expect

ADA = {"0": "3", "1": "2", "2": "1"}  # score by candidate text index, whatever slot it is shown in


@pytest.fixture
def browser():
    yield from chromium()


def second_annotator(base: str, token: str) -> None:
    """Dr Ben answers over plain HTTP, agreeing with Dr Ada's scores (slot-wise 1, 2, 3 by text)."""
    with httpx.Client(base_url=base, follow_redirects=True) as client:
        csrf = csrf_of(client.get(f"/join/{token}").text)
        client.post("/onboarding", data={"csrf_token": csrf, "commit": "yes"})
        page = client.get("/calibration").text
        names = sorted(set(re.findall(r'name="(\d+:c\d:score)"', page)))
        client.post("/calibration", data={"csrf_token": csrf, names[0]: "5", names[1]: "0"})
        for n in range(1, 4):
            page = client.get(f"/tasks/{n}").text
            ids = CANDIDATE_RE.findall(page)
            texts = [page.split(f'data-candidate="{cid}"')[1].split("Candidate text ")[1][:1] for cid in ids]
            answers = {f"{cid}:score": ADA[t] for cid, t in zip(ids, texts, strict=True)}
            assert client.post(f"/tasks/{n}", data={"csrf_token": csrf, **answers}).status_code == 200


def test_annotator_and_lead_in_chromium(browser, tmp_path, load_module: ModuleType):
    shots = Path(os.environ.get("EBMEVAL_SCREENSHOTS", tmp_path))
    shots.mkdir(parents=True, exist_ok=True)
    db = str(tmp_path / "annotate.db")
    inv = create_study(
        db,
        slug="browser",
        title="Sepsis trial summaries",
        form="rubric",
        annotators=["Dr Ada", "Dr Ben"],
        k=2,
        files=[write_items(tmp_path / "items.jsonl", n=3)],
        calibration=write_calibration(tmp_path / "gold.jsonl"),
        seed=3,
    )

    def blind(page):
        html = page.content()
        assert not any(s in html for s in SYSTEMS)

    errors: list[str] = []  # console errors, CSP violations among them ("Refused to ...")

    def watch(page):
        # The app has no favicon; any other console error (a CSP violation: "Refused to ...") fails the test.
        page.on(
            "console",
            lambda m: (
                errors.append(m.text)
                if m.type == "error" and not m.location.get("url", "").endswith("/favicon.ico")
                else None
            ),
        )
        page.on("pageerror", lambda e: errors.append(str(e)))
        return page

    with load_module.uvicorn_server(db) as base:
        page = watch(browser.new_page(viewport={"width": 1280, "height": 900}))
        page.goto(f"{base}/join/{inv.tokens['Dr Ada']}")
        assert page.locator("h1").inner_text() == "Welcome, Dr Ada"
        page.screenshot(path=shots / "annotate-onboarding.png", full_page=True)
        page.check("input[name=commit]")
        page.click("button[type=submit]")

        page.wait_for_url("**/calibration")
        radios = page.locator("fieldset")
        assert radios.count() == 2
        radios.nth(0).locator("label.option", has_text="4").first.click()
        radios.nth(1).locator("label.option", has_text="1").first.click()
        page.screenshot(path=shots / "annotate-calibration.png", full_page=True)
        page.click("button[type=submit]")
        page.wait_for_url("**/calibration/result")
        assert page.locator("mark").inner_text() == "increased stroke risk"
        page.screenshot(path=shots / "annotate-calibration-feedback.png", full_page=True)
        page.click("text=Go to the tasks")

        for n in range(1, 4):
            page.wait_for_url(f"**/tasks/{n}")
            assert page.locator(".progress").inner_text() == f"Task {n} of 3"
            # the progress bar is sized by the script (the CSP forbids inline styles)
            expect(page.locator(".meter > span")).to_have_attribute("style", f"width: {round(100 * (n - 1) / 3)}%;")
            blind(page)
            cards = page.locator("article.candidate")
            assert cards.count() == 3
            for i in range(3):
                text = cards.nth(i).locator(".text").inner_text()
                score = ADA[text.split("Candidate text ")[1][0]]
                cards.nth(i).locator(f"input[type=radio][value='{score}']").check()
                expect(page.locator("#save-status")).to_have_text("Saved")
                if n == 2 and i == 0:
                    page.reload()  # mid-task: the first answer must survive
                    assert page.locator("article.candidate").nth(0).locator("input[type=radio]:checked").count() == 1
                    page.screenshot(path=shots / "annotate-task-after-reload.png", full_page=True)
                    cards = page.locator("article.candidate")
            if n == 1:
                page.click("summary")
                page.screenshot(path=shots / "annotate-task.png", full_page=True)
            page.click("button.primary")
        page.wait_for_url("**/done")
        blind(page)
        page.screenshot(path=shots / "annotate-done.png", full_page=True)

        lead = watch(browser.new_page(viewport={"width": 1280, "height": 800}, accept_downloads=True))
        lead.goto(f"{base}/admin/join/{inv.admin_token}")
        second_annotator(base, inv.tokens["Dr Ben"])
        lead.goto(f"{base}/admin")
        assert lead.content().count("3 / 3") == 2
        assert "1.000" in lead.content()  # both annotators gave the same scores: alpha = 1
        lead.screenshot(path=shots / "annotate-dashboard.png", full_page=True)
        with lead.expect_download() as download:
            lead.click("text=Export CSV")
        text = Path(download.value.path()).read_text()
        lines = text.strip().splitlines()
        assert len(lines) == 1 + 2 * 3 * 3
        assert {line.split(",")[3] for line in lines[1:]} == {"Dr Ada", "Dr Ben"}
        assert {line.split(",")[5] for line in lines[1:]} == set(SYSTEMS)
        assert {line.split(",")[9] for line in lines[1:]} == {"1.0", "2.0", "3.0"}
    assert errors == [], errors
