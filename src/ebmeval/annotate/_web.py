"""What the routers of the annotation app share: its state, the database session, who is asking, CSRF, forms, pages.

The app built by :func:`~ebmeval.annotate._app.create_app` keeps one :class:`Web` in
``app.state.web``; the dependencies below read it from the request.
"""

# No ``from __future__ import annotations``: FastAPI reads the dependency signatures at runtime.
import logging
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.templating import Jinja2Templates
from pydantic import ValidationError
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from .._util.pages import template_folders
from ._access import find_session
from ._models import Annotator, Assignment, Study
from ._security import csrf_ok, csrf_token, hash_token
from ._throttle import FailureThrottle

HERE = Path(__file__).parent
ANNOTATOR_COOKIE = "ebmeval_annotator"
ADMIN_COOKIE = "ebmeval_admin"
MAX_FORM_VALUE = 200
"""Longest form key or value accepted (answers are at most 32 characters); longer ones get 422."""
MAX_BODY = 256 * 1024
"""Largest request body accepted, bytes, counted as they arrive (413 beyond, chunked or not)."""
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
"""No inline script or style anywhere: the pages load /static/annotate.js and /static/annotate.css only."""
NO_CALIBRATION_LEFT = (
    "You have seen the reference answers of every calibration example without reaching the threshold; "
    "the study lead decides what happens next."
)
_log = logging.getLogger("ebmeval.annotate")


@dataclass
class Web:
    """The state of one app: its database sessions, CSRF secret, page templates and transport settings."""

    sessions: sessionmaker[Session]
    secret: str
    behind_tls: bool
    throttle: FailureThrottle
    templates: Jinja2Templates


def page_templates() -> Jinja2Templates:
    """The app's Jinja2 page templates."""
    templates = Jinja2Templates(directory=template_folders(HERE / "templates"))
    templates.env.globals["no_calibration_left"] = NO_CALIBRATION_LEFT
    return templates


def web(request: Request) -> Web:
    """The state of the app serving ``request``."""
    state: Web = request.app.state.web
    return state


def db_session(request: Request) -> Iterator[Session]:
    """A database session for one request."""
    with web(request).sessions() as s:
        yield s


DB = Annotated[Session, Depends(db_session)]


def render(request: Request, name: str, status: int = 200, **context: Any) -> HTMLResponse:
    """The page template ``name`` rendered with ``context``."""
    return web(request).templates.TemplateResponse(request, name, context, status_code=status)


def person_page(request: Request, person: Annotator, name: str, title: str, **context: Any) -> HTMLResponse:
    """An annotator's page ``name``: the template gets the annotator, their study and ``context``."""
    return render(request, name, person=person, study=person.study, title=title, **context)


def tls(request: Request) -> bool:
    """Whether the request came over TLS (or the app is configured as served behind it)."""
    return web(request).behind_tls or request.url.scheme == "https"


def refuse(request: Request, what: str) -> HTTPException:
    """The answer to a token that matched nothing: 403, or 429 while the client's failures slow it down."""
    client = request.client.host if request.client is not None else "-"
    wait = web(request).throttle.failed(client)
    if wait > 0:
        return HTTPException(
            429,
            f"Too many invalid links from your address; try again in {math.ceil(wait)} s.",
            headers={"Retry-After": str(math.ceil(wait))},
        )
    _log.warning("invalid %s from %s", what, client)
    if what == "invitation link":
        return HTTPException(
            403, "This invitation link is not valid or was used already; ask the study lead for a new one."
        )
    return HTTPException(403, f"This {what} is not valid.")


def annotator(request: Request, session: DB) -> Annotator:
    """The annotator signed in by the session cookie; 401 otherwise."""
    row = find_session(session, request.cookies.get(ANNOTATOR_COOKIE), lead=False)
    if row is None or row.annotator is None:
        raise HTTPException(401, "Open the personal invitation link you received.")
    request.state.csrf_key = row.sid_hash
    return row.annotator


Person = Annotated[Annotator, Depends(annotator)]


def lead(request: Request, session: DB) -> Study:
    """The study whose lead is asking, by bearer credential or admin session cookie; 401 otherwise."""
    scheme, _, credential = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer":
        # Only the header counts then: a request never mixes the bearer token and the cookie.
        study = session.scalar(select(Study).where(Study.admin_hash == hash_token(credential.strip())))
        if study is None:
            refused = refuse(request, "admin credential")
            raise refused if refused.status_code == 429 else HTTPException(401, "Admin credential required.")
        request.state.csrf_key = study.admin_hash
        return study
    row = find_session(session, request.cookies.get(ADMIN_COOKIE), lead=True)
    if row is None:
        raise HTTPException(401, "Admin credential required.")
    request.state.csrf_key = row.sid_hash
    return row.study


Lead = Annotated[Study, Depends(lead)]


def csrf_of(request: Request) -> str:
    """The CSRF token of the request's credential."""
    return csrf_token(web(request).secret, request.state.csrf_key)


def check_csrf(request: Request, given: str | None) -> None:
    """403 unless ``given`` is the CSRF token of the request's credential."""
    if not csrf_ok(web(request).secret, request.state.csrf_key, given):
        raise HTTPException(403, "Missing or invalid CSRF token; reload the page and try again.")


async def bounded_form(request: Request) -> dict[str, str]:
    """The posted form; 422 for a file, or a key or value longer than :data:`MAX_FORM_VALUE`."""
    form = await request.form(max_files=0, max_fields=1000, max_part_size=MAX_BODY)
    values: dict[str, str] = {}
    for key, value in form.items():
        if not isinstance(value, str):
            raise HTTPException(422, f"Field '{key[:MAX_FORM_VALUE]}' must be text.")
        if len(key) > MAX_FORM_VALUE or len(value) > MAX_FORM_VALUE:
            raise HTTPException(422, f"Form fields are limited to {MAX_FORM_VALUE} characters.")
        values[key] = value
    return values


async def form_csrf(request: Request) -> dict[str, str]:
    """The posted form without its CSRF token, once the token (field or header) is checked."""
    values = await bounded_form(request)
    check_csrf(request, values.pop("csrf_token", None) or request.headers.get("x-csrf-token"))
    return values


def gate(person: Annotator) -> str | None:
    """Where the annotator must go before tasks, or None when tasks are open."""
    if person.committed_at is None:
        return "/onboarding"
    if person.study.calibration and person.calibration_passed_at is None:
        return "/calibration"
    return None


def ensure_open(person: Annotator) -> None:
    """409 once the annotator's study is closed."""
    if person.study.status != "open":
        raise HTTPException(409, "The study is closed; answers can no longer change.")


def task_of(person: Annotator, n: int) -> Assignment:
    """The annotator's ``n``-th task (from 1); 404 otherwise."""
    if not 1 <= n <= len(person.assignments):
        raise HTTPException(404, "No such task.")
    return person.assignments[n - 1]


async def security_headers(request: Request, call_next: Any) -> Response:
    """Every response with the CSP, framing, sniffing, referrer and cache headers (and HSTS over TLS)."""
    response: Response = await call_next(request)
    h = response.headers
    h["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
    h["X-Frame-Options"] = "DENY"
    h["X-Content-Type-Options"] = "nosniff"
    h["Referrer-Policy"] = "no-referrer"
    if not request.url.path.startswith("/static/"):
        h["Cache-Control"] = "no-store"
    if tls(request):
        h["Strict-Transport-Security"] = "max-age=31536000; includeSubDomains"
    return response


async def http_error(request: Request, exc: HTTPException) -> Response:
    """An error as JSON for the API (or a JSON client), else as the error page."""
    if request.url.path.startswith("/api/") or "application/json" in request.headers.get("accept", ""):
        return JSONResponse({"detail": exc.detail}, status_code=exc.status_code, headers=exc.headers)
    response = render(request, "error.html", exc.status_code, message=exc.detail, title="Error")
    response.headers.update(exc.headers or {})
    return response


async def invalid_input(request: Request, exc: ValidationError) -> Response:
    """A model that failed validation, as a 422 that names no field value."""
    return await http_error(request, HTTPException(422, "Invalid input: a field is missing, too long or malformed."))
