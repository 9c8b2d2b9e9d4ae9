"""``ebmeval serve-model``: a local model as an OpenAI-compatible server."""

from __future__ import annotations

from typing import Annotated

import typer

from ._common import app, console


@app.command("serve-model")
def serve_model(
    model: Annotated[str, typer.Option(help="local, local:smollm2 or local:/path/model.gguf.")] = "local",
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8080,
    n_ctx: Annotated[int | None, typer.Option(help="Context window in tokens.")] = None,
    n_parallel: Annotated[int, typer.Option(help="Requests served at once.")] = 1,
    n_threads: Annotated[int | None, typer.Option(help="CPU threads (default: all cores).")] = None,
    engine: Annotated[
        str | None, typer.Option(help="xllamacpp or native (default: native when built for this CPU).")
    ] = None,
    api_key_env: Annotated[
        str | None, typer.Option(help="Environment variable holding an API key clients must send.")
    ] = None,
) -> None:
    """Serve a GGUF model as an OpenAI-compatible HTTP server (Ctrl-C stops it)."""
    import os

    from .._util.errors import ConfigError
    from ..models._serve import serve_model as serve

    api_key = None
    if api_key_env is not None:
        api_key = os.environ.get(api_key_env)
        if not api_key:
            raise ConfigError("--api-key-env", f"environment variable {api_key_env} is not set")
    console.print(f"loading {model} …")
    serve(
        model,
        host=host,
        port=port,
        n_ctx=n_ctx,
        n_parallel=n_parallel,
        n_threads=n_threads,
        api_key=api_key,
        engine=engine,
        ready=lambda url: console.print(f"serving {model} at {url} — use --model openai-compatible:<name>@{url}"),
    )
