"""Before the tasks: the onboarding commitment and the calibration examples, scored against gold."""

# No ``from __future__ import annotations``: FastAPI reads the route signatures at runtime.
import re
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from markupsafe import Markup, escape
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from ._answers import study_form
from ._models import Annotator, CalibrationAnswer, CalibrationItem, utcnow
from ._web import DB, NO_CALIBRATION_LEFT, Person, csrf_of, ensure_open, form_csrf, gate, person_page

router = APIRouter()


@router.get("/start")
def start(person: Person) -> Response:
    return RedirectResponse(gate(person) or "/tasks/next", status_code=303)


@router.get("/onboarding", response_class=HTMLResponse)
def onboarding(request: Request, person: Person) -> HTMLResponse:
    return _form_page(request, person, "onboarding.html", "Welcome", n_tasks=len(person.assignments))


@router.post("/onboarding")
async def commit(request: Request, person: Person, session: DB) -> Response:
    values = await form_csrf(request)
    ensure_open(person)
    if values.get("commit") != "yes":
        raise HTTPException(422, "Tick the commitment box to continue.")
    if person.committed_at is None:
        person.committed_at = utcnow()
        session.commit()
    return RedirectResponse(gate(person) or "/tasks/next", status_code=303)


@router.get("/calibration", response_class=HTMLResponse)
def calibration(request: Request, person: Person, session: DB) -> Response:
    if person.committed_at is None:
        return RedirectResponse("/onboarding", status_code=303)
    passed = person.calibration_passed_at is not None
    items = [] if passed else _calibration_attempt(session, person)
    return _form_page(request, person, "calibration.html", "Calibration", items=items, passed=passed)


def _form_page(request: Request, person: Annotator, name: str, title: str, **context: Any) -> HTMLResponse:
    """A page with the study's form that posts back: whether the study is closed, and the CSRF token."""
    closed = person.study.status != "open"
    form = study_form(person.study)
    return person_page(request, person, name, title, form=form, closed=closed, csrf=csrf_of(request), **context)


@router.post("/calibration")
async def submit_calibration(request: Request, person: Person, session: DB) -> Response:
    """Score one attempt: the examples whose reference answers this annotator has not seen yet."""
    values = await form_csrf(request)
    ensure_open(person)
    if person.committed_at is None:
        raise HTTPException(409, "Accept the commitment first.")
    if person.calibration_passed_at is not None:
        raise HTTPException(409, "Calibration is passed already; the tasks are open.")
    items = _calibration_attempt(session, person)
    if not items:
        raise HTTPException(409, NO_CALIBRATION_LEFT)
    matched, total = _score_attempt(session, person, items, values)
    person.calibration_score = matched / total if total else 1.0
    if person.calibration_score >= person.study.pass_threshold:
        person.calibration_passed_at = utcnow()
    try:
        session.commit()
    except IntegrityError:  # the same attempt submitted twice at once: the first one counts
        session.rollback()
        raise HTTPException(409, "This attempt was submitted already.") from None
    return RedirectResponse("/calibration/result", status_code=303)


def _score_attempt(
    session: Session, person: Annotator, items: list[CalibrationItem], values: dict[str, str]
) -> tuple[int, int]:
    """Store the attempt's answers; (answers matching gold, answers with gold). 422 for a missing or invalid one."""
    form = study_form(person.study)
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
    return matched, total


@router.get("/calibration/result", response_class=HTMLResponse)
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
    more = not passed and bool(_calibration_attempt(session, person))
    form = study_form(person.study)
    return person_page(
        request,
        person,
        "calibration_result.html",
        "Calibration feedback",
        form=form,
        items=items,
        given=given,
        passed=passed,
        more=more,
        matches=_matches,
    )


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
