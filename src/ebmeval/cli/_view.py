"""``ebmeval view``: the run store in a local, read-only web app."""

from __future__ import annotations

from typing import Annotated

import typer

from .._util.defaults import DEFAULT_STORE, VIEW_PORT
from ._common import StoreOption, app, console


@app.command("view")
def view(
    store: StoreOption = DEFAULT_STORE,
    host: Annotated[
        str, typer.Option(help="Address to listen on (the default keeps it on this machine).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = VIEW_PORT,
) -> None:
    """Browse runs, samples, prompts, judge replies and scores in a browser (read-only; Ctrl-C stops it)."""
    from ..view import serve

    serve(store, host=host, port=port, ready=lambda url: console.print(f"viewing {store} at {url} (Ctrl-C stops)"))
