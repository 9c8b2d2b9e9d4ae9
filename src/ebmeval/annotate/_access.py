"""Sessions opened by invitation links, and revoking or reissuing the links."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from .._util.errors import UsageError
from ._models import AccessSession, Annotator, Study, aware, find_study, make_engine, utcnow
from ._security import hash_token, new_token

SESSION_DAYS = 90
"""Lifetime of a session opened by an invitation or admin link."""


def open_session(session: Session, study: Study, annotator: Annotator | None) -> str:
    """Store a new session for ``annotator`` (None: the study's lead) and return its id (shown once).

    Expired sessions of every study are deleted on the way.
    """
    sid = new_token()
    now = utcnow()
    session.execute(delete(AccessSession).where(AccessSession.expires_at <= now))
    session.add(
        AccessSession(
            sid_hash=hash_token(sid),
            study_id=study.id,
            annotator_id=annotator.id if annotator is not None else None,
            created_at=now,
            expires_at=now + timedelta(days=SESSION_DAYS),
        )
    )
    session.commit()
    return sid


def find_session(session: Session, sid: str | None, *, lead: bool) -> AccessSession | None:
    """The unexpired session with id ``sid`` of an annotator (``lead`` False) or of a lead, else None."""
    if not sid:
        return None
    row = session.scalar(select(AccessSession).where(AccessSession.sid_hash == hash_token(sid)))
    if row is None or (row.annotator_id is None) != lead or aware(row.expires_at) <= utcnow():
        return None
    return row


def revoke(db: str, study: str, *, annotator: str | None = None, new_link: bool = False) -> str | None:
    """Invalidate an invitation link (``annotator``) or the admin link (None) and end its sessions.

    The stored hash is replaced, so the old link is refused from now on, and every browser
    signed in through it is signed out. With ``new_link`` the replacement token is returned
    (rotation: hand out ``/join/<token>`` or ``/admin/join/<token>``); otherwise it is discarded
    and nobody can use the link again.

    Returns:
        The new token with ``new_link``, else None.
    """
    engine = make_engine(db)
    try:
        with Session(engine) as session:
            row = find_study(session, db, study)
            token = new_token()
            sessions = delete(AccessSession).where(AccessSession.study_id == row.id)
            if annotator is None:
                row.admin_hash = hash_token(token)
                session.execute(sessions.where(AccessSession.annotator_id.is_(None)))
            else:
                person = session.scalar(
                    select(Annotator).where(Annotator.study_id == row.id, Annotator.name == annotator)
                )
                if person is None:
                    names = ", ".join(a.name for a in row.annotators) or "none"
                    raise UsageError(f"no annotator '{annotator}' in study '{study}' (annotators: {names})")
                person.token_hash = hash_token(token)
                session.execute(sessions.where(AccessSession.annotator_id == person.id))
            session.commit()
    finally:
        engine.dispose()
    return token if new_link else None
