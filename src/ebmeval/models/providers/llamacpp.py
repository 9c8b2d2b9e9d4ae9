"""Local GGUF models run by llama.cpp: in-process through ``xllamacpp``, or by a native build.

``local`` is the bundled default model, ``local:smollm2`` the small one used by tests,
``local:/path/model.gguf`` any GGUF file. The weights are loaded on the first call, not
when the model is created.

Two engines run them. ``xllamacpp`` is the prebuilt wheel: nothing to compile, but built
for a common instruction set. ``native`` is a ``llama-server`` compiled for this CPU by
``ebmeval engine build``; once built, verified and measured faster than ``xllamacpp`` here
it is used automatically, and ``engine=xllamacpp`` or ``engine=native`` chooses explicitly.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import os
import secrets
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from ..._util.errors import ConfigError, MissingDependencyError, ModelError
from .._api import ModelAPI, modelapi
from .._engine import NativeEngine, load_native_engine, start_native_server
from .._local_files import LocalModelFile, resolve_local_model
from .._types import ChatMessage, GenerateConfig, ModelOutput
from .openai_compatible import (
    MalformedResponseError,
    chat_request,
    error_message,
    int_option,
    parse_chat_response,
    reject_unknown,
)

_FEATURE = "Local GGUF models"


def available_cpus() -> int:
    """CPU cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def engine_version() -> str:
    """The installed ``xllamacpp`` version; ``MissingDependencyError`` when it is absent."""
    try:
        return importlib.metadata.version("xllamacpp")
    except importlib.metadata.PackageNotFoundError:
        raise MissingDependencyError(_FEATURE, "xllamacpp", "local") from None


@dataclass(frozen=True, kw_only=True)
class ServerSettings:
    """How a llama.cpp server is started, on either engine.

    Each of the ``n_parallel`` slots gets a window of ``n_ctx`` tokens. Port 0 picks a free
    port; ``api_key`` is then required on every request; ``alias`` is the model name served.
    """

    n_ctx: int
    n_parallel: int = 1
    n_threads: int | None = None
    """CPU threads; ``None`` for every core this process may run on."""
    host: str = "127.0.0.1"
    port: int = 0
    api_key: str | None = None
    alias: str | None = None

    @property
    def threads(self) -> int:
        """The CPU threads to run on: ``n_threads``, else every available core."""
        return self.n_threads or available_cpus()


def start_llama_server(path: Path, settings: ServerSettings) -> Any:
    """Load ``path`` into an ``xllamacpp.Server`` that also listens on ``settings``' host and port.

    llama.cpp's own logging is silenced; its errors reach callers as exceptions or error
    responses. With port 0, ``server.listening_address`` tells which port was picked.

    Raises:
        MissingDependencyError: ``xllamacpp`` is not installed.
        ModelError: llama.cpp could not load the file.
    """
    try:
        import xllamacpp as xl
    except ImportError:
        raise MissingDependencyError(_FEATURE, "xllamacpp", "local") from None
    params = xl.CommonParams()
    params.model.path = str(path)
    # llama.cpp divides the context among the slots; scale it so each slot gets n_ctx.
    params.n_ctx = settings.n_ctx * settings.n_parallel
    params.n_parallel = settings.n_parallel
    params.cpuparams.n_threads = settings.threads
    params.cpuparams_batch.n_threads = settings.threads
    params.verbosity = 0
    params.hostnames = [settings.host]
    params.port = settings.port
    if settings.api_key:
        params.api_keys = [settings.api_key]
    if settings.alias:
        params.model_alias = {settings.alias}
    try:
        return xl.Server(params)
    except RuntimeError as exc:
        raise ModelError(f"llama.cpp could not load the model file {path} ({exc})") from None


ENGINES = ("xllamacpp", "native")
"""Values of the ``engine`` option."""


def select_engine(engine: object = None) -> NativeEngine | None:
    """The native build to run, or ``None`` for ``xllamacpp``.

    ``None`` (the default) picks the native build when one verified for this CPU is
    installed and its speed check found it faster than ``xllamacpp``, else ``xllamacpp``;
    ``"native"`` requires the build; ``"xllamacpp"`` never uses it.

    Raises:
        ConfigError: ``engine`` is not one of :data:`ENGINES`, or ``"native"`` with no build here.
    """
    if engine is None:
        native = load_native_engine()
        return native if native is not None and native.measured_faster else None
    if engine not in ENGINES:
        raise ConfigError("engine", f"expected one of {', '.join(ENGINES)}, got {engine!r}")
    if engine == "xllamacpp":
        return None
    native = load_native_engine()
    if native is None:
        raise ConfigError("engine", "no native llama.cpp build for this CPU; build one with: ebmeval engine build")
    return native


def start_server(path: Path, native: NativeEngine | None, settings: ServerSettings) -> Any:
    """Start ``path`` on the native build ``native``, or on ``xllamacpp`` when ``None``.

    Either way the result has ``listening_address`` and ``handle_chat_completions(request)``.

    Raises:
        MissingDependencyError: ``xllamacpp`` is needed and not installed.
        ModelError: llama.cpp could not load the file.
    """
    if native is None:
        return start_llama_server(path, settings)
    try:
        return start_native_server(
            native.binary,
            path,
            n_ctx=settings.n_ctx,
            n_parallel=settings.n_parallel,
            n_threads=settings.threads,
            host=settings.host,
            port=settings.port,
            api_key=settings.api_key,
            alias=settings.alias,
        )
    except RuntimeError as exc:
        raise ModelError(f"the native llama.cpp server could not load the model file {path} ({exc})") from None


def context_window(file: LocalModelFile, n_ctx: object = None) -> int:
    """``n_ctx`` checked against the model's trained length, or the file's default when ``None``."""
    if n_ctx is None:
        return file.default_n_ctx
    window = int_option("n_ctx", n_ctx, minimum=64)
    if file.n_ctx_train is not None and window > file.n_ctx_train:
        raise ConfigError("n_ctx", f"{window} is more than the {file.n_ctx_train} tokens {file.name} was trained on")
    return window


class LlamaCppModel(ModelAPI):
    """A GGUF model served in this process by llama.cpp.

    ``GenerateConfig.timeout`` is not applied: a running local generation cannot be
    interrupted, and it cannot hang on a network.
    """

    def __init__(
        self,
        file: LocalModelFile,
        *,
        n_ctx: int,
        n_parallel: int = 1,
        n_threads: int | None = None,
        native: NativeEngine | None = None,
    ) -> None:
        """Prepare the model; nothing is loaded until the first call.

        Args:
            file: The GGUF file.
            n_ctx: Context window, in tokens, of each request.
            n_parallel: Requests decoded at once (each with its own ``n_ctx`` window).
            n_threads: CPU threads; all available cores by default.
            native: The native build to run it on; ``xllamacpp`` when ``None``.
        """
        self.file = file
        self.name = f"llamacpp/{file.name}"
        self.n_ctx = n_ctx
        self.context_length = n_ctx
        self.max_concurrency = n_parallel
        self.n_threads = n_threads or available_cpus()
        self.native = native
        self._engine = f"xllamacpp {engine_version()}" if native is None else native.provenance()["engine"]
        self._server: Any = None
        self._lock = threading.Lock()
        # xllamacpp always listens on a loopback port (used here for tokenizing); the
        # key keeps other local processes from using it.
        self._api_key = secrets.token_urlsafe(24)
        self._tokenize_client: httpx.Client | None = None

    def describe(self) -> dict[str, Any]:
        """The model's identity: name, file sha256, context window, engine and, above one, slots.

        The window decides how long inputs are cut; the engine (xllamacpp or a native build, and
        its version) runs other kernels, whose floating-point sums may differ. Parallel slots
        decode requests in shared batches, and greedy replies then change with the batching:
        with 2 slots 6 of 8 replies equalled the one-slot replies, with 4 slots 3 of 8, and a
        repeat of the same 4-slot run gave other replies again (``benchmarks/local_engine.py
        slots``). All three can change a reply, so they key the response cache and the run;
        threads do not.
        """
        described = {"name": self.name, "sha256": self.file.sha256, "n_ctx": self.n_ctx, "engine": self._engine}
        if self.max_concurrency > 1:
            described["slots"] = self.max_concurrency
        return described

    def provenance(self) -> dict[str, Any]:
        """How the model is run: the engine (and, for a native build, its flags and CPU) and the settings."""
        settings = {"n_ctx": self.n_ctx, "n_parallel": self.max_concurrency, "n_threads": self.n_threads}
        if self.native is None:
            return {"engine": self._engine, **settings}
        return {**self.native.provenance(), **settings}

    def _loaded(self) -> tuple[Any, httpx.Client]:
        """The running server and a client of its tokenize endpoint, started on first use."""
        with self._lock:
            if self._server is None:
                settings = ServerSettings(
                    n_ctx=self.n_ctx,
                    n_parallel=self.max_concurrency,
                    n_threads=self.n_threads,
                    api_key=self._api_key,
                    alias=self.file.name,
                )
                self._server = start_server(self.file.path, self.native, settings)
                self._tokenize_client = httpx.Client(
                    base_url=self._server.listening_address,
                    headers={"Authorization": f"Bearer {self._api_key}"},
                    timeout=30.0,
                )
            assert self._tokenize_client is not None
            return self._server, self._tokenize_client

    async def generate(self, messages: Sequence[ChatMessage], config: GenerateConfig) -> ModelOutput:
        """Generate a reply (loading the model on the first call).

        Raises:
            ModelError: The request does not fit the context window, or llama.cpp refused it.
        """
        server, _ = await asyncio.to_thread(self._loaded)
        request = chat_request(messages, config, penalty_field="repeat_penalty")
        start = time.monotonic()
        try:
            data = await asyncio.to_thread(server.handle_chat_completions, request)
        except (ValueError, RuntimeError) as exc:
            raise ModelError(f"{self.name}: llama.cpp refused the request: {exc}") from None
        latency = time.monotonic() - start
        if isinstance(data, dict) and "error" in data:
            raise self._refusal(data)
        try:
            return parse_chat_response(data, self.name, latency)
        except MalformedResponseError as exc:
            raise ModelError(f"{self.name}: unexpected response from llama.cpp: {exc}") from None

    def _refusal(self, data: dict[str, Any]) -> ModelError:
        error = data["error"]
        if isinstance(error, dict) and error.get("type") == "exceed_context_size_error":
            trained = f" (the model was trained on {self.file.n_ctx_train} tokens)" if self.file.n_ctx_train else ""
            return ModelError(
                f"{self.name}: the request takes {error.get('n_prompt_tokens')} tokens but the context "
                f"window is {self.n_ctx}; shorten it or set a larger n_ctx{trained}"
            )
        return ModelError(f"{self.name}: llama.cpp refused the request: {error_message(data)}")

    def count_tokens(self, text: str) -> int:
        """Tokens ``text`` takes with this model's tokenizer (loads the model if needed)."""
        _, client = self._loaded()
        try:
            response = client.post("/tokenize", json={"content": text})
            response.raise_for_status()
            return len(response.json()["tokens"])
        except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
            raise ModelError(f"{self.name}: tokenizing failed: {exc}") from None

    async def acount_tokens(self, text: str) -> int:
        """:meth:`count_tokens` on a worker thread, so the event loop keeps serving other calls."""
        return await asyncio.to_thread(self.count_tokens, text)

    async def aclose(self) -> None:
        """Free the weights; a later call loads them again."""
        with self._lock:
            # Calls still running hold their own reference; the server is freed after them.
            self._server = None
            if self._tokenize_client is not None:
                self._tokenize_client.close()
                self._tokenize_client = None


@modelapi("local")
def local(name: str, **options: object) -> ModelAPI:
    """``local`` (the bundled default model), ``local:smollm2`` or ``local:/path/model.gguf``.

    Options: ``n_ctx`` (context window per request; 8192, or the model's trained length if
    shorter), ``n_parallel`` (requests decoded at once, 1), ``n_threads``
    (all available cores), ``engine`` (``xllamacpp`` or ``native``; the native build when
    ``ebmeval engine build`` has made one for this CPU that measured faster, else ``xllamacpp``).
    """
    file = resolve_local_model(name)
    n_ctx = context_window(file, options.pop("n_ctx", None))
    n_parallel = int_option("n_parallel", options.pop("n_parallel", 1), minimum=1)
    threads = options.pop("n_threads", None)
    n_threads = None if threads is None else int_option("n_threads", threads, minimum=1)
    native = select_engine(options.pop("engine", None))
    reject_unknown("local", options, ["n_ctx", "n_parallel", "n_threads", "engine"])
    return LlamaCppModel(file, n_ctx=n_ctx, n_parallel=n_parallel, n_threads=n_threads, native=native)
