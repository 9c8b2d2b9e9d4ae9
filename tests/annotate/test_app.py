from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ebmeval.annotate import make_engine
from ebmeval.annotate._app import create_app
from ebmeval.annotate._models import Answer

from .conftest import CANDIDATE_RE, SYSTEMS, StudySetup, csrf_of


class BlindClient(TestClient):
    """A client that checks every response body for system names."""

    def request(self, *args, **kwargs):  # type: ignore[override]
        response = super().request(*args, **kwargs)
        body = response.text
        for name in SYSTEMS:
            assert name not in body, f"system name {name!r} leaked in {response.request.url}"
        return response


def annotator_client(setup: StudySetup, name: str) -> BlindClient:
    client = BlindClient(create_app(setup.db))
    r = client.get(f"/join/{setup.invitations.tokens[name]}")
    assert r.status_code == 200 and r.url.path == "/onboarding"
    return client


def onboard(client: TestClient) -> str:
    csrf = csrf_of(client.get("/onboarding").text)
    r = client.post("/onboarding", data={"csrf_token": csrf, "commit": "yes"})
    assert r.url.path == "/calibration"
    return csrf


def pass_calibration(client: TestClient) -> None:
    page = client.get("/calibration").text
    names = sorted(set(re.findall(r'name="(\d+:c\d:score)"', page)))
    assert len(names) == 2
    r = client.post("/calibration", data={"csrf_token": csrf_of(page), names[0]: "4", names[1]: "1"})
    assert r.url.path == "/calibration/result"
    assert "The tasks are open" in r.text


def test_full_annotator_flow_with_reload_revision_and_completion(rubric_study):
    client = annotator_client(rubric_study, "ann1")
    csrf = onboard(client)
    assert client.get("/tasks/next").url.path == "/calibration"  # tasks stay shut until calibration passes
    page = client.get("/calibration").text
    failing = {n: "5" for n in re.findall(r'name="(\d+:c\d:score)"', page)}
    r = client.post("/calibration", data={"csrf_token": csrf, **failing})
    assert "Try again" in r.text and "<mark>increased stroke risk</mark>" in r.text
    assert client.get("/tasks/1").url.path == "/calibration"
    pass_calibration(client)

    r = client.get("/tasks/next")
    assert r.url.path == "/tasks/1"
    assert "Task 1 of 4" in r.text and "Source abstracts (1)" in r.text
    ids = CANDIDATE_RE.findall(r.text)
    assert len(ids) == 3 and len(set(ids)) == 3
    headers = {"X-CSRF-Token": csrf}
    for i, cid in enumerate(ids):
        ok = client.post(
            "/api/tasks/1/answer", json={"target": cid, "field": "score", "value": str(i)}, headers=headers
        )
        assert ok.status_code == 200 and ok.json()["complete"] == (i == 2)
    revised = client.post(
        "/api/tasks/1/answer", json={"target": ids[0], "field": "score", "value": "5"}, headers=headers
    )
    assert revised.status_code == 200
    reloaded = client.get("/tasks/1").text
    assert CANDIDATE_RE.findall(reloaded) == ids  # same opaque ids and order after a reload
    for cid, value in zip(ids, ("5", "1", "2"), strict=True):
        assert f'name="{cid}:score" value="{value}" checked' in reloaded

    incomplete = client.post("/tasks/2", data={"csrf_token": csrf})
    assert incomplete.status_code == 422 and "Answer every question" in incomplete.text
    done = client.post("/tasks/1", data={"csrf_token": csrf})
    assert done.url.path == "/tasks/2"
    for n in range(2, 5):
        page = client.get(f"/tasks/{n}").text
        form = {f"{cid}:score": "3" for cid in CANDIDATE_RE.findall(page)}
        client.post(f"/tasks/{n}", data={"csrf_token": csrf, **form})
    finished = client.get("/tasks/next")
    assert finished.url.path == "/done" and "completed 4 of 4" in finished.text

    engine = make_engine(rubric_study.db)
    with Session(engine) as s:
        assert s.scalar(select(func.count()).select_from(Answer)) == 12
        assert s.scalar(select(func.sum(Answer.revisions))) == 13


def test_invalid_answers_are_refused(rubric_study):
    client = annotator_client(rubric_study, "ann2")
    csrf = onboard(client)
    pass_calibration(client)
    cid = CANDIDATE_RE.findall(client.get("/tasks/1").text)[0]
    headers = {"X-CSRF-Token": csrf}
    for body, status in [
        ({"target": cid, "field": "score", "value": "6"}, 422),
        ({"target": cid, "field": "pico", "value": "1"}, 422),
        ({"target": "task", "field": "score", "value": "1"}, 422),
        ({"target": cid, "field": "score"}, 422),
        ({"target": cid, "field": "score", "value": "x" * 40}, 422),
    ]:
        assert client.post("/api/tasks/1/answer", json=body, headers=headers).status_code == status
    assert (
        client.post(
            "/api/tasks/99/answer", json={"target": cid, "field": "score", "value": "1"}, headers=headers
        ).status_code
        == 404
    )


def test_cross_annotator_access_is_refused(rubric_study):
    a = annotator_client(rubric_study, "ann1")
    b = annotator_client(rubric_study, "ann2")
    csrf_a, csrf_b = onboard(a), onboard(b)
    pass_calibration(a)
    pass_calibration(b)
    a_ids = CANDIDATE_RE.findall(a.get("/tasks/1").text)
    b.get("/tasks/1")
    for n in (1, 2):
        # b addresses a's candidates through b's own tasks: unknown targets.
        r = b.post(
            f"/api/tasks/{n}/answer",
            json={"target": a_ids[0], "field": "score", "value": "0"},
            headers={"X-CSRF-Token": csrf_b},
        )
        assert r.status_code == 422
    # a's CSRF token does not work with b's session, and vice versa.
    r = b.post(
        "/api/tasks/1/answer",
        json={"target": a_ids[0], "field": "score", "value": "0"},
        headers={"X-CSRF-Token": csrf_a},
    )
    assert r.status_code == 403
    engine = make_engine(rubric_study.db)
    with Session(engine) as s:
        assert s.scalar(select(func.count()).select_from(Answer)) == 0
    # annotators cannot open the lead's pages
    assert b.get("/admin").status_code == 401
    assert b.get("/admin/export.csv").status_code == 401


def test_tampered_tokens_are_refused(rubric_study):
    token = rubric_study.invitations.tokens["ann1"]
    client = TestClient(create_app(rubric_study.db))
    tampered = token[:-1] + ("A" if token[-1] != "A" else "B")
    assert client.get(f"/join/{tampered}").status_code == 403
    assert client.get("/join/").status_code == 404
    client.cookies.set("ebmeval_annotator", tampered)
    assert client.get("/tasks/1").status_code == 401
    assert client.get("/onboarding").status_code == 401
    admin = rubric_study.invitations.admin_token
    assert client.get(f"/admin/join/{admin[:-2]}").status_code == 403
    assert client.get("/admin", headers={"Authorization": f"Bearer {admin}x"}).status_code == 401
    # an annotator's token is no admin credential
    assert client.get("/admin", headers={"Authorization": f"Bearer {token}"}).status_code == 401


def test_csrf_is_enforced_on_every_state_change(rubric_study):
    client = annotator_client(rubric_study, "ann3")
    assert client.post("/onboarding", data={"commit": "yes"}).status_code == 403
    assert client.post("/onboarding", data={"commit": "yes", "csrf_token": "0" * 64}).status_code == 403
    csrf = onboard(client)
    assert client.post("/calibration", data={}).status_code == 403
    pass_calibration(client)
    cid = CANDIDATE_RE.findall(client.get("/tasks/1").text)[0]
    body = {"target": cid, "field": "score", "value": "2"}
    assert client.post("/api/tasks/1/answer", json=body).status_code == 403
    tampered = csrf[:-1] + ("1" if csrf[-1] == "0" else "0")
    assert client.post("/api/tasks/1/answer", json=body, headers={"X-CSRF-Token": tampered}).status_code == 403
    assert client.post("/tasks/1", data={f"{cid}:score": "2"}).status_code == 403
    admin = TestClient(create_app(rubric_study.db))
    admin.get(f"/admin/join/{rubric_study.invitations.admin_token}")
    assert admin.post("/admin/status", data={"status": "closed"}).status_code == 403
    page = admin.get("/admin").text
    assert admin.post("/admin/status", data={"status": "closed", "csrf_token": csrf_of(page)}).status_code == 200
    # once closed, answers can no longer change
    assert client.post("/api/tasks/1/answer", json=body, headers={"X-CSRF-Token": csrf}).status_code == 409
    assert "read-only" in client.get("/tasks/1").text


def test_dashboard_shows_progress_time_and_agreement(rubric_study):
    clients = {}
    for name in ("ann1", "ann2", "ann3"):
        c = annotator_client(rubric_study, name)
        csrf = onboard(c)
        pass_calibration(c)
        clients[name] = (c, csrf)
    for c, csrf in clients.values():
        while True:
            r = c.get("/tasks/next")
            if r.url.path == "/done":
                break
            ids = CANDIDATE_RE.findall(r.text)
            # everyone gives the score written in the candidate text, whatever slot it is shown in
            texts = [r.text.split(f'data-candidate="{cid}"')[1].split("Candidate text ")[1][:1] for cid in ids]
            c.post(
                r.url.path, data={"csrf_token": csrf, **{f"{cid}:score": t for cid, t in zip(ids, texts, strict=True)}}
            )
    admin = TestClient(create_app(rubric_study.db))
    page = admin.get(f"/admin/join/{rubric_study.invitations.admin_token}").text
    assert "ann1" in page and "4 / 4" in page and "100% passed" in page
    assert "1.000" in page  # identical scores: alpha = 1
    csv_text = admin.get("/admin/export.csv").text
    assert csv_text.splitlines()[0].startswith("study,form,item,annotator,field,system")
    assert all(s in csv_text for s in SYSTEMS)  # the lead's export names the systems
    assert len(csv_text.splitlines()) == 1 + 6 * 2 * 3
    rows = admin.get(
        "/admin/export.json", headers={"Authorization": f"Bearer {rubric_study.invitations.admin_token}"}
    ).json()
    assert {r["value"] for r in rows} == {0.0, 1.0, 2.0}
    assert all(r["seconds"] is not None and r["seconds"] >= 0 for r in rows)


@pytest.mark.parametrize("path", ["/tasks/1", "/calibration", "/done", "/onboarding", "/start"])
def test_pages_need_an_invitation(rubric_study, path):
    client = TestClient(create_app(rubric_study.db))
    r = client.get(path)
    assert r.status_code == 401 and "invitation link" in r.text
