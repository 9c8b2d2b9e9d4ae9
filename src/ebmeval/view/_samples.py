"""A run's samples, filtered and a page at a time, and one sample in full."""

# No ``from __future__ import annotations``: FastAPI reads the route signatures at runtime.
from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import HTMLResponse

from ._data import KINDS, SampleFilter, label_choices, sample_detail, sample_rows, select
from ._web import PAGE_SIZE, Runs, render, run_of

router = APIRouter()


@router.get("/runs/{run_id}", response_class=HTMLResponse)
def samples(
    request: Request,
    runs: Runs,
    run_id: str,
    kind: Annotated[list[str], Query()] = [],  # noqa: B006 - FastAPI reads the default, never mutates it
    label: str | None = None,
    score_set: str | None = None,
    metric: str | None = None,
    low: str | None = None,
    high: str | None = None,
    page: int = 1,
) -> HTMLResponse:
    run = run_of(runs, run_id)
    unknown = [k for k in kind if k not in KINDS]
    if unknown:
        raise HTTPException(404, f"unknown filter {unknown[0]!r}; filters: {', '.join(KINDS)}")
    chosen = SampleFilter(
        kinds=tuple(kind),
        label=label or None,
        score_set=score_set or None,
        metric=metric or None,
        low=_bound(low, "low"),
        high=_bound(high, "high"),
    )
    rows = sample_rows(runs, run.run_id)
    shown = select(rows, chosen)
    page = max(1, page)
    return render(
        request,
        "samples.html",
        run=run,
        rows=shown[(page - 1) * PAGE_SIZE : page * PAGE_SIZE],
        total=len(rows),
        matching=len(shown),
        page=page,
        pages=max(1, -(-len(shown) // PAGE_SIZE)),
        chosen=chosen,
        query=urlencode(chosen.query()),
        kinds=KINDS,
        labels=label_choices(rows),
        score_sets=runs.score_sets(run.run_id),
        metrics=sorted({m for r in rows for by in r.scores.values() for m in by}),
        title=f"Samples of {run.run_id}",
    )


@router.get("/runs/{run_id}/samples/{sample_id}", response_class=HTMLResponse)
def sample(request: Request, runs: Runs, run_id: str, sample_id: str, epoch: int = 0) -> HTMLResponse:
    run = run_of(runs, run_id)
    detail = sample_detail(runs, run.run_id, sample_id, epoch)
    if detail is None:
        raise HTTPException(404, f"run {run.run_id} has no sample {sample_id!r} at epoch {epoch}")
    return render(request, "sample.html", d=detail, title=f"Sample {sample_id}")


def _bound(text: str | None, name: str) -> float | None:
    if text is None or not text.strip():
        return None
    try:
        return float(text)
    except ValueError as exc:
        raise HTTPException(404, f"{name}={text!r} is not a number") from exc
