"""Serving the viewer, and the links other outputs (reports) make into it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote, urlencode

from .._util.defaults import VIEW_PORT
from .._util.errors import MissingDependencyError


def serve(
    store: str | Path, *, host: str = "127.0.0.1", port: int = VIEW_PORT, ready: Callable[[str], None] | None = None
) -> None:
    """Serve the viewer over ``store`` with uvicorn until interrupted.

    Args:
        store: The run store, opened read-only.
        host: Interface to bind; the default keeps the viewer on this machine.
        port: TCP port.
        ready: Called with the viewer's URL once the store is open, before serving starts.
    """
    try:
        import uvicorn
    except ImportError as exc:
        raise MissingDependencyError("Serving the run viewer", "uvicorn", "web") from exc
    from ._app import create_app

    app = create_app(store)
    if ready is not None:
        ready(f"http://{host}:{port}/")
    uvicorn.run(app, host=host, port=port, log_level="warning")


def view_url(
    base: str, run_id: str, *, score_set: str | None = None, metric: str | None = None, label: str | None = None
) -> str:
    """The viewer's page of ``run_id``'s samples with a value of ``metric`` in ``score_set`` (and ``label``)."""
    query = [(k, v) for k, v in (("score_set", score_set), ("metric", metric), ("label", label)) if v is not None]
    suffix = f"?{urlencode(query)}" if query else ""
    return f"{base.rstrip('/')}/runs/{quote(run_id, safe='')}{suffix}"
