"""The blinded tasks: one page per assigned item, its answers saved as they are entered and on submit.

Pages and JSON show candidates only by opaque per-assignment ids.
"""

# No ``from __future__ import annotations``: FastAPI reads the route signatures at runtime.
from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from pydantic import BaseModel, Field
from sqlalchemy.orm import Session

from ._answers import is_complete, item_form, save_answer
from ._forms import Form as AnnotationForm
from ._models import Annotator, Assignment, aware, utcnow
from ._web import DB, Person, check_csrf, csrf_of, ensure_open, form_csrf, gate, person_page, task_of

router = APIRouter()


class AnswerIn(BaseModel):
    """One answer posted by the task page as it is entered."""

    target: str = Field(max_length=32)
    field: str = Field(max_length=64)
    value: str = Field(max_length=32)


@router.get("/tasks/next")
def next_task(person: Person) -> Response:
    if (where := gate(person)) is not None:
        return RedirectResponse(where, status_code=303)
    for a in person.assignments:
        if a.completed_at is None:
            return RedirectResponse(f"/tasks/{a.position}", status_code=303)
    return RedirectResponse("/done", status_code=303)


@router.get("/tasks/{n}", response_class=HTMLResponse)
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
    return person_page(
        request,
        person,
        "task.html",
        f"Task {assignment.position}",
        status=422 if message else 200,
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
    )


def _writable(person: Annotator) -> None:
    ensure_open(person)
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


@router.post("/api/tasks/{n}/answer")
def api_answer(request: Request, n: int, answer: AnswerIn, person: Person, session: DB) -> JSONResponse:
    check_csrf(request, request.headers.get("x-csrf-token"))
    _writable(person)
    assignment = task_of(person, n)
    form = item_form(person.study, assignment.item)
    _store(session, form, assignment, answer)
    session.commit()
    session.refresh(assignment)
    return JSONResponse({"saved": True, "complete": is_complete(form, assignment)})


@router.post("/tasks/{n}")
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


@router.get("/done", response_class=HTMLResponse)
def done(request: Request, person: Person) -> HTMLResponse:
    done = sum(a.completed_at is not None for a in person.assignments)
    return person_page(request, person, "done.html", "Thank you", total=len(person.assignments), done=done)
