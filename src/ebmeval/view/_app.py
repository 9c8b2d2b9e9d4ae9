"""The viewer's web application: read-only pages over one run store.

Pages: the runs (options and metrics, each metric linking to its samples), a run's samples with
filters, one sample in full, and two runs side by side on the samples they share. No page writes,
runs a script or loads anything from outside the app.
"""

# No ``from __future__ import annotations``: FastAPI reads the route signatures at runtime.
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlencode

from .._util.errors import MissingDependencyError, UsageError
from .._util.pages import template_folders

try:
    from fastapi import FastAPI, HTTPException, Query, Request
    from fastapi.responses import HTMLResponse, Response
    from fastapi.staticfiles import StaticFiles
    from fastapi.templating import Jinja2Templates
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise MissingDependencyError("The run viewer (ebmeval view)", "fastapi", "web") from exc

from ..runner import summarize
from ..store import RunStore
from ._data import KINDS, PAIR_KINDS, SampleFilter, label_choices, pair_rows, sample_detail, sample_rows, select

_HERE = Path(__file__).parent
PAGE_SIZE = 100
"""Sample rows per page."""
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
"""The pages are plain HTML and one style sheet: no script runs, no inline style."""


def create_app(store: str | Path) -> FastAPI:
    """The viewer over the run store at ``store``, opened read-only (a missing file is an error now)."""
    runs = RunStore(store, read_only=True)
    templates = Jinja2Templates(directory=template_folders(_HERE / "templates"))
    templates.env.filters["short"] = _short
    templates.env.filters["number"] = _number
    app = FastAPI(title="ebmeval view", docs_url=None, redoc_url=None, openapi_url=None)
    app.mount("/static", StaticFiles(directory=str(_HERE / "static")), name="static")

    def render(request: Request, name: str, status: int = 200, **context: Any) -> HTMLResponse:
        return templates.TemplateResponse(request, name, {"store": runs.path, **context}, status_code=status)

    def run_of(run_id: str) -> Any:
        try:
            return runs.get_run(run_id)
        except UsageError as exc:
            raise HTTPException(404, str(exc)) from exc

    @app.middleware("http")
    async def _headers(request: Request, call_next: Any) -> Response:
        response: Response = await call_next(request)
        response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        return response

    @app.exception_handler(HTTPException)
    async def _error(request: Request, exc: HTTPException) -> Response:
        return render(request, "error.html", exc.status_code, message=exc.detail, title="Not found")

    @app.get("/favicon.ico")
    def favicon() -> Response:
        return Response(status_code=204)  # no icon; spares the browser a 404

    @app.get("/", response_class=HTMLResponse)
    def run_list(request: Request) -> HTMLResponse:
        summaries = [summarize(runs, r.run_id) for r in runs.list_runs()]
        return render(request, "runs.html", summaries=summaries, title="Runs")

    @app.get("/runs/{run_id}", response_class=HTMLResponse)
    def samples(
        request: Request,
        run_id: str,
        kind: Annotated[list[str], Query()] = [],  # noqa: B006 - FastAPI reads the default, never mutates it
        label: str | None = None,
        score_set: str | None = None,
        metric: str | None = None,
        low: str | None = None,
        high: str | None = None,
        page: int = 1,
    ) -> HTMLResponse:
        run = run_of(run_id)
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

    @app.get("/runs/{run_id}/samples/{sample_id}", response_class=HTMLResponse)
    def sample(request: Request, run_id: str, sample_id: str, epoch: int = 0) -> HTMLResponse:
        run = run_of(run_id)
        detail = sample_detail(runs, run.run_id, sample_id, epoch)
        if detail is None:
            raise HTTPException(404, f"run {run.run_id} has no sample {sample_id!r} at epoch {epoch}")
        return render(request, "sample.html", d=detail, title=f"Sample {sample_id}")

    @app.get("/compare", response_class=HTMLResponse)
    def compare(request: Request, a: str, b: str, kind: str | None = None) -> HTMLResponse:
        run_a, run_b = run_of(a), run_of(b)
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

    return app


def _bound(text: str | None, name: str) -> float | None:
    if text is None or not text.strip():
        return None
    try:
        return float(text)
    except ValueError as exc:
        raise HTTPException(404, f"{name}={text!r} is not a number") from exc


def _short(value: Any, limit: int = 160) -> str:
    """A value as one line of at most ``limit`` characters."""
    text = value if isinstance(value, str) else ("" if value is None else str(value))
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _number(value: float | None) -> str:
    """A metric value with three decimals; a dash for none."""
    return "–" if value is None or value != value else f"{value:.3f}"
