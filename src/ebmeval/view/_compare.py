"""Two runs side by side on the samples they share."""

# No ``from __future__ import annotations``: FastAPI reads the route signatures at runtime.
from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse

from ._data import PAIR_KINDS, pair_rows
from ._web import PAGE_SIZE, Runs, render, run_of

router = APIRouter()


@router.get("/compare", response_class=HTMLResponse)
def compare(request: Request, runs: Runs, a: str, b: str, kind: str | None = None) -> HTMLResponse:
    run_a, run_b = run_of(runs, a), run_of(runs, b)
    if kind is not None and kind not in PAIR_KINDS:
        raise HTTPException(404, f"unknown filter {kind!r}; filters: {', '.join(PAIR_KINDS)}")
    pairs = pair_rows(runs, run_a.run_id, run_b.run_id)
    shown = [p for p in pairs if kind is None or p.has(kind)]
    return render(
        request,
        "compare.html",
        a=run_a,
        b=run_b,
        pairs=shown[: PAGE_SIZE * 5],
        shared=len(pairs),
        matching=len(shown),
        kind=kind,
        kinds=PAIR_KINDS,
        title="Side by side",
    )
