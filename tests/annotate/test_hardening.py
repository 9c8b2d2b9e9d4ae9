"""Unit tests of the hardening pieces: highlight markup, the failure throttle, log redaction, revocation."""

from __future__ import annotations

import logging
import sys
from datetime import timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select, update
from sqlalchemy.orm import Session
from uvicorn.logging import AccessFormatter

from ebmeval._util.errors import UsageError
from ebmeval.annotate import make_engine, revoke
from ebmeval.annotate._app import create_app
from ebmeval.annotate._calibration import _highlight
from ebmeval.annotate._logs import RedactTokens, redact
from ebmeval.annotate._models import AccessSession, utcnow
from ebmeval.annotate._security import new_token
from ebmeval.annotate._throttle import FailureThrottle

from .conftest import StudySetup


def test_highlight_escapes_first_then_marks_overlapping_passages():
    text = "Benchmark: the mark fell <b>sharply</b> & RR<1."
    out = str(_highlight(text, ["the mark fell", "mark", "RR<1", "<b>", ""]))
    assert out == (
        "Bench<mark>mark</mark>: <mark>the mark fell</mark> <mark>&lt;b&gt;</mark>sharply&lt;/b&gt; &amp; "
        "<mark>RR&lt;1</mark>."
    )
    assert str(_highlight("a <i> b", [])) == "a &lt;i&gt; b"
    assert str(_highlight("abcd", ["abc", "bcd"])) == "<mark>abcd</mark>"  # overlaps merge


def test_throttle_delays_double_up_to_the_cap_and_are_forgotten():
    now = [0.0]
    t = FailureThrottle(free=2, base=1.0, cap=4.0, window=100.0, clock=lambda: now[0])
    assert [t.failed("a") for _ in range(3)] == [0.0, 0.0, 0.0]  # 2 free failures, and the 3rd counts at once
    delays = []
    for _ in range(4):
        delays.append(t.failed("a"))  # answered 429: nothing counted
        assert t.failed("a") == delays[-1]
        now[0] += delays[-1]
        assert t.failed("a") == 0.0
    assert delays == [1.0, 2.0, 4.0, 4.0]
    assert t.failed("b") == 0.0  # per client
    now[0] += 101
    assert [t.failed("a") for _ in range(3)] == [0.0, 0.0, 0.0]  # a fresh start


def test_throttle_forgets_the_stalest_client_beyond_its_bound():
    now = [0.0]
    t = FailureThrottle(free=0, max_clients=2, clock=lambda: now[0])
    for client in ("a", "b", "c"):
        t.failed(client)
        now[0] += 0.1
    assert t.failed("a") == 0.0 and t.failed("c") > 0


def test_redaction_keeps_uvicorn_access_lines_readable():
    token = new_token()
    record = logging.LogRecord(
        "uvicorn.access",
        logging.INFO,
        __file__,
        1,
        '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:5000", "GET", f"/join/{token}?a=1", "1.1", 303),
        None,
    )
    assert RedactTokens().filter(record)
    line = AccessFormatter("%(client_addr)s %(request_line)s %(status_code)s", use_colors=False).format(record)
    assert line == "127.0.0.1:5000 GET /join/[redacted]?a=1 HTTP/1.1 303 See Other"
    assert redact(f"cookie: ebmeval_annotator={token}; x") == "cookie: ebmeval_annotator=[redacted]; x"
    assert redact("/join/short") == "/join/[redacted]"
    assert redact("GET /tasks/3 HTTP/1.1") == "GET /tasks/3 HTTP/1.1"


def test_redaction_covers_tracebacks():
    token = new_token()
    try:
        raise ValueError(f"bad {token}")
    except ValueError:
        record = logging.LogRecord("uvicorn.error", logging.ERROR, __file__, 1, "failed", (), sys.exc_info())
    RedactTokens().filter(record)
    assert token not in logging.Formatter().format(record)


def test_revoke_names_unknown_studies_and_annotators(rubric_study: StudySetup):
    with pytest.raises(UsageError, match="no study 'nope'"):
        revoke(rubric_study.db, "nope", annotator="ann1")
    with pytest.raises(UsageError, match="annotators: ann1, ann2, ann3"):
        revoke(rubric_study.db, "rubric-study", annotator="ann9")
    assert revoke(rubric_study.db, "rubric-study", annotator="ann1") is None
    assert len(revoke(rubric_study.db, "rubric-study", new_link=True) or "") == 43


def test_expired_sessions_are_refused_and_cleared(rubric_study: StudySetup):
    client = TestClient(create_app(rubric_study.db))
    assert client.get(f"/join/{rubric_study.invitations.tokens['ann1']}").url.path == "/onboarding"
    engine = make_engine(rubric_study.db)
    with Session(engine) as s:
        s.execute(update(AccessSession).values(expires_at=utcnow() - timedelta(seconds=1)))
        s.commit()
    assert client.get("/onboarding").status_code == 401
    other = TestClient(create_app(rubric_study.db))
    assert other.get(f"/join/{rubric_study.invitations.tokens['ann2']}").status_code == 200
    with Session(engine) as s:
        assert s.scalar(select(func.count()).select_from(AccessSession)) == 1  # the expired one is gone
    engine.dispose()


def test_a_database_made_before_the_new_columns_gets_them(rubric_study: StudySetup):
    import sqlite3

    with sqlite3.connect(rubric_study.db) as db:
        db.execute("ALTER TABLE studies DROP COLUMN calibration_size")
        db.execute("ALTER TABLE annotators DROP COLUMN used_hash")
    make_engine(rubric_study.db).dispose()
    with sqlite3.connect(rubric_study.db) as db:
        assert "calibration_size" in {r[1] for r in db.execute("PRAGMA table_info(studies)")}
        assert "used_hash" in {r[1] for r in db.execute("PRAGMA table_info(annotators)")}
    client = TestClient(create_app(rubric_study.db))
    assert client.get(f"/join/{rubric_study.invitations.tokens['ann1']}").url.path == "/onboarding"
