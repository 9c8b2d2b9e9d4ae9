"""Signing in: invitation and admin links exchanged, once, for a session.

Opening an invitation link (``/join/<token>``) or the admin link exchanges the token for a
session id that is not the token; the session cookie carries only that id.
"""

# No ``from __future__ import annotations``: FastAPI reads the route signatures at runtime.
from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy import select
from sqlalchemy.orm import Session

from ._access import SESSION_DAYS, find_session, open_session
from ._models import Annotator, Study
from ._security import hash_token, new_token
from ._web import ADMIN_COOKIE, ANNOTATOR_COOKIE, DB, csrf_of, form_csrf, refuse, render, tls

router = APIRouter()


def start_session(request: Request, session: Session, study: Study, person: Annotator | None, to: str) -> Response:
    """A redirect to ``to`` that sets the cookie of a new session of the lead (``person`` None) or annotator."""
    response = RedirectResponse(to, status_code=303)
    response.set_cookie(
        ADMIN_COOKIE if person is None else ANNOTATOR_COOKIE,
        open_session(session, study, person),
        httponly=True,
        samesite="lax",
        secure=tls(request),
        max_age=SESSION_DAYS * 86400,
    )
    return response


def exchange(request: Request, session: Session, token: str, *, lead: bool, confirmed: bool) -> Response:
    """Trade an invitation (or admin) token for a new session; ask first when it replaces another one.

    An invitation link works once: the exchange replaces its stored hash, so the link is refused
    from then on (``ebmeval annotate revoke --new-link`` issues another). The admin link, also the
    lead's bearer credential, stays valid until revoked.
    """
    what = "admin link" if lead else "invitation link"
    to = "/admin" if lead else "/start"
    current = find_session(session, request.cookies.get(ADMIN_COOKIE if lead else ANNOTATOR_COOKIE), lead=lead)
    person: Annotator | None = None
    if lead:
        study = session.scalar(select(Study).where(Study.admin_hash == hash_token(token)))
    else:
        person = session.scalar(select(Annotator).where(Annotator.token_hash == hash_token(token)))
        study = person.study if person is not None else None
        if person is None and current is not None and current.annotator is not None:
            if current.annotator.used_hash == hash_token(token):
                return RedirectResponse(to, status_code=303)  # reopened in the browser it signed in
    if study is None:
        raise refuse(request, what)
    if current is not None and (current.study_id, current.annotator_id) == (study.id, person and person.id):
        return RedirectResponse(to, status_code=303)  # already signed in as this person
    if current is not None and not confirmed:
        request.state.csrf_key = current.sid_hash
        return render(
            request,
            "switch.html",
            current=_who(current.study, current.annotator),
            new=_who(study, person),
            token=token,
            action="/admin/join/confirm" if lead else "/join/confirm",
            stay=to,
            csrf=csrf_of(request),
            title="Switch account",
        )
    if current is not None:
        session.delete(current)
    if person is not None:  # used up: the stored hash becomes one of a token nobody holds
        person.used_hash, person.token_hash = person.token_hash, hash_token(new_token())
    session.commit()
    return start_session(request, session, study, person, to)


async def confirm_exchange(request: Request, session: Session, *, lead: bool) -> Response:
    """The exchange confirmed on the switch page, by the session it replaces."""
    row = find_session(session, request.cookies.get(ADMIN_COOKIE if lead else ANNOTATOR_COOKIE), lead=lead)
    if row is None:
        raise HTTPException(403, "Open the link again.")
    request.state.csrf_key = row.sid_hash
    values = await form_csrf(request)
    return exchange(request, session, values.get("token", ""), lead=lead, confirmed=True)


def _who(study: Study, person: Annotator | None) -> str:
    return person.name if person is not None else f"the lead of {study.title}"


@router.get("/", response_class=HTMLResponse)
def home(request: Request) -> HTMLResponse:
    return render(request, "error.html", 200, message="Open the personal invitation link you received.", title="")


def _link_routes(*, lead: bool) -> None:
    """The routes of the admin link (``lead``) or of invitation links: opening one, and confirming a switch."""
    path, name = ("/admin/join", "admin_join") if lead else ("/join", "join")

    @router.get(path + "/{token}", name=name)
    def join(request: Request, token: str, session: DB) -> Response:
        return exchange(request, session, token, lead=lead, confirmed=False)

    @router.post(path + "/confirm", name=name + "_confirmed")
    async def join_confirmed(request: Request, session: DB) -> Response:
        return await confirm_exchange(request, session, lead=lead)


_link_routes(lead=False)
_link_routes(lead=True)
