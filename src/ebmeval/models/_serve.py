"""Serve a local GGUF model over an OpenAI-compatible HTTP API.

``serve_model`` runs in the foreground (``ebmeval serve-model``); ``model_server`` starts
one in a child process and is what tests use to talk HTTP to a real llama.cpp server.
The API is at ``http://HOST:PORT/v1`` (``/v1/chat/completions``, ``/v1/models``), with
``/health`` and ``/tokenize`` beside it.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import IO

import httpx

from .._util.errors import ModelError, UsageError
from ._local_files import resolve_local_model
from .providers.llamacpp import ServerSettings, context_window, select_engine, start_server

_READY_PREFIX = "ebmeval-serve: listening on "


def serve_model(
    model: str = "local",
    *,
    host: str = "127.0.0.1",
    port: int = 8080,
    n_ctx: int | None = None,
    n_parallel: int = 1,
    n_threads: int | None = None,
    api_key: str | None = None,
    ready: Callable[[str], None] | None = None,
    engine: str | None = None,
) -> None:
    """Serve a local model until interrupted (Ctrl-C or SIGTERM).

    Args:
        model: A ``local`` spec (``local``, ``local:smollm2``, ``local:/m.gguf``), the part
            after ``local:``, or a path to a GGUF file.
        host: Interface to listen on; keep the loopback default unless the server must be
            reached from other machines (then set ``api_key``).
        port: TCP port; 0 picks a free one.
        n_ctx: Context window per request; the model's default when ``None``.
        n_parallel: Requests decoded at once.
        n_threads: CPU threads; all available cores by default.
        api_key: Require this bearer token on every request.
        ready: Called with the API base URL (``http://host:port/v1``) once the model is loaded.
        engine: ``xllamacpp`` or ``native``; the native build when there is one for this CPU.
    """
    file = resolve_local_model("" if model == "local" else model.removeprefix("local:"))
    native = select_engine(engine)
    settings = ServerSettings(
        n_ctx=context_window(file, n_ctx),
        n_parallel=n_parallel,
        n_threads=n_threads,
        host=host,
        port=port,
        api_key=api_key,
        alias=file.name,
    )
    server = start_server(file.path, native, settings)
    stop = threading.Event()
    previous = None
    if threading.current_thread() is threading.main_thread():

        def on_term(_signum: int, _frame: FrameType | None) -> None:
            stop.set()

        previous = signal.signal(signal.SIGTERM, on_term)
    try:
        if ready is not None:
            ready(f"{server.listening_address}/v1")
        # A timed wait keeps the main thread responsive to Ctrl-C.
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        del server


@contextmanager
def model_server(
    model: str = "local:smollm2",
    *,
    n_ctx: int | None = None,
    n_parallel: int = 1,
    n_threads: int | None = None,
    startup_timeout: float = 300.0,
    engine: str | None = None,
) -> Iterator[str]:
    """Run ``serve_model`` in a child process on a free loopback port, for as long as the block.

    Yields the API base URL (``http://127.0.0.1:PORT/v1``) once ``/health`` answers.
    On exit the server gets SIGTERM, then SIGKILL if it has not stopped within 10 s.

    Raises:
        ModelError: The server did not start within ``startup_timeout`` seconds; the
            message includes what it wrote to stderr.
    """
    command = [sys.executable, "-m", "ebmeval.models._serve", "--model", model, "--port", "0"]
    command += ["--n-parallel", str(n_parallel)]
    if n_ctx is not None:
        command += ["--n-ctx", str(n_ctx)]
    if n_threads is not None:
        command += ["--n-threads", str(n_threads)]
    if engine is not None:
        command += ["--engine", engine]
    with tempfile.TemporaryFile(mode="w+") as errors:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=errors, text=True)
        try:
            base_url = _await_ready(process, errors, startup_timeout)
            yield base_url
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            if process.stdout is not None:
                process.stdout.close()


def _await_ready(process: subprocess.Popen[str], errors: IO[str], timeout: float) -> str:
    deadline = time.monotonic() + timeout
    lines: list[str] = []
    # The child prints its address once the model is loaded. readline() blocks, so it
    # runs in a thread to keep the deadline.
    reader = threading.Thread(target=lambda: lines.append(_first_line(process)), daemon=True)
    reader.start()
    reader.join(timeout)
    line = lines[0] if lines else ""
    if not line.startswith(_READY_PREFIX):
        raise ModelError(f"the model server did not start: {_stderr(process, errors)}")
    base_url = line[len(_READY_PREFIX) :].strip()
    health = base_url.removesuffix("/v1") + "/health"
    while time.monotonic() < deadline:
        try:
            if httpx.get(health, timeout=5).status_code == 200:
                return base_url
        except httpx.TransportError:
            pass
        if process.poll() is not None:
            break
        time.sleep(0.05)
    raise ModelError(f"the model server at {base_url} did not become healthy: {_stderr(process, errors)}")


def _first_line(process: subprocess.Popen[str]) -> str:
    return process.stdout.readline() if process.stdout is not None else ""


def _stderr(process: subprocess.Popen[str], errors: IO[str]) -> str:
    if process.poll() is None:
        process.kill()
        process.wait()
    errors.seek(0)
    text = errors.read().strip()
    return text[-2000:] or f"exit status {process.returncode}, no output"


def main(argv: list[str] | None = None) -> int:
    """Serve a model from the command line, printing the API address once it is loaded."""
    parser = argparse.ArgumentParser(
        prog="python -m ebmeval.models._serve", description="Serve a local GGUF model over HTTP."
    )
    parser.add_argument("--model", default="local")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--n-ctx", type=int)
    parser.add_argument("--n-parallel", type=int, default=1)
    parser.add_argument("--n-threads", type=int)
    parser.add_argument("--engine", choices=["xllamacpp", "native"])
    args = parser.parse_args(argv)
    try:
        serve_model(
            args.model,
            host=args.host,
            port=args.port,
            n_ctx=args.n_ctx,
            n_parallel=args.n_parallel,
            n_threads=args.n_threads,
            ready=lambda url: print(_READY_PREFIX + url, flush=True),
            engine=args.engine,
        )
    except (UsageError, ModelError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
