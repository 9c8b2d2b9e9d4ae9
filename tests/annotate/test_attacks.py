"""Attacks on a served study (uvicorn on 127.0.0.1, SQLite and PostgreSQL), each expected to be refused.

The numbers follow the annotation-app findings of issue 16: (1) tokens in logs, (2) the CSRF bypass
with an ``Authorization`` header, (3) login CSRF, unrevocable links and token cookies, (4) unbounded
form fields and writes to closed studies, (5) missing headers, insecure cookies and unlimited token
guessing, (6) broken highlight markup.
"""

from __future__ import annotations

import json
import os
import re
import selectors
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from ebmeval.annotate import StudyInvitations, create_study, export, make_engine
from ebmeval.annotate._models import Annotator, CalibrationAnswer, Study

from .conftest import CANDIDATE_RE, csrf_of, free_port, write_calibration, write_items

CLI = [sys.executable, "-c", "import sys; from ebmeval.cli import main; sys.argv[0] = 'ebmeval'; main()"]
CALIBRATION_NAME_RE = re.compile(r'name="(\d+:c\d:score)"')


@dataclass
class Served:
    base: str
    db: str
    slug: str
    inv: StudyInvitations


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "annotate.db")
    return str(request.getfixturevalue("postgres_url"))


def new_study(db: str, tmp_path: Path, calibration: Path | None = None) -> tuple[str, StudyInvitations]:
    slug = f"attack-{uuid.uuid4().hex[:10]}"
    inv = create_study(
        db,
        slug=slug,
        form="rubric",
        annotators=["ann1", "ann2"],
        k=2,
        files=[write_items(tmp_path / f"{slug}.jsonl", n=2)],
        calibration=calibration or write_calibration(tmp_path / f"{slug}-gold.jsonl"),
        seed=1,
    )
    return slug, inv


@pytest.fixture
def served(db: str, tmp_path: Path, load_module: ModuleType) -> Iterator[Served]:
    slug, inv = new_study(db, tmp_path)
    with load_module.uvicorn_server(db) as base:
        yield Served(base, db, slug, inv)


def client(base: str) -> httpx.Client:
    return httpx.Client(base_url=base, follow_redirects=True, timeout=30)


def signed_in(s: Served, name: str) -> tuple[httpx.Client, str]:
    """A client that opened ``name``'s link and committed; returns it and its CSRF token."""
    c = client(s.base)
    page = c.get(f"/join/{s.inv.tokens[name]}")
    assert page.status_code == 200 and page.url.path == "/onboarding"
    csrf = csrf_of(page.text)
    assert c.post("/onboarding", data={"csrf_token": csrf, "commit": "yes"}).url.path == "/calibration"
    return c, csrf


def pass_calibration(c: httpx.Client, csrf: str) -> None:
    names = sorted(set(CALIBRATION_NAME_RE.findall(c.get("/calibration").text)))
    r = c.post("/calibration", data={"csrf_token": csrf, names[0]: "5", names[1]: "0"})
    assert "The tasks are open" in r.text


def lead(s: Served) -> tuple[httpx.Client, str]:
    c = client(s.base)
    page = c.get(f"/admin/join/{s.inv.admin_token}")
    assert page.status_code == 200 and page.url.path == "/admin"
    return c, csrf_of(page.text)


def status_of(s: Served) -> str:
    engine = make_engine(s.db)
    try:
        with Session(engine) as session:
            return str(session.scalar(select(Study.status).where(Study.slug == s.slug)))
    finally:
        engine.dispose()


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120, env=os.environ.copy())


# (1) and (3): the cookie is a session id, never the invitation token


def test_join_exchanges_the_token_for_a_session_id(served: Served) -> None:
    token = served.inv.tokens["ann1"]
    with httpx.Client(base_url=served.base, timeout=30) as c:
        r = c.get(f"/join/{token}")
        assert r.status_code == 303 and r.headers["location"] == "/start"
        cookie = r.headers["set-cookie"]
        assert token not in cookie and "httponly" in cookie.lower() and "samesite=lax" in cookie.lower()
        sid = c.cookies["ebmeval_annotator"]
        assert sid != token and len(sid) >= 43
        assert c.get("/onboarding").status_code == 200
    # the invitation token itself is no cookie credential
    with httpx.Client(base_url=served.base, timeout=30, cookies={"ebmeval_annotator": token}) as c:
        assert c.get("/onboarding").status_code == 401
    with httpx.Client(base_url=served.base, timeout=30, cookies={"ebmeval_admin": served.inv.admin_token}) as c:
        assert c.get("/admin").status_code == 401


# (2): CSRF whatever the Authorization header


def test_admin_status_needs_csrf_whatever_the_authorization_header(served: Served) -> None:
    c, csrf = lead(served)
    for header in ("Basic YWRtaW46YWRtaW4=", "Digest x", "Negotiate x", "Bearer"):
        r = c.post("/admin/status", data={"status": "closed"}, headers={"Authorization": header})
        assert r.status_code in (401, 403), header
    bearer = {"Authorization": f"Bearer {served.inv.admin_token}"}
    with client(served.base) as script:
        assert script.post("/admin/status", data={"status": "closed"}, headers=bearer).status_code == 403
        assert status_of(served) == "open"
        # a script with the bearer token reads its CSRF token from the dashboard and then may act
        script_csrf = csrf_of(script.get("/admin", headers=bearer).text)
        r = script.post("/admin/status", data={"status": "closed", "csrf_token": script_csrf}, headers=bearer)
        assert r.status_code == 200 and status_of(served) == "closed"
    assert c.post("/admin/status", data={"status": "open", "csrf_token": csrf}).status_code == 200
    assert status_of(served) == "open"


def test_every_annotator_change_needs_csrf_whatever_the_headers(served: Served) -> None:
    c, csrf = signed_in(served, "ann1")
    pass_calibration(c, csrf)
    cid = CANDIDATE_RE.findall(c.get("/tasks/1").text)[0]
    basic = {"Authorization": "Basic YTpi"}
    bearer = {"Authorization": f"Bearer {served.inv.admin_token}"}
    for headers in (basic, bearer):
        assert c.post("/onboarding", data={"commit": "yes"}, headers=headers).status_code == 403
        assert c.post("/calibration", data={}, headers=headers).status_code == 403
        assert c.post("/tasks/1", data={f"{cid}:score": "2"}, headers=headers).status_code == 403
        body = {"target": cid, "field": "score", "value": "2"}
        assert c.post("/api/tasks/1/answer", json=body, headers=headers).status_code == 403
        assert c.post("/join/confirm", data={"token": served.inv.tokens["ann2"]}, headers=headers).status_code == 403


# (3): login CSRF, revocation, rotation


def test_a_foreign_join_link_asks_before_replacing_the_signed_in_annotator(served: Served) -> None:
    victim, csrf = signed_in(served, "ann1")
    page = victim.get(f"/join/{served.inv.tokens['ann2']}")
    assert page.status_code == 200 and "Switch to another account" in page.text
    assert "signed in as <strong>ann1</strong>" in page.text
    assert "Welcome, ann1" in victim.get("/onboarding").text  # still ann1
    # a forged confirmation (no CSRF token, or the wrong one) is refused
    forged = {"token": served.inv.tokens["ann2"]}
    assert victim.post("/join/confirm", data=forged).status_code == 403
    assert victim.post("/join/confirm", data={**forged, "csrf_token": "0" * 64}).status_code == 403
    assert "Welcome, ann1" in victim.get("/onboarding").text
    # the person who opened their own link on a shared computer confirms knowingly
    r = victim.post("/join/confirm", data={**forged, "csrf_token": csrf_of(page.text)})
    assert r.url.path == "/onboarding" and "Welcome, ann2" in r.text
    # reopening one's own (now used) link in the browser it signed in keeps the session
    assert victim.get(f"/join/{served.inv.tokens['ann2']}").url.path == "/onboarding"


def test_revoke_signs_out_and_rotation_issues_a_working_link(served: Served) -> None:
    c, _ = signed_in(served, "ann1")
    admin, _ = lead(served)
    r = cli("annotate", "revoke", "--db", served.db, "--study", served.slug, "--annotator", "ann1")
    assert r.returncode == 0, r.stderr
    assert client(served.base).get(f"/join/{served.inv.tokens['ann1']}").status_code == 403
    assert c.get("/onboarding").status_code == 401
    assert admin.get("/admin").status_code == 200  # only ann1's sessions ended
    r = cli("annotate", "revoke", "--db", served.db, "--study", served.slug, "--annotator", "ann1", "--new-link")
    assert r.returncode == 0, r.stderr
    link = r.stdout.strip().split("\t")[1]
    new = link.rsplit("/", 1)[1]
    assert client(served.base).get(f"/join/{new}").url.path == "/calibration"  # ann1, who has committed
    r = cli(
        "annotate",
        "revoke",
        "--db",
        served.db,
        "--study",
        served.slug,
        "--admin",
        "--new-link",
        "--base-url",
        "https://x",
    )
    assert r.returncode == 0 and r.stdout.startswith("admin\thttps://x/admin/join/")
    assert admin.get("/admin").status_code == 401
    assert client(served.base).get(f"/admin/join/{served.inv.admin_token}").status_code == 403
    assert client(served.base).get("/admin/join/" + r.stdout.strip().rsplit("/", 1)[1]).url.path == "/admin"
    bad = cli("annotate", "revoke", "--db", served.db, "--study", served.slug, "--annotator", "nobody")
    assert bad.returncode == 2 and "no annotator 'nobody'" in bad.stderr + bad.stdout


# (4): bounded inputs, closed studies read-only


def test_oversized_form_fields_get_422_not_500(served: Served) -> None:
    c, csrf = signed_in(served, "ann1")
    pass_calibration(c, csrf)
    cid = CANDIDATE_RE.findall(c.get("/tasks/1").text)[0]
    for data in (
        {f"{cid}:score": "3" * 33},  # longer than an answer may be
        {f"{'x' * 40}:score": "3"},  # target longer than the model's 32
        {f"{cid}:{'f' * 65}": "3"},  # field longer than the model's 64
        {f"{cid}:score": "3" * 5000},  # longer than any form field
        {"k" * 5000: "1"},
    ):
        assert c.post("/tasks/1", data={"csrf_token": csrf, **data}).status_code == 422
    assert c.post("/calibration", data={"csrf_token": csrf, "1:c0:score": "5" * 5000}).status_code == 422
    assert c.post("/onboarding", data={"csrf_token": csrf, "commit": "y" * 5000}).status_code == 422
    r = c.post(
        "/api/tasks/1/answer",
        json={"target": cid, "field": "score", "value": "9" * 5000},
        headers={"X-CSRF-Token": csrf},
    )
    assert r.status_code == 422
    r = c.post(
        "/api/tasks/1/answer",
        content=b"{" * 300_000,
        headers={"X-CSRF-Token": csrf, "Content-Type": "application/json"},
    )
    assert r.status_code == 413


def test_a_closed_study_refuses_calibration_and_commitment_changes(served: Served) -> None:
    c, csrf = signed_in(served, "ann1")
    names = sorted(set(CALIBRATION_NAME_RE.findall(c.get("/calibration").text)))
    pass_calibration(c, csrf)
    admin, admin_csrf = lead(served)
    assert admin.post("/admin/status", data={"status": "closed", "csrf_token": admin_csrf}).status_code == 200
    r = c.post("/calibration", data={"csrf_token": csrf, names[0]: "0", names[1]: "5"})
    assert r.status_code == 409
    assert "calibration answers can no longer change" in c.get("/calibration").text
    assert c.post("/onboarding", data={"csrf_token": csrf, "commit": "yes"}).status_code == 409
    cid = CANDIDATE_RE.findall(c.get("/tasks/1").text)[0]
    body = {"target": cid, "field": "score", "value": "2"}
    assert c.post("/api/tasks/1/answer", json=body, headers={"X-CSRF-Token": csrf}).status_code == 409
    assert c.post("/tasks/1", data={"csrf_token": csrf, f"{cid}:score": "2"}).status_code == 409
    engine = make_engine(served.db)
    try:
        with Session(engine) as session:
            values = {r.target: r.value for r in session.scalars(select(CalibrationAnswer))}
    finally:
        engine.dispose()
    assert values["c0"] == "5" and values["c1"] == "0"  # the answers given before closing


# (5): headers, Secure cookies, the slowdown


def test_security_headers_on_every_page_and_no_store_on_admin_and_exports(served: Served) -> None:
    c, _ = signed_in(served, "ann1")
    admin, _ = lead(served)
    responses = [c.get("/onboarding"), c.get("/calibration"), client(served.base).get("/")]
    responses += [admin.get(p) for p in ("/admin", "/admin/export.csv", "/admin/export.json")]
    for r in responses:
        assert r.status_code == 200
        csp = r.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp and "unsafe-inline" not in csp
        assert r.headers["x-frame-options"] == "DENY"
        assert r.headers["x-content-type-options"] == "nosniff"
        assert r.headers["cache-control"] == "no-store"
        assert "strict-transport-security" not in r.headers  # plain http: no HSTS
    for r in responses:
        assert "<script>" not in r.text and " style=" not in r.text  # no inline script or style
    assert c.get("/static/annotate.js").headers["x-content-type-options"] == "nosniff"


def test_https_from_a_trusted_proxy_gives_secure_cookies_and_hsts(served: Served) -> None:
    proxy = {"X-Forwarded-Proto": "https"}  # uvicorn trusts 127.0.0.1 as a proxy by default
    with httpx.Client(base_url=served.base, timeout=30, headers=proxy) as c:
        r = c.get(f"/join/{served.inv.tokens['ann1']}")
        assert r.status_code == 303 and "secure" in r.headers["set-cookie"].lower()
        assert r.headers["strict-transport-security"].startswith("max-age=")
    with httpx.Client(base_url=served.base, timeout=30) as c:
        assert "secure" not in c.get(f"/admin/join/{served.inv.admin_token}").headers["set-cookie"].lower()


@contextmanager
def served_by_cli(db: str, *options: str, pid: list[int] | None = None) -> Iterator[str]:
    """``ebmeval annotate serve`` on 127.0.0.1 in a subprocess; yields the base URL (its pid into ``pid``)."""
    port = free_port()
    proc = subprocess.Popen([*CLI, "annotate", "serve", "--db", db, "--port", str(port), *options])
    base = f"http://127.0.0.1:{port}"
    if pid is not None:
        pid.append(proc.pid)
    try:
        for _ in range(300):
            try:
                if httpx.get(base + "/", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_behind_tls_sets_secure_cookies_and_hsts_always(db: str, tmp_path: Path) -> None:
    slug, inv = new_study(db, tmp_path)
    with served_by_cli(db, "--behind-tls") as base, httpx.Client(base_url=base, timeout=30) as c:
        r = c.get(f"/join/{inv.tokens['ann1']}")
        assert "secure" in r.headers["set-cookie"].lower() and "strict-transport-security" in r.headers


def test_failed_token_lookups_slow_the_client_down(served: Served) -> None:
    statuses: list[int] = []

    def guess() -> None:
        with client(served.base) as guesser:
            while time.monotonic() - started < 2.5:
                statuses.append(guesser.get(f"/join/{uuid.uuid4().hex}{uuid.uuid4().hex}").status_code)

    started = time.monotonic()
    threads = [threading.Thread(target=guess) for _ in range(4)]  # concurrent guesses share one opening
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lookups = statuses.count(403)
    # 5 free failures, the 6th at once, then waits of 1 s and 2 s: 7 lookups in 2.5 s (~400 per second before)
    assert 5 <= lookups <= 7, statuses[:20]
    assert statuses.count(429) > 0 and set(statuses) <= {403, 429}
    guesser = client(served.base)
    r = guesser.get(f"/join/{uuid.uuid4().hex}")
    assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1
    r = guesser.get("/admin", headers={"Authorization": f"Bearer {uuid.uuid4().hex}"})
    assert r.status_code == 429
    # the guesses lock no valid link out of their (shared) address: a valid link or bearer token opens
    assert guesser.get(f"/join/{served.inv.tokens['ann1']}").url.path == "/onboarding"
    assert guesser.get("/admin", headers={"Authorization": f"Bearer {served.inv.admin_token}"}).status_code == 200


# (6): highlights


def test_calibration_highlights_render_correct_markup(db: str, tmp_path: Path, load_module: ModuleType) -> None:
    gold = tmp_path / "gold-marks.jsonl"
    gold.write_text(
        json.dumps(
            {
                "reference": "Benchmark trial.",
                "candidates": [
                    {"text": "Benchmark: the mark fell <b>sharply</b> & RR<1.", "gold": {"score": 5}},
                    {"text": "No change.", "gold": {"score": 0}},
                ],
                "justification": "Overlapping passages.",
                "highlights": ["the mark fell", "mark", "RR<1", "<b>"],
            }
        )
        + "\n"
    )
    slug, inv = new_study(db, tmp_path, calibration=gold)
    with load_module.uvicorn_server(db) as base:
        s = Served(base, db, slug, inv)
        c, csrf = signed_in(s, "ann1")
        pass_calibration(c, csrf)
        page = c.get("/calibration/result").text
    assert "<<mark>" not in page and "</<mark>" not in page
    expected = (
        "Bench<mark>mark</mark>: <mark>the mark fell</mark> <mark>&lt;b&gt;</mark>sharply&lt;/b&gt; &amp; "
        "<mark>RR&lt;1</mark>."
    )
    assert expected in page


# (1): no token in any log line


@pytest.mark.parametrize("how", ["uvicorn-trace", "ebmeval-serve"])
def test_no_token_in_any_log_line(how: str, db: str, tmp_path: Path) -> None:
    slug, inv = new_study(db, tmp_path)
    port = free_port()
    if how == "uvicorn-trace":
        cmd = [sys.executable, "-m", "uvicorn", "ebmeval.annotate._app:app_from_env", "--factory"]
        cmd += ["--host", "127.0.0.1", "--port", str(port), "--log-level", "trace"]
    else:
        cmd = [*CLI, "annotate", "serve", "--db", db, "--port", str(port)]
    log = tmp_path / "server.log"
    env = {**os.environ, "EBMEVAL_ANNOTATE_DB": db, "PYTHONUNBUFFERED": "1"}
    base = f"http://127.0.0.1:{port}"
    secrets_seen = {inv.admin_token, *inv.tokens.values()}
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            for _ in range(300):
                try:
                    if httpx.get(base + "/", timeout=1).status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.1)
            s = Served(base, db, slug, inv)
            c, csrf = signed_in(s, "ann1")
            secrets_seen |= {c.cookies["ebmeval_annotator"], csrf}
            c.get(f"/join/{inv.tokens['ann2']}")  # the confirmation page
            c.get(f"/join/{inv.tokens['ann1']}/extra?x=1")  # 404 with the token in the path
            c.get(f"/tasks/{inv.tokens['ann1']}")  # 422: a token pasted into another path
            admin, admin_csrf = lead(s)
            secrets_seen |= {admin.cookies["ebmeval_admin"], admin_csrf}
            client(base).get("/admin", headers={"Authorization": f"Bearer {inv.admin_token}"})
            client(base).get(f"/join/{inv.admin_token}")  # a wrong kind of token: 403
            client(base).get(f"/admin/join/{inv.tokens['ann2']}")
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    lines = log.read_text().splitlines()
    leaks = [line for line in lines for secret in secrets_seen if secret in line]
    assert leaks == []
    assert any("/join/[redacted]" in line for line in lines), lines[-20:]  # the requests were logged
    assert any("/admin/join/[redacted]" in line for line in lines)


# Issue 27: bodies counted as they arrive, calibration replay, forwarded headers, single-use links


def test_a_chunked_body_over_the_limit_is_refused_and_nothing_is_saved(served: Served) -> None:
    c, csrf = signed_in(served, "ann1")
    pass_calibration(c, csrf)
    cid = CANDIDATE_RE.findall(c.get("/tasks/1").text)[0]
    answer = json.dumps({"target": cid, "field": "score", "value": "3"}).encode()
    padded = answer[:-1] + b', "pad": "' + b"x" * (5 * 2**20) + b'"}'

    def chunks() -> Iterator[bytes]:  # no Content-Length: sent chunked
        for start in range(0, len(padded), 65536):
            yield padded[start : start + 65536]

    headers = {"X-CSRF-Token": csrf, "Content-Type": "application/json"}
    r = c.post("/api/tasks/1/answer", content=chunks(), headers=headers)
    assert r.status_code == 413 and r.json() == {"detail": "Request body too large."}
    assert r.headers["x-frame-options"] == "DENY"  # the security headers too
    form = c.post(
        "/tasks/1", content=chunks(), headers={**headers, "Content-Type": "application/x-www-form-urlencoded"}
    )
    assert form.status_code == 413
    assert len(export(served.db, served.slug).splitlines()) == 1  # no answer saved: the header alone
    assert c.post("/api/tasks/1/answer", content=answer, headers=headers).status_code == 200  # a small one is
    assert len(export(served.db, served.slug).splitlines()) == 2


def _peak_rss_kb(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmHWM:\s+(\d+) kB", status).group(1))  # type: ignore[union-attr]


def _chunked_post(base: str, path: str, total: int, headers: dict[str, str]) -> tuple[int, int]:
    """POST ``total`` bytes chunked (1 MiB chunks), on after the answer while the server reads; (status, bytes sent)."""
    host, port = base.removeprefix("http://").split(":")
    head = f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "Transfer-Encoding: chunked\r\n\r\n"
    chunk = b"%x\r\n" % 2**20 + b" " * 2**20 + b"\r\n"
    sent, answer = 0, b""
    with socket.create_connection((host, int(port)), timeout=10) as sock, selectors.DefaultSelector() as readable:
        readable.register(sock, selectors.EVENT_READ)
        sock.sendall(head.encode())
        try:
            while sent < total:
                if not answer and readable.select(0):
                    answer = sock.recv(4096)
                sock.sendall(chunk)
                sent += 2**20
            sock.sendall(b"0\r\n\r\n")
            answer = answer or sock.recv(4096)
        except (BrokenPipeError, ConnectionResetError, TimeoutError):
            pass  # the server stopped reading after answering
    return int(answer.split(b" ", 2)[1]), sent


@pytest.mark.parametrize("signed", [False, True], ids=["anonymous", "annotator"])
def test_a_300_mib_chunked_post_is_answered_413_without_the_server_growing(
    db: str, tmp_path: Path, signed: bool
) -> None:
    if not Path("/proc/self/status").exists():
        pytest.skip("needs /proc to read the server's peak memory")
    slug, inv = new_study(db, tmp_path)
    pid: list[int] = []
    with served_by_cli(db, pid=pid) as base:
        headers = {}
        if signed:  # an annotator's session cookie and CSRF token
            c, csrf = signed_in(Served(base, db, slug, inv), "ann1")
            headers = {"Cookie": f"ebmeval_annotator={c.cookies['ebmeval_annotator']}", "X-CSRF-Token": csrf}
        before = _peak_rss_kb(pid[0])
        status, sent = _chunked_post(base, "/api/tasks/1/answer", 300 * 2**20, headers)
        growth_mb = (_peak_rss_kb(pid[0]) - before) / 1024
    print(
        f"300 MiB chunked POST ({'annotator' if signed else 'anonymous'}): {status}, {sent / 2**20:.0f} MiB sent, "
        f"server peak RSS {before / 1024:.0f} MB -> +{growth_mb:.1f} MB"
    )
    assert status == 413
    assert growth_mb < 50, (growth_mb, sent)


def test_calibration_feedback_cannot_be_replayed_into_a_pass(served: Served) -> None:
    c, csrf = signed_in(served, "ann1")
    names = sorted(set(CALIBRATION_NAME_RE.findall(c.get("/calibration").text)))
    failed = c.post("/calibration", data={"csrf_token": csrf, names[0]: "0", names[1]: "5"})
    assert "<td>5</td>" in c.get("/calibration/result").text  # its gold is shown once the attempt is final
    replay = c.post("/calibration", data={"csrf_token": csrf, names[0]: "5", names[1]: "0"})
    assert "The tasks are open" not in replay.text and replay.status_code == 409
    assert c.get("/tasks/next").url.path == "/calibration"
    assert "reference answers of every calibration example" in failed.text  # the only example: final
    assert "Try again" not in c.get("/calibration/result").text


def test_a_failed_calibration_attempt_is_replaced_by_unseen_examples(db: str, tmp_path: Path) -> None:
    slug = f"pool-{uuid.uuid4().hex[:8]}"
    inv = create_study(
        db,
        slug=slug,
        form="rubric",
        annotators=["ann1"],
        k=1,
        files=[write_items(tmp_path / "items.jsonl", n=2)],
        calibration=write_calibration(tmp_path / "gold.jsonl", n=2),
        calibration_size=1,
    )
    served = Served("", db, slug, inv)
    with served_by_cli(db) as served.base:
        c, csrf = signed_in(served, "ann1")
        first = sorted(set(CALIBRATION_NAME_RE.findall(c.get("/calibration").text)))
        c.post("/calibration", data={"csrf_token": csrf, first[0]: "0", first[1]: "5"})
        assert "Try again with new examples" in c.get("/calibration/result").text
        gold = {first[0]: "5", first[1]: "0"}  # read off the feedback page
        assert c.post("/calibration", data={"csrf_token": csrf, **gold}).status_code == 422  # not this attempt's
        second = sorted(set(CALIBRATION_NAME_RE.findall(c.get("/calibration").text)))
        assert set(second).isdisjoint(first) and len(second) == 2
        r = c.post("/calibration", data={"csrf_token": csrf, **gold, second[0]: "0", second[1]: "5"})
        assert "The tasks are open" not in r.text and c.get("/tasks/next").url.path == "/calibration"
        assert "reference answers of every calibration example" in r.text


def test_forwarded_for_is_ignored_unless_the_proxy_is_trusted(db: str, tmp_path: Path) -> None:
    slug, inv = new_study(db, tmp_path)

    def statuses(base: str) -> list[int]:
        with client(base) as c:
            return [
                c.get(f"/join/{uuid.uuid4().hex}", headers={"X-Forwarded-For": f"10.0.0.{i}"}).status_code
                for i in range(10)
            ]

    with served_by_cli(db) as base:
        spoofed = statuses(base)
    assert spoofed.count(403) == 6 and spoofed.count(429) == 4  # one address: 127.0.0.1
    with served_by_cli(db, "--trusted-proxies", "127.0.0.1") as base:
        forwarded = statuses(base)
    assert forwarded == [403] * 10  # each forwarded address counted on its own


def test_a_join_link_works_once_and_revoke_new_link_reissues_it(served: Served) -> None:
    token = served.inv.tokens["ann1"]
    first = client(served.base)
    assert first.get(f"/join/{token}").url.path == "/onboarding"
    second = client(served.base).get(f"/join/{token}")  # a fresh browser, the same link
    assert second.status_code == 403 and "used already" in second.text
    assert "ebmeval_annotator" not in second.headers.get("set-cookie", "")
    assert first.get(f"/join/{token}").url.path == "/onboarding"  # the browser it signed in keeps its session
    r = cli("annotate", "revoke", "--db", served.db, "--study", served.slug, "--annotator", "ann1", "--new-link")
    assert r.returncode == 0, r.stderr
    new = r.stdout.strip().rsplit("/", 1)[1]
    assert client(served.base).get(f"/join/{new}").url.path == "/onboarding"
    assert client(served.base).get(f"/join/{new}").status_code == 403
    assert first.get("/onboarding").status_code == 401  # the old session was signed out


def test_racing_submissions_of_one_calibration_attempt_score_once(served: Served) -> None:
    c, csrf = signed_in(served, "ann1")
    names = sorted(set(CALIBRATION_NAME_RE.findall(c.get("/calibration").text)))
    cookies = dict(c.cookies)
    guesses = [{names[0]: str(a), names[1]: str(b)} for a in range(0, 6, 2) for b in range(0, 6, 2)]
    statuses: list[int] = []

    def submit(answers: dict[str, str]) -> None:
        with httpx.Client(base_url=served.base, cookies=cookies, timeout=30) as racer:
            statuses.append(racer.post("/calibration", data={"csrf_token": csrf, **answers}).status_code)

    threads = [threading.Thread(target=submit, args=(g,)) for g in guesses]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(statuses) == [303] + [409] * (len(guesses) - 1), statuses
    engine = make_engine(served.db)
    try:
        with Session(engine) as session:
            rows = session.scalars(
                select(CalibrationAnswer)
                .join(Annotator, CalibrationAnswer.annotator_id == Annotator.id)
                .join(Study, Annotator.study_id == Study.id)
                .where(Study.slug == served.slug)
            ).all()
            assert len(rows) == 2  # one attempt's answers
    finally:
        engine.dispose()
