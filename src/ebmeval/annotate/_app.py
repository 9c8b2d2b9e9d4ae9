"""The web application: invitation links, onboarding, calibration, blinded tasks and the lead's dashboard.

Annotators authenticate with the cookie set by their invitation link and the lead with the admin
link's cookie (or an ``Authorization: Bearer`` header for scripts). Every state-changing request
made with a cookie carries a CSRF token bound to the credential. Pages and JSON show candidates
only by opaque per-assignment ids; system names reach only the admin exports.
"""

# No ``from __future__ import annotations``: FastAPI reads the route signatures at runtime, and the
# dependency aliases below are local to create_app.
import csv
import io
import json
import re
import statistics
from collections.abc import Iterator
from dataclasses import asdict
from datetime import datetime
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
from pydantic import BaseModel, Field
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from ._answers import Rating, agreement, is_complete, save_answer, study_form, study_ratings
from ._forms import Form as AnnotationForm
from ._models import Annotator, Assignment, CalibrationAnswer, Study, make_engine, utcnow
from ._security import csrf_ok, csrf_token, hash_token, signing_secret

_HERE = Path(__file__).parent
ANNOTATOR_COOKIE = "ebmeval_annotator"
ADMIN_COOKIE = "ebmeval_admin"


class AnswerIn(BaseModel):
    """One answer posted by the task page as it is entered."""

    target: str = Field(max_length=32)
    field: str = Field(max_length=64)
    value: str = Field(max_length=32)


def _highlight(text: str, passages: list[str]) -> Markup:
    """``text`` HTML-escaped, with every occurrence of the passages wrapped in ``<mark>``."""
    out = escape(text)
    for p in sorted(passages, key=len, reverse=True):
        out = Markup(re.sub(re.escape(str(escape(p))), lambda m: f"<mark>{m.group(0)}</mark>", str(out)))
    return out


def _aware(value: datetime) -> datetime:
    # SQLite returns naive datetimes for values stored as UTC.
    return value if value.tzinfo is not None else value.replace(tzinfo=utcnow().tzinfo)


def create_app(db: str) -> FastAPI:
    """The annotation app over the annotation database ``db`` (SQLite path or ``postgresql://`` URL)."""
    engine = make_engine(db)
    sessions = sessionmaker(engine, expire_on_commit=False)
    with sessions() as s:
        secret = signing_secret(s)
    templates = Jinja2Templates(directory=str(_HERE / "templates"))
    app = FastAPI(title="ebmeval annotation", docs_url=None, redoc_url=None, openapi_url=None)
    app.mount("/static", StaticFiles(directory=str(_HERE / "static")), name="static")

    def db_session() -> Iterator[Session]:
        with sessions() as s:
            yield s

    DB = Annotated[Session, Depends(db_session)]

    def render(request: Request, name: str, status: int = 200, **context: Any) -> HTMLResponse:
        return templates.TemplateResponse(request, name, context, status_code=status)

    def annotator(request: Request, session: DB) -> Annotator:
        token = request.cookies.get(ANNOTATOR_COOKIE)
        person = session.scalar(select(Annotator).where(Annotator.token_hash == hash_token(token))) if token else None
        if person is None:
            raise HTTPException(401, "Open the personal invitation link you received.")
        return person

    Person = Annotated[Annotator, Depends(annotator)]

    def lead(request: Request, session: DB) -> Study:
        header = request.headers.get("authorization", "")
        token = header[7:] if header.lower().startswith("bearer ") else request.cookies.get(ADMIN_COOKIE)
        study = session.scalar(select(Study).where(Study.admin_hash == hash_token(token))) if token else None
        if study is None:
            raise HTTPException(401, "Admin credential required.")
        return study

    Lead = Annotated[Study, Depends(lead)]

    def _check_csrf(request: Request, token_hash: str, given: str | None) -> None:
        if not csrf_ok(secret, token_hash, given):
            raise HTTPException(403, "Missing or invalid CSRF token; reload the page and try again.")

    async def form_csrf(request: Request, token_hash: str) -> dict[str, str]:
        form = await request.form()
        values = {k: v for k, v in form.items() if isinstance(v, str)}
        _check_csrf(request, token_hash, values.pop("csrf_token", None))
        return values

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

    @app.exception_handler(HTTPException)
    async def _error(request: Request, exc: HTTPException) -> Response:
        if request.url.path.startswith("/api/") or "application/json" in request.headers.get("accept", ""):
            return JSONResponse({"detail": exc.detail}, status_code=exc.status_code)
        return render(request, "error.html", exc.status_code, message=exc.detail, title="Error")

    @app.get("/", response_class=HTMLResponse)
    def home(request: Request) -> HTMLResponse:
        return render(request, "error.html", 200, message="Open the personal invitation link you received.", title="")

    @app.get("/join/{token}")
    def join(token: str, session: DB) -> Response:
        person = session.scalar(select(Annotator).where(Annotator.token_hash == hash_token(token)))
        if person is None:
            raise HTTPException(403, "This invitation link is not valid.")
        response = RedirectResponse("/start", status_code=303)
        response.set_cookie(ANNOTATOR_COOKIE, token, httponly=True, samesite="strict", max_age=90 * 86400)
        return response

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
            csrf=csrf_token(secret, person.token_hash),
            title="Welcome",
        )

    @app.post("/onboarding")
    async def commit(request: Request, person: Person, session: DB) -> Response:
        values = await form_csrf(request, person.token_hash)
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
        given = _calibration_answers(session, person)
        return render(
            request,
            "calibration.html",
            person=person,
            study=person.study,
            form=study_form(person.study),
            items=person.study.calibration,
            given=given,
            csrf=csrf_token(secret, person.token_hash),
            title="Calibration",
        )

    @app.post("/calibration")
    async def submit_calibration(request: Request, person: Person, session: DB) -> Response:
        values = await form_csrf(request, person.token_hash)
        form = study_form(person.study)
        if person.committed_at is None:
            raise HTTPException(409, "Accept the commitment first.")
        items = person.study.calibration
        matched = total = 0
        for item in items:
            for target, f in form.targets([f"c{i}" for i in range(len(item.candidates))]):
                key = f"{item.id}:{target}:{f.name}"
                value = values.get(key)
                if value is None:
                    raise HTTPException(422, "Answer every question of the calibration examples.")
                try:
                    f.validate(value)
                except ValueError as exc:
                    raise HTTPException(422, str(exc)) from None
                row = session.scalar(
                    select(CalibrationAnswer).where(
                        CalibrationAnswer.annotator_id == person.id,
                        CalibrationAnswer.calibration_item_id == item.id,
                        CalibrationAnswer.target == target,
                        CalibrationAnswer.field == f.name,
                    )
                )
                if row is None:
                    session.add(
                        CalibrationAnswer(
                            annotator_id=person.id,
                            calibration_item_id=item.id,
                            target=target,
                            field=f.name,
                            value=value,
                        )
                    )
                else:
                    row.value = value
                gold = item.gold.get(target, {}).get(f.name)
                if gold is not None:
                    total += 1
                    matched += _matches(f.kind, value, gold)
        person.calibration_score = matched / total if total else 1.0
        if person.calibration_score >= person.study.pass_threshold and person.calibration_passed_at is None:
            person.calibration_passed_at = utcnow()
        session.commit()
        return RedirectResponse("/calibration/result", status_code=303)

    @app.get("/calibration/result", response_class=HTMLResponse)
    def calibration_result(request: Request, person: Person, session: DB) -> Response:
        if person.calibration_score is None:
            return RedirectResponse("/calibration", status_code=303)
        items = [
            {"item": item, "highlighted": [_highlight(t, item.highlights) for t in item.candidates]}
            for item in person.study.calibration
        ]
        return render(
            request,
            "calibration_result.html",
            person=person,
            study=person.study,
            form=study_form(person.study),
            items=items,
            given=_calibration_answers(session, person),
            passed=person.calibration_passed_at is not None,
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
        if assignment.opened_at is None:
            assignment.opened_at = utcnow()
            session.commit()
        return _render_task(request, person, assignment)

    def _render_task(request: Request, person: Annotator, assignment: Assignment, message: str = "") -> HTMLResponse:
        form = study_form(person.study)
        pairwise = form.per_task == 2
        candidates = [
            {"id": s.public_id, "label": ("AB"[s.slot] if pairwise else str(s.slot + 1)), "text": s.candidate.text}
            for s in assignment.shown
        ]
        end = assignment.completed_at or utcnow()
        elapsed = int((_aware(end) - _aware(assignment.opened_at or end)).total_seconds())
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
            csrf=csrf_token(secret, person.token_hash),
            title=f"Task {assignment.position}",
        )

    def _writable(person: Annotator) -> None:
        if person.study.status != "open":
            raise HTTPException(409, "The study is closed; answers can no longer change.")
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
        _check_csrf(request, person.token_hash, request.headers.get("x-csrf-token"))
        _writable(person)
        assignment = task_of(person, n)
        _store(session, study_form(person.study), assignment, answer)
        session.commit()
        session.refresh(assignment)
        return JSONResponse({"saved": True, "complete": is_complete(study_form(person.study), assignment)})

    @app.post("/tasks/{n}")
    async def submit_task(request: Request, n: int, person: Person, session: DB) -> Response:
        values = await form_csrf(request, person.token_hash)
        _writable(person)
        assignment = task_of(person, n)
        form = study_form(person.study)
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
    def admin_join(token: str, session: DB) -> Response:
        if session.scalar(select(Study).where(Study.admin_hash == hash_token(token))) is None:
            raise HTTPException(403, "This admin link is not valid.")
        response = RedirectResponse("/admin", status_code=303)
        response.set_cookie(ADMIN_COOKIE, token, httponly=True, samesite="strict", max_age=90 * 86400)
        return response

    @app.get("/admin", response_class=HTMLResponse)
    def dashboard(request: Request, study: Lead, session: DB) -> HTMLResponse:
        ratings = study_ratings(session, study)
        rows = []
        for person in study.annotators:
            times = [
                (_aware(a.completed_at) - _aware(a.opened_at)).total_seconds()
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
            csrf=csrf_token(secret, study.admin_hash),
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
        # A bearer header is not sent by browsers on their own, so only cookie sessions need the CSRF token.
        if request.headers.get("authorization"):
            values = {k: v for k, v in (await request.form()).items() if isinstance(v, str)}
        else:
            values = await form_csrf(request, study.admin_hash)
        status = values.get("status")
        if status not in ("open", "closed"):
            raise HTTPException(422, "status must be 'open' or 'closed'.")
        study.status = status
        session.commit()
        return RedirectResponse("/admin", status_code=303)

    return app


def _matches(kind: str, value: str | None, gold: str | None) -> bool:
    """A calibration answer matches gold when equal, or for a scale within one point."""
    if value is None or gold is None:
        return False
    if kind == "scale":
        return abs(int(value) - int(gold)) <= 1
    return value == gold


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
    """The app over the database named by ``EBMEVAL_ANNOTATE_DB`` (the factory uvicorn workers import)."""
    import os

    return create_app(os.environ["EBMEVAL_ANNOTATE_DB"])
