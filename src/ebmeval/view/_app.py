"""The viewer's web application: read-only pages over one run store.

Pages: the runs (options and metrics, each metric linking to its samples), a run's samples with
filters, one sample in full, and two runs side by side on the samples they share. No page writes,
runs a script or loads anything from outside the app.

The routes are in one router each: the run list (:mod:`._runs`), a run's samples and one sample
(:mod:`._samples`) and the side-by-side comparison (:mod:`._compare`); what they share is in
:mod:`._web`.
"""

from __future__ import annotations

from pathlib import Path

from .._util.errors import MissingDependencyError

try:
    from fastapi import FastAPI, HTTPException
    from fastapi.staticfiles import StaticFiles
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise MissingDependencyError("The run viewer (ebmeval view)", "fastapi", "web") from exc

from ..store import RunStore
from . import _compare, _runs, _samples
from ._web import HERE, Viewer, http_error, page_templates, security_headers

ROUTERS = (_runs.router, _samples.router, _compare.router)
"""Every router of the viewer, in the order their routes are matched."""


def create_app(store: str | Path) -> FastAPI:
    """The viewer over the run store at ``store``, opened read-only (a missing file is an error now)."""
    runs = RunStore(store, read_only=True)
    app = FastAPI(title="ebmeval view", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.viewer = Viewer(runs, page_templates())
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")
    app.middleware("http")(security_headers)
    app.exception_handler(HTTPException)(http_error)
    for router in ROUTERS:
        app.include_router(router)
    return app
