"""What the routers of the viewer share: its state, the page templates, the security headers, errors, runs.

The app built by :func:`~ebmeval.view._app.create_app` keeps one :class:`Viewer` in
``app.state.viewer``; the helpers below read it from the request.
"""

# No ``from __future__ import annotations``: FastAPI reads the dependency signatures at runtime.
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, HTTPException, Request
from fastapi.responses import HTMLResponse, Response
from fastapi.templating import Jinja2Templates

from .._util.errors import UsageError
from .._util.pages import template_folders
from ..store import RunStore

HERE = Path(__file__).parent
PAGE_SIZE = 100
"""Sample rows per page."""
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
"""The pages are plain HTML and one style sheet: no script runs, no inline style."""


@dataclass
class Viewer:
    """The state of one viewer: the run store it shows (read-only) and its page templates."""

    runs: RunStore
    templates: Jinja2Templates


def page_templates() -> Jinja2Templates:
    """The viewer's Jinja2 page templates, with the ``short`` and ``number`` filters."""
    templates = Jinja2Templates(directory=template_folders(HERE / "templates"))
    templates.env.filters["short"] = _short
    templates.env.filters["number"] = _number
    return templates


def viewer(request: Request) -> Viewer:
    """The state of the viewer serving ``request``."""
    state: Viewer = request.app.state.viewer
    return state


def run_store(request: Request) -> RunStore:
    """The run store the viewer serving ``request`` shows."""
    return viewer(request).runs


Runs = Annotated[RunStore, Depends(run_store)]


def render(request: Request, name: str, status: int = 200, **context: Any) -> HTMLResponse:
    """The page template ``name`` rendered with the store's path and ``context``."""
    state = viewer(request)
    return state.templates.TemplateResponse(request, name, {"store": state.runs.path, **context}, status_code=status)


def run_of(runs: RunStore, run_id: str) -> Any:
    """The run ``run_id`` (or a unique prefix of it); a 404 naming it if there is none."""
    try:
        return runs.get_run(run_id)
    except UsageError as exc:
        raise HTTPException(404, str(exc)) from exc


async def security_headers(request: Request, call_next: Any) -> Response:
    """Every response with the CSP, sniffing and referrer headers."""
    response: Response = await call_next(request)
    response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "no-referrer"
    return response


async def http_error(request: Request, exc: HTTPException) -> Response:
    """An error as the error page."""
    return render(request, "error.html", exc.status_code, message=exc.detail, title="Not found")


def _short(value: Any, limit: int = 160) -> str:
    """A value as one line of at most ``limit`` characters."""
    text = value if isinstance(value, str) else ("" if value is None else str(value))
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _number(value: float | None) -> str:
    """A metric value with three decimals; a dash for none."""
    return "–" if value is None or value != value else f"{value:.3f}"
