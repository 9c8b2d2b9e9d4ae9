"""The lead's dashboard: each annotator's progress and timing, and the agreement so far."""

# No ``from __future__ import annotations``: FastAPI reads the route signatures at runtime.
import statistics
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from ._answers import agreement, study_form, study_ratings
from ._models import Annotator, Study, aware
from ._web import DB, Lead, csrf_of, render

router = APIRouter()


@router.get("/admin", response_class=HTMLResponse)
def dashboard(request: Request, study: Lead, session: DB) -> HTMLResponse:
    ratings = study_ratings(session, study)
    return render(
        request,
        "admin.html",
        study=study,
        form=study_form(study),
        rows=[_progress(study, person) for person in study.annotators],
        agreement=agreement(study, ratings),
        n_ratings=len(ratings),
        csrf=csrf_of(request),
        title="Dashboard",
    )


def _progress(study: Study, person: Annotator) -> dict[str, Any]:
    """One annotator's row: commitment, calibration, tasks done and the seconds they took."""
    times = [
        (aware(a.completed_at) - aware(a.opened_at)).total_seconds()
        for a in person.assignments
        if a.completed_at is not None and a.opened_at is not None
    ]
    return {
        "name": person.name,
        "committed": person.committed_at is not None,
        "calibration": person.calibration_score,
        "passed": person.calibration_passed_at is not None or not study.calibration,
        "done": len(times),
        "total": len(person.assignments),
        "median_s": statistics.median(times) if times else None,
        "mean_s": statistics.fmean(times) if times else None,
    }
