"""The front page: every run of the store with its options and metrics."""

# No ``from __future__ import annotations``: FastAPI reads the route signatures at runtime.
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from ..runner import summarize
from ._web import Runs, render

router = APIRouter()


@router.get("/favicon.ico")
def favicon() -> Response:
    return Response(status_code=204)  # no icon; spares the browser a 404


@router.get("/", response_class=HTMLResponse)
def run_list(request: Request, runs: Runs) -> HTMLResponse:
    summaries = [summarize(runs, r.run_id) for r in runs.list_runs()]
    return render(request, "runs.html", summaries=summaries, title="Runs")
