"""The web application: invitation links, onboarding, calibration, blinded tasks and the lead's dashboard.

Opening an invitation link (``/join/<token>``) or the admin link exchanges the token, once, for a
session id that is not the token; the session cookie carries only that id (the lead's scripts may
send ``Authorization: Bearer <admin token>`` instead). Every state-changing request carries a CSRF
token bound to the session (or to the bearer credential), whatever its headers. Pages and JSON show
candidates only by opaque per-assignment ids; system names reach only the admin exports.
"""

# No ``from __future__ import annotations``: FastAPI reads the route signatures at runtime, and the
# dependency aliases below are local to create_app.
import csv
import io
import json
import logging
import math
import re
import statistics
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any

from .._util.errors import MissingDependencyError

try:
    from fastapi import Depends, FastAPI, HTTPException, Request
    from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
    from fastapi.staticfiles import StaticFiles
    from fastapi.templating import Jinja2Templates
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise MissingDependencyError("The annotation app", "fastapi", "web") from exc
from markupsafe import Markup, escape
from pydantic import BaseModel, Field, ValidationError
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from ._access import SESSION_DAYS, find_session, open_session
from ._answers import Rating, agreement, is_complete, item_form, save_answer, study_form, study_ratings
from ._forms import Form as AnnotationForm
from ._limits import BodyLimit
from ._logs import install_log_redaction
from ._models import Annotator, Assignment, CalibrationAnswer, CalibrationItem, Study, aware, make_engine, utcnow
from ._security import csrf_ok, csrf_token, hash_token, new_token, signing_secret
from ._throttle import FailureThrottle

_HERE = Path(__file__).parent
_log = logging.getLogger("ebmeval.annotate")
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


class AnswerIn(BaseModel):
    """One answer posted by the task page as it is entered."""

    target: str = Field(max_length=32)
    field: str = Field(max_length=64)
    value: str = Field(max_length=32)


def _highlight(text: str, passages: list[str]) -> Markup:
    """``text`` HTML-escaped, with every occurrence of the passages wrapped in ``<mark>``.

    Occurrences are found in the raw text and overlapping ones merged before anything is
    escaped, so a passage never matches inside markup or an entity.
    """
    spans = sorted((m.start(), m.end()) for p in passages if p for m in re.finditer(re.escape(p), text))
    merged: list[list[int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    out = Markup()
    pos = 0
    for start, end in merged:
        out += escape(text[pos:start]) + Markup("<mark>") + escape(text[start:end]) + Markup("</mark>")
        pos = end
    return out + escape(text[pos:])


def create_app(db: str, *, behind_tls: bool = False, throttle: FailureThrottle | None = None) -> FastAPI:
    """The annotation app over the annotation database ``db`` (SQLite path or ``postgresql://`` URL).

    Args:
        db: The annotation database.
        behind_tls: Served through a TLS proxy: cookies are ``Secure`` and responses carry HSTS even
            when the proxy does not say so. Without it, requests whose scheme is https (uvicorn
            takes it from ``X-Forwarded-Proto`` sent by a trusted proxy, see ``forwarded_allow_ips``)
            get both.
        throttle: The slowdown on failed token lookups (default: :class:`FailureThrottle`'s defaults).
    """
    install_log_redaction()
    throttle = throttle or FailureThrottle()
    engine = make_engine(db)
    sessions = sessionmaker(engine, expire_on_commit=False)
    with sessions() as s:
        secret = signing_secret(s)
    templates = Jinja2Templates(directory=str(_HERE / "templates"))
    templates.env.globals["no_calibration_left"] = NO_CALIBRATION_LEFT
    app = FastAPI(title="ebmeval annotation", docs_url=None, redoc_url=None, openapi_url=None)
    app.mount("/static", StaticFiles(directory=str(_HERE / "static")), name="static")
    app.add_middleware(BodyLimit, limit=MAX_BODY)  # inside the security headers: its 413s get them too

    def db_session() -> Iterator[Session]:
        with sessions() as s:
            yield s

    DB = Annotated[Session, Depends(db_session)]

    def render(request: Request, name: str, status: int = 200, **context: Any) -> HTMLResponse:
        return templates.TemplateResponse(request, name, context, status_code=status)

    def tls(request: Request) -> bool:
        return behind_tls or request.url.scheme == "https"

    def refuse(request: Request, what: str) -> HTTPException:
        """The answer to a token that matched nothing: 403, or 429 while the client's failures slow it down."""
        client = request.client.host if request.client is not None else "-"
        wait = throttle.failed(client)
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
        row = find_session(session, request.cookies.get(ANNOTATOR_COOKIE), lead=False)
        if row is None or row.annotator is None:
            raise HTTPException(401, "Open the personal invitation link you received.")
        request.state.csrf_key = row.sid_hash
        return row.annotator

    Person = Annotated[Annotator, Depends(annotator)]

    def lead(request: Request, session: DB) -> Study:
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
        return csrf_token(secret, request.state.csrf_key)

    def _check_csrf(request: Request, given: str | None) -> None:
        if not csrf_ok(secret, request.state.csrf_key, given):
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
        values = await bounded_form(request)
        _check_csrf(request, values.pop("csrf_token", None) or request.headers.get("x-csrf-token"))
        return values

    def start_session(request: Request, session: DB, study: Study, person: Annotator | None, to: str) -> Response:
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

    def exchange(request: Request, session: DB, token: str, *, lead: bool, confirmed: bool) -> Response:
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
        row = find_session(session, request.cookies.get(ADMIN_COOKIE if lead else ANNOTATOR_COOKIE), lead=lead)
        if row is None:
            raise HTTPException(403, "Open the link again.")
        request.state.csrf_key = row.sid_hash
        values = await form_csrf(request)
        return exchange(request, session, values.get("token", ""), lead=lead, confirmed=True)

    def gate(person: Annotator) -> str | None:
        """Where the annotator must go before tasks, or None when tasks are open."""
        if person.committed_at is None:
            return "/onboarding"
        if person.study.calibration and person.calibration_passed_at is None:
            return "/calibration"
        return None

    def task_of(person: Annotator, n: int) -> Assignment:
        if not 1 <= n <= len(person.assignments):
            raise HTTPException(404, "No such task.")
        return person.assignments[n - 1]

    @app.middleware("http")
    async def _security_headers(request: Request, call_next: Any) -> Response:
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

    @app.exception_handler(HTTPException)
    async def _error(request: Request, exc: HTTPException) -> Response:
        if request.url.path.startswith("/api/") or "application/json" in request.headers.get("accept", ""):
            return JSONResponse({"detail": exc.detail}, status_code=exc.status_code, headers=exc.headers)
        response = render(request, "error.html", exc.status_code, message=exc.detail, title="Error")
        response.headers.update(exc.headers or {})
        return response

    @app.exception_handler(ValidationError)
    async def _invalid(request: Request, exc: ValidationError) -> Response:
        return await _error(request, HTTPException(422, "Invalid input: a field is missing, too long or malformed."))

    @app.get("/", response_class=HTMLResponse)
    def home(request: Request) -> HTMLResponse:
        return render(request, "error.html", 200, message="Open the personal invitation link you received.", title="")

    @app.get("/join/{token}")
    def join(request: Request, token: str, session: DB) -> Response:
        return exchange(request, session, token, lead=False, confirmed=False)

    @app.post("/join/confirm")
    async def join_confirmed(request: Request, session: DB) -> Response:
        return await confirm_exchange(request, session, lead=False)

    @app.get("/start")
    def start(person: Person) -> Response:
        return RedirectResponse(gate(person) or "/tasks/next", status_code=303)

    @app.get("/onboarding", response_class=HTMLResponse)
    def onboarding(request: Request, person: Person) -> HTMLResponse:
        return render(
            request,
            "onboarding.html",
            person=person,
            study=person.study,
            form=study_form(person.study),
            n_tasks=len(person.assignments),
            closed=person.study.status != "open",
            csrf=csrf_of(request),
            title="Welcome",
        )

    @app.post("/onboarding")
    async def commit(request: Request, person: Person, session: DB) -> Response:
        values = await form_csrf(request)
        _open(person)
        if values.get("commit") != "yes":
            raise HTTPException(422, "Tick the commitment box to continue.")
        if person.committed_at is None:
            person.committed_at = utcnow()
            session.commit()
        return RedirectResponse(gate(person) or "/tasks/next", status_code=303)

    @app.get("/calibration", response_class=HTMLResponse)
    def calibration(request: Request, person: Person, session: DB) -> Response:
        if person.committed_at is None:
            return RedirectResponse("/onboarding", status_code=303)
        passed = person.calibration_passed_at is not None
        return render(
            request,
            "calibration.html",
            person=person,
            study=person.study,
            form=study_form(person.study),
            items=[] if passed else _calibration_attempt(session, person),
            passed=passed,
            closed=person.study.status != "open",
            csrf=csrf_of(request),
            title="Calibration",
        )

    @app.post("/calibration")
    async def submit_calibration(request: Request, person: Person, session: DB) -> Response:
        """Score one attempt: the examples whose reference answers this annotator has not seen yet."""
        values = await form_csrf(request)
        _open(person)
        form = study_form(person.study)
        if person.committed_at is None:
            raise HTTPException(409, "Accept the commitment first.")
        if person.calibration_passed_at is not None:
            raise HTTPException(409, "Calibration is passed already; the tasks are open.")
        items = _calibration_attempt(session, person)
        if not items:
            raise HTTPException(409, NO_CALIBRATION_LEFT)
        matched = total = 0
        for item in items:
            for target, f in form.targets([f"c{i}" for i in range(len(item.candidates))]):
                value = values.get(f"{item.id}:{target}:{f.name}")
                if value is None:
                    raise HTTPException(422, "Answer every question of the calibration examples.")
                try:
                    f.validate(value)
                except ValueError as exc:
                    raise HTTPException(422, str(exc)) from None
                session.add(
                    CalibrationAnswer(
                        annotator_id=person.id, calibration_item_id=item.id, target=target, field=f.name, value=value
                    )
                )
                gold = item.gold.get(target, {}).get(f.name)
                if gold is not None:
                    total += 1
                    matched += _matches(f.kind, value, gold)
        person.calibration_score = matched / total if total else 1.0
        if person.calibration_score >= person.study.pass_threshold:
            person.calibration_passed_at = utcnow()
        try:
            session.commit()
        except IntegrityError:  # the same attempt submitted twice at once: the first one counts
            session.rollback()
            raise HTTPException(409, "This attempt was submitted already.") from None
        return RedirectResponse("/calibration/result", status_code=303)

    @app.get("/calibration/result", response_class=HTMLResponse)
    def calibration_result(request: Request, person: Person, session: DB) -> Response:
        if person.calibration_score is None:
            return RedirectResponse("/calibration", status_code=303)
        given = _calibration_answers(session, person)
        answered = {int(key.split(":", 1)[0]) for key in given}
        items = [
            {"item": item, "highlighted": [_highlight(t, item.highlights) for t in item.candidates]}
            for item in person.study.calibration
            if item.id in answered
        ]
        passed = person.calibration_passed_at is not None
        return render(
            request,
            "calibration_result.html",
            person=person,
            study=person.study,
            form=study_form(person.study),
            items=items,
            given=given,
            passed=passed,
            more=not passed and bool(_calibration_attempt(session, person)),
            matches=_matches,
            title="Calibration feedback",
        )

    @app.get("/tasks/next")
    def next_task(person: Person) -> Response:
        if (where := gate(person)) is not None:
            return RedirectResponse(where, status_code=303)
        for a in person.assignments:
            if a.completed_at is None:
                return RedirectResponse(f"/tasks/{a.position}", status_code=303)
        return RedirectResponse("/done", status_code=303)

    @app.get("/tasks/{n}", response_class=HTMLResponse)
    def task_page(request: Request, n: int, person: Person, session: DB) -> Response:
        if (where := gate(person)) is not None:
            return RedirectResponse(where, status_code=303)
        assignment = task_of(person, n)
        if assignment.opened_at is None and person.study.status == "open":
            assignment.opened_at = utcnow()
            session.commit()
        return _render_task(request, person, assignment)

    def _render_task(request: Request, person: Annotator, assignment: Assignment, message: str = "") -> HTMLResponse:
        form = item_form(person.study, assignment.item)
        pairwise = form.per_task == 2
        candidates = [
            {"id": s.public_id, "label": ("AB"[s.slot] if pairwise else str(s.slot + 1)), "text": s.candidate.text}
            for s in assignment.shown
        ]
        end = assignment.completed_at or utcnow()
        elapsed = int((aware(end) - aware(assignment.opened_at or end)).total_seconds())
        return render(
            request,
            "task.html",
            status=422 if message else 200,
            person=person,
            study=person.study,
            form=form,
            assignment=assignment,
            item=assignment.item,
            candidates=candidates,
            answers={(a.target, a.field): a.value for a in assignment.answers},
            n=assignment.position,
            total=len(person.assignments),
            done=sum(a.completed_at is not None for a in person.assignments),
            elapsed=elapsed,
            running=assignment.completed_at is None,
            closed=person.study.status != "open",
            message=message,
            csrf=csrf_of(request),
            title=f"Task {assignment.position}",
        )

    def _open(person: Annotator) -> None:
        if person.study.status != "open":
            raise HTTPException(409, "The study is closed; answers can no longer change.")

    def _writable(person: Annotator) -> None:
        _open(person)
        if gate(person) is not None:
            raise HTTPException(403, "Finish onboarding and calibration first.")

    def _store(session: Session, form: AnnotationForm, assignment: Assignment, answer: AnswerIn) -> None:
        targets = {s.public_id for s in assignment.shown} | {"task"}
        try:
            f = form.field(answer.field)
        except KeyError:
            raise HTTPException(422, f"Unknown field '{answer.field}'.") from None
        if answer.target not in targets or (f.scope == "task") != (answer.target == "task"):
            raise HTTPException(422, "Unknown answer target for this task.")
        try:
            f.validate(answer.value)
        except ValueError as exc:
            raise HTTPException(422, str(exc)) from None
        save_answer(session, assignment.id, answer.target, answer.field, answer.value)

    @app.post("/api/tasks/{n}/answer")
    def api_answer(request: Request, n: int, answer: AnswerIn, person: Person, session: DB) -> JSONResponse:
        _check_csrf(request, request.headers.get("x-csrf-token"))
        _writable(person)
        assignment = task_of(person, n)
        form = item_form(person.study, assignment.item)
        _store(session, form, assignment, answer)
        session.commit()
        session.refresh(assignment)
        return JSONResponse({"saved": True, "complete": is_complete(form, assignment)})

    @app.post("/tasks/{n}")
    async def submit_task(request: Request, n: int, person: Person, session: DB) -> Response:
        values = await form_csrf(request)
        _writable(person)
        assignment = task_of(person, n)
        form = item_form(person.study, assignment.item)
        for key, value in values.items():
            target, _, field = key.partition(":")
            if field:
                _store(session, form, assignment, AnswerIn(target=target, field=field, value=value))
        session.commit()
        session.refresh(assignment)
        if not is_complete(form, assignment):
            return _render_task(request, person, assignment, "Answer every question before moving on.")
        if assignment.completed_at is None:
            assignment.completed_at = utcnow()
            session.commit()
        following = n + 1 if n < len(person.assignments) else None
        return RedirectResponse(f"/tasks/{following}" if following else "/tasks/next", status_code=303)

    @app.get("/done", response_class=HTMLResponse)
    def done(request: Request, person: Person) -> HTMLResponse:
        return render(
            request,
            "done.html",
            person=person,
            study=person.study,
            total=len(person.assignments),
            done=sum(a.completed_at is not None for a in person.assignments),
            title="Thank you",
        )

    @app.get("/admin/join/{token}")
    def admin_join(request: Request, token: str, session: DB) -> Response:
        return exchange(request, session, token, lead=True, confirmed=False)

    @app.post("/admin/join/confirm")
    async def admin_join_confirmed(request: Request, session: DB) -> Response:
        return await confirm_exchange(request, session, lead=True)

    @app.get("/admin", response_class=HTMLResponse)
    def dashboard(request: Request, study: Lead, session: DB) -> HTMLResponse:
        ratings = study_ratings(session, study)
        rows = []
        for person in study.annotators:
            times = [
                (aware(a.completed_at) - aware(a.opened_at)).total_seconds()
                for a in person.assignments
                if a.completed_at is not None and a.opened_at is not None
            ]
            rows.append(
                {
                    "name": person.name,
                    "committed": person.committed_at is not None,
                    "calibration": person.calibration_score,
                    "passed": person.calibration_passed_at is not None or not study.calibration,
                    "done": len(times),
                    "total": len(person.assignments),
                    "median_s": statistics.median(times) if times else None,
                    "mean_s": statistics.fmean(times) if times else None,
                }
            )
        return render(
            request,
            "admin.html",
            study=study,
            form=study_form(study),
            rows=rows,
            agreement=agreement(study, ratings),
            n_ratings=len(ratings),
            csrf=csrf_of(request),
            title="Dashboard",
        )

    @app.get("/admin/export.json")
    def export_json(study: Lead, session: DB) -> Response:
        return Response(
            ratings_json(study, study_ratings(session, study)),
            media_type="application/json",
            headers={"content-disposition": f'attachment; filename="{study.slug}.json"'},
        )

    @app.get("/admin/export.csv")
    def export_csv(study: Lead, session: DB) -> Response:
        return Response(
            ratings_csv(study, study_ratings(session, study)),
            media_type="text/csv",
            headers={"content-disposition": f'attachment; filename="{study.slug}.csv"'},
        )

    @app.post("/admin/status")
    async def set_status(request: Request, study: Lead, session: DB) -> Response:
        values = await form_csrf(request)
        status = values.get("status")
        if status not in ("open", "closed"):
            raise HTTPException(422, "status must be 'open' or 'closed'.")
        study.status = status
        session.commit()
        return RedirectResponse("/admin", status_code=303)

    return app


def _who(study: Study, person: Annotator | None) -> str:
    return person.name if person is not None else f"the lead of {study.title}"


def _matches(kind: str, value: str | None, gold: str | None) -> bool:
    """A calibration answer matches gold when equal, or for a scale within one point."""
    if value is None or gold is None:
        return False
    if kind == "scale":
        return abs(int(value) - int(gold)) <= 1
    return value == gold


def _calibration_attempt(session: Session, person: Annotator) -> list[CalibrationItem]:
    """The examples of the annotator's next calibration attempt: ones whose reference answers they have not seen.

    An attempt's examples are answered and shown with their reference answers together, so a
    failed attempt's examples are never scored again: the next attempt takes fresh ones, and
    none are left once every example has been seen.
    """
    seen = set(
        session.scalars(
            select(CalibrationAnswer.calibration_item_id).where(CalibrationAnswer.annotator_id == person.id)
        )
    )
    fresh = [item for item in person.study.calibration if item.id not in seen]
    return fresh[: person.study.calibration_size or len(fresh)]


def _calibration_answers(session: Session, person: Annotator) -> dict[str, str]:
    rows = session.scalars(select(CalibrationAnswer).where(CalibrationAnswer.annotator_id == person.id))
    return {f"{r.calibration_item_id}:{r.target}:{r.field}": r.value for r in rows}


EXPORT_COLUMNS = (
    "study",
    "form",
    "item",
    "annotator",
    "field",
    "system",
    "opponent",
    "slot",
    "raw",
    "value",
    "seconds",
    "answered_at",
    "revisions",
)


def ratings_csv(study: Study, ratings: list[Rating]) -> str:
    """The ratings as CSV with :data:`EXPORT_COLUMNS`."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=EXPORT_COLUMNS)
    writer.writeheader()
    for r in ratings:
        writer.writerow({"study": study.slug, "form": study.form, **asdict(r)})
    return buffer.getvalue()


def ratings_json(study: Study, ratings: list[Rating]) -> str:
    """The ratings as a JSON array of objects with :data:`EXPORT_COLUMNS`."""
    return json.dumps([{"study": study.slug, "form": study.form, **asdict(r)} for r in ratings], indent=1)


def app_from_env() -> FastAPI:
    """The app over ``EBMEVAL_ANNOTATE_DB`` (the factory uvicorn workers import).

    ``EBMEVAL_ANNOTATE_BEHIND_TLS=1`` sets ``behind_tls``.
    """
    import os

    return create_app(
        os.environ["EBMEVAL_ANNOTATE_DB"], behind_tls=os.environ.get("EBMEVAL_ANNOTATE_BEHIND_TLS") == "1"
    )
