"""The lead's exports of the ratings (JSON, CSV) and the study's open/closed switch.

System names reach only these exports, never an annotator's page.
"""

# No ``from __future__ import annotations``: FastAPI reads the route signatures at runtime.
import csv
import io
import json
from dataclasses import asdict

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import RedirectResponse, Response

from ._answers import Rating, study_ratings
from ._models import Study
from ._web import DB, Lead, form_csrf

router = APIRouter()

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


def _download(text: str, media_type: str, filename: str) -> Response:
    return Response(text, media_type=media_type, headers={"content-disposition": f'attachment; filename="{filename}"'})


@router.get("/admin/export.json")
def export_json(study: Lead, session: DB) -> Response:
    return _download(ratings_json(study, study_ratings(session, study)), "application/json", f"{study.slug}.json")


@router.get("/admin/export.csv")
def export_csv(study: Lead, session: DB) -> Response:
    return _download(ratings_csv(study, study_ratings(session, study)), "text/csv", f"{study.slug}.csv")


@router.post("/admin/status")
async def set_status(request: Request, study: Lead, session: DB) -> Response:
    values = await form_csrf(request)
    status = values.get("status")
    if status not in ("open", "closed"):
        raise HTTPException(422, "status must be 'open' or 'closed'.")
    study.status = status
    session.commit()
    return RedirectResponse("/admin", status_code=303)
