"""The viewer's pages over a store of real runs, through the real app (no browser)."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from ebmeval.report import collect, write_report
from ebmeval.store import RunStore
from ebmeval.view import SampleFilter, sample_rows, select
from ebmeval.view._app import create_app
from tests.helpers.browser import free_port
from tests.helpers.cli import ebmeval

from .conftest import Runs


@pytest.fixture(scope="module")
def client(runs: Runs) -> TestClient:
    return TestClient(create_app(runs.store))


def ids(html: str) -> list[str]:
    return re.findall(r'/samples/([^?"]+)\?epoch', html)


def test_run_list_shows_options_metrics_and_flags(client: TestClient, runs: Runs) -> None:
    page = client.get("/").text
    for run_id in (runs.retrieval, runs.random, runs.judged, runs.failed, runs.unsure):
        assert f'href="/runs/{run_id}"' in page
    assert "retrieval=" in page and "k=3" in page  # the task options
    assert f'href="/runs/{runs.retrieval}?score_set=accuracy&amp;metric=accuracy"' in page
    assert f'href="/runs/{runs.failed}?kind=errored">2 errored' in page
    assert f'href="/runs/{runs.unsure}?kind=unparsed">6 unparsed' in page


def test_filters_select_the_rows_they_name(runs: Runs) -> None:
    store = RunStore(runs.store, read_only=True)
    random = sample_rows(store, runs.random)
    wrong = select(random, SampleFilter(kinds=("wrong",)))
    right = select(random, SampleFilter(kinds=("correct",)))
    assert wrong and right and len(wrong) + len(right) == 6
    assert all(r.scores["accuracy"]["accuracy"] == 0.0 for r in wrong)
    assert select(random, SampleFilter(score_set="accuracy", metric="accuracy", low=0.5)) == right
    assert select(random, SampleFilter(metric="accuracy", high=0.5)) == wrong
    assert select(random, SampleFilter(score_set="no such set")) == []
    assert len(select(sample_rows(store, runs.unsure), SampleFilter(kinds=("unparsed",)))) == 6
    failed = sample_rows(store, runs.failed)
    assert len(select(failed, SampleFilter(kinds=("errored",)))) == 2
    assert "maximum context length is 8 tokens" in failed[0].errors[0]
    judged = sample_rows(store, runs.judged)
    assert select(judged, SampleFilter(kinds=("wrong",))) == []  # a 0–5 rubric is not right/wrong
    assert len(select(judged, SampleFilter(metric="rubric", low=4, high=4))) == 2
    assert select(judged, SampleFilter(metric="rubric", low=4.5)) == []


def test_label_filter_matches_sample_metadata(client: TestClient, runs: Runs) -> None:
    store = RunStore(runs.store, read_only=True)
    rows = sample_rows(store, runs.random)
    key, value = next((k, v) for k, v in rows[0].labels.items() if isinstance(v, str) and len(v) < 40)
    chosen = select(rows, SampleFilter(label=f"{key}={value}"))
    assert rows[0] in chosen and all(r.labels[key] == value for r in chosen)
    page = client.get(f"/runs/{runs.random}", params={"label": f"{key}={value}"}).text
    assert sorted(ids(page)) == sorted(r.sample_id for r in chosen)


def test_sample_list_filters_over_http(client: TestClient, runs: Runs) -> None:
    every = ids(client.get(f"/runs/{runs.random}").text)
    wrong = ids(client.get(f"/runs/{runs.random}", params={"kind": "wrong"}).text)
    right = ids(client.get(f"/runs/{runs.random}", params={"kind": "correct"}).text)
    assert len(every) == 6 and sorted(wrong + right) == sorted(every) and wrong
    both = client.get(f"/runs/{runs.random}", params=[("kind", "wrong"), ("kind", "correct")]).text
    assert ids(both) == [] and "No sample matches." in both
    assert client.get(f"/runs/{runs.random}", params={"kind": "bogus"}).status_code == 404
    assert client.get(f"/runs/{runs.random}", params={"low": "x", "metric": "accuracy"}).status_code == 404
    errored = client.get(f"/runs/{runs.failed}", params={"kind": "errored"}).text
    assert len(ids(errored)) == 2 and "HTTP 400: This model&#39;s maximum context" in errored


def test_sample_page_shows_prompt_steps_judge_and_reading(client: TestClient, runs: Runs) -> None:
    sample_id = ids(client.get(f"/runs/{runs.judged}").text)[0]
    page = client.get(f"/runs/{runs.judged}/samples/{sample_id}").text
    assert "Early mobilisation probably reduces falls" in page  # the output
    assert "You compare a candidate conclusion" in page  # the judge's prompt
    assert "The candidate keeps the direction of effect." in page  # the judge's rationale
    assert "Early mobilisation increased falls." in page  # a negated abstract
    assert page.count('class="step judged"') >= 1 and "negation/" in page
    assert "rubric" in page and "4.000" in page
    retrieved = client.get(f"/runs/{runs.retrieval}/samples/{ids(client.get(f'/runs/{runs.retrieval}').text)[0]}").text
    assert "Retrieved documents (3)" in retrieved and "Trial " in retrieved and "Early mobilisation trial" in retrieved
    assert "Reading of the answer" in retrieved and "Answer: yes" in retrieved
    unsure = client.get(f"/runs/{runs.unsure}/samples/{ids(client.get(f'/runs/{runs.unsure}').text)[0]}").text
    assert 'class="flag unparsed">unparsed' in unsure
    missing = client.get(f"/runs/{runs.random}/samples/none-such")
    assert missing.status_code == 404 and "has no sample" in missing.text
    assert client.get("/runs/zzzzzz").status_code == 404


def test_pages_escape_stored_text(client: TestClient, runs: Runs) -> None:
    # the judge's spec ends up in labels and model names: nothing stored is ever raw HTML
    page = client.get(f"/runs/{runs.judged}").text
    assert "<script" not in page
    assert client.get("/").headers["content-security-policy"].startswith("default-src 'none'")


def test_side_by_side_on_shared_samples(client: TestClient, runs: Runs) -> None:
    page = client.get("/compare", params={"a": runs.retrieval, "b": runs.random}).text
    assert "<b>6</b> of 6 shared samples" in page
    only_a = client.get("/compare", params={"a": runs.retrieval, "b": runs.random, "kind": "only-a-right"}).text
    differ = client.get("/compare", params={"a": runs.retrieval, "b": runs.random, "kind": "differ"}).text
    n_only_a = int(re.search(r"<b>(\d+)</b> of 6", only_a).group(1))
    assert n_only_a <= int(re.search(r"<b>(\d+)</b> of 6", differ).group(1))
    none = client.get("/compare", params={"a": runs.random, "b": runs.judged}).text
    assert "share no sample" in none


def test_browsing_never_writes_the_store(runs: Runs) -> None:
    before = hashlib.sha256(runs.store.read_bytes()).hexdigest()
    files = sorted(p.name for p in runs.store.parent.iterdir())
    with TestClient(create_app(runs.store)) as c:
        for path in ("/", f"/runs/{runs.judged}", f"/compare?a={runs.retrieval}&b={runs.random}"):
            assert c.get(path).status_code == 200
    assert hashlib.sha256(runs.store.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in runs.store.parent.iterdir()) == files


def test_report_links_each_metric_to_its_filtered_samples(client: TestClient, runs: Runs, tmp_path: Path) -> None:
    store = RunStore(runs.store, read_only=True)
    files = write_report(collect(store, [runs.random, runs.retrieval], view_url="http://127.0.0.1:8766"), tmp_path)
    html = files.html.read_text()
    link = f"http://127.0.0.1:8766/runs/{runs.random}?score_set=accuracy&amp;metric=accuracy"
    assert f'<a href="{link}">' in html
    landed = client.get(link.replace("&amp;", "&").removeprefix("http://127.0.0.1:8766"))
    assert sorted(ids(landed.text)) == sorted(r.sample_id for r in sample_rows(store, runs.random))
    plain = write_report(collect(store, [runs.random]), tmp_path / "plain").html.read_text()
    assert "<a href" not in plain


def test_cli_serves_on_loopback_by_default(runs: Runs, tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    code = "from ebmeval.cli import main; main()"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "view", "--store", str(runs.store), "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        for _ in range(100):
            try:
                response = httpx.get(f"http://127.0.0.1:{port}/")
                break
            except httpx.ConnectError:
                time.sleep(0.1)
        assert response.status_code == 200 and runs.random in response.text
        listening = subprocess.run(["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True).stdout
        assert f"127.0.0.1:{port}" in listening and f"0.0.0.0:{port}" not in listening
    finally:
        proc.terminate()
        proc.wait(10)


def test_cli_missing_store_is_one_line_exit_2(tmp_path: Path) -> None:
    result = ebmeval("view", "--store", str(tmp_path / "none.sqlite"), cwd=tmp_path)
    assert result.returncode == 2
    assert "none.sqlite: no such run store" in result.stdout + result.stderr
    assert "Traceback" not in result.stderr
