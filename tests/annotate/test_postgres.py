from __future__ import annotations

from types import ModuleType

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ebmeval.annotate import create_study, export, make_engine
from ebmeval.annotate._app import create_app
from ebmeval.annotate._models import Annotator, Answer, Assignment, Study

from .conftest import CANDIDATE_RE, csrf_of, write_items

pytestmark = pytest.mark.postgres


def test_flow_on_postgresql(postgres_url, tmp_path):
    inv = create_study(
        postgres_url,
        slug="pg-flow",
        form="factuality",
        annotators=["a", "b"],
        k=2,
        files=[write_items(tmp_path / "i.jsonl", n=2)],
    )
    client = TestClient(create_app(postgres_url))
    page = client.get(f"/join/{inv.tokens['a']}").text
    csrf = csrf_of(page)
    r = client.post("/onboarding", data={"csrf_token": csrf, "commit": "yes"})
    assert r.url.path == "/tasks/1"  # no calibration examples: straight to the tasks
    ids = CANDIDATE_RE.findall(r.text)
    fields = ("population", "intervention", "outcome", "grammar", "lexical", "non_redundancy")
    for _ in range(2):  # saving twice updates in place
        for cid in ids:
            for f in fields:
                ok = client.post(
                    "/api/tasks/1/answer",
                    json={"target": cid, "field": f, "value": "1"},
                    headers={"X-CSRF-Token": csrf},
                )
                assert ok.status_code == 200
    engine = make_engine(postgres_url)
    with Session(engine) as s:  # the database is shared with other tests: this study's answers only
        count, revisions = s.execute(
            select(func.count(), func.sum(Answer.revisions))
            .join(Assignment, Answer.assignment_id == Assignment.id)
            .join(Annotator, Assignment.annotator_id == Annotator.id)
            .join(Study, Annotator.study_id == Study.id)
            .where(Study.slug == "pg-flow")
        ).one()
        assert (count, revisions) == (len(ids) * len(fields), 2 * len(ids) * len(fields))
    engine.dispose()
    assert len(export(postgres_url, "pg-flow").splitlines()) == 1 + len(ids) * len(fields)


def test_concurrent_saves_lose_nothing(postgres_url, load_module: ModuleType):
    """Integrity under concurrent annotators; the throughput is benchmarks/annotate_load.py's to judge."""
    result = load_module.run_load(postgres_url, annotators=20, seconds=10, slug="pg-load")
    assert result["saves_ok"] > 0  # something was saved, however busy the machine
    assert result["save_errors"] == 0
    for key in ("lost", "duplicated", "wrong_value", "lost_revisions", "unexpected"):
        assert result[key] == 0, result
    assert result["answers_stored"] == result["answers_expected"]
