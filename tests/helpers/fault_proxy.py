"""A loopback HTTP/1.1 proxy that injects faults in front of a real server.

Each incoming request takes the next scripted :class:`Fault` (or asks a function for
one); once the script runs out, requests pass through. The proxy counts the requests it
saw and how many were in flight at once, refuses more than ``max_requests``, and stops
by itself after ``lifetime`` seconds so a stuck test cannot keep it alive.

Example::

    async with FaultProxy(upstream, [Fault.status(503), Fault.hang()]) as proxy:
        model = OpenAICompatibleModel("m", proxy.url + "/v1", timeout=1)
        ...
        assert proxy.requests_seen == 3
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Literal
from urllib.parse import urlsplit

FaultKind = Literal["pass", "status", "hang", "truncate", "non_json", "trickle", "drop"]


@dataclass(frozen=True)
class Fault:
    """What the proxy does with one request."""

    kind: FaultKind = "pass"
    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    delay: float = 0.0

    @classmethod
    def passthrough(cls) -> Fault:
        """Forward the request and its answer unchanged."""
        return cls()

    @classmethod
    def status_code(cls, status: int, *, retry_after: str | None = None, message: str = "injected") -> Fault:
        """Answer ``status`` with an OpenAI-style JSON error body (and ``Retry-After``)."""
        headers = (("Retry-After", retry_after),) if retry_after is not None else ()
        body = json.dumps({"error": {"code": status, "message": message}}).encode()
        return cls("status", status=status, headers=headers, body=body)

    @classmethod
    def hang(cls) -> Fault:
        """Never answer; the connection stays open until the client gives up."""
        return cls("hang")

    @classmethod
    def truncate(cls) -> Fault:
        """Forward, but send only half of the body (under the full Content-Length), then close."""
        return cls("truncate")

    @classmethod
    def non_json(cls) -> Fault:
        """Answer 200 with an HTML body instead of JSON."""
        return cls("non_json", body=b"<html><body>502 Bad Gateway</body></html>")

    @classmethod
    def trickle(cls, delay: float = 0.05) -> Fault:
        """Forward, sending the body 16 bytes at a time with ``delay`` seconds between pieces."""
        return cls("trickle", delay=delay)

    @classmethod
    def drop(cls) -> Fault:
        """Close the connection without answering."""
        return cls("drop")


@dataclass
class Seen:
    """One request the proxy received."""

    index: int
    """Arrival order, from 0."""
    method: str
    path: str
    body: bytes
    fault: FaultKind = "pass"
    """What the proxy did with it."""
    finished: bool = False
    """Whether a complete answer went back."""


@dataclass
class _Response:
    status_line: bytes
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""


class FaultProxy:
    """A scriptable fault-injecting HTTP proxy on 127.0.0.1, used as an async context manager."""

    def __init__(
        self,
        upstream: str,
        faults: Iterable[Fault] | Callable[[Seen], Fault] = (),
        *,
        max_requests: int = 200,
        lifetime: float = 120.0,
    ) -> None:
        """Create the proxy; it listens once entered.

        Args:
            upstream: The real server's root, e.g. ``http://127.0.0.1:8080`` (a path is ignored).
            faults: Faults for successive requests, or a function choosing one for each request.
            max_requests: Requests after this many get a 503 without reaching upstream.
            lifetime: Seconds after which the proxy closes every connection and stops.
        """
        target = urlsplit(upstream)
        if target.hostname is None or target.port is None:
            raise ValueError(f"upstream needs a host and port: {upstream!r}")
        self.upstream_host: str = target.hostname
        self.upstream_port: int = target.port
        self._script = faults if callable(faults) else None
        self._queue = [] if callable(faults) else list(faults)
        self.max_requests = max_requests
        self.lifetime = lifetime
        self.seen: list[Seen] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.url = ""
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._deadline: asyncio.TimerHandle | None = None
        self._auto_stop: asyncio.Future[None] | None = None
        self._stopped = asyncio.Event()

    @property
    def requests_seen(self) -> int:
        """How many requests arrived."""
        return len(self.seen)

    def script(self, *faults: Fault) -> None:
        """Append faults for the next requests."""
        self._queue.extend(faults)

    async def __aenter__(self) -> FaultProxy:
        self._server = await asyncio.start_server(self._connection, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        self._deadline = asyncio.get_running_loop().call_later(self.lifetime, self._stop_soon)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    def _stop_soon(self) -> None:
        self._auto_stop = asyncio.ensure_future(self.stop())

    async def stop(self) -> None:
        """Stop listening and close every open connection."""
        self._stopped.set()
        if self._deadline is not None:
            self._deadline.cancel()
        if self._server is not None:
            self._server.close()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None

    def _next_fault(self, seen: Seen) -> Fault:
        if seen.index >= self.max_requests:
            return Fault.status_code(503, message="fault proxy: request budget exhausted")
        if self._script is not None:
            return self._script(seen)
        return self._queue.pop(0) if self._queue else Fault()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            while not self._stopped.is_set():
                request = await _read_request(reader)
                if request is None:
                    break
                method, path, headers, body = request
                if not await self._answer(method, path, headers, body, reader, writer):
                    break
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        except asyncio.CancelledError:
            # Cancelled by stop(). Ending normally keeps asyncio's stream callback from
            # logging the cancellation as an error.
            pass
        finally:
            self._tasks.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _answer(
        self,
        method: str,
        path: str,
        headers: list[tuple[str, str]],
        body: bytes,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> bool:
        """Handle one request; returns whether the connection stays open."""
        seen = Seen(len(self.seen), method, path, body)
        fault = self._next_fault(seen)
        seen.fault = fault.kind
        self.seen.append(seen)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if fault.kind == "drop":
                return False
            if fault.kind == "hang":
                # Returns when the client closes the connection (or the proxy stops).
                await reader.read()
                return False
            if fault.kind in ("status", "non_json"):
                status_line = f"HTTP/1.1 {fault.status} {'OK' if fault.status == 200 else 'Error'}".encode()
                content_type = "application/json" if fault.kind == "status" else "text/html"
                reply = _Response(status_line, [("Content-Type", content_type), *fault.headers], fault.body)
                await _write_response(writer, reply)
                seen.finished = True
                await writer.drain()
                return True
            reply = await self._forward(method, path, headers, body)
            if fault.kind == "truncate":
                await _write_response(writer, reply, send=len(reply.body) // 2)
                await writer.drain()
                return False
            await _write_response(writer, reply, trickle=fault.delay if fault.kind == "trickle" else 0.0)
            seen.finished = True
            await writer.drain()
            return True
        finally:
            self.in_flight -= 1

    async def _forward(self, method: str, path: str, headers: list[tuple[str, str]], body: bytes) -> _Response:
        up_reader, up_writer = await asyncio.open_connection(self.upstream_host, self.upstream_port)
        try:
            kept = [(k, v) for k, v in headers if k.lower() not in ("host", "connection", "content-length")]
            lines = [f"{method} {path} HTTP/1.1", f"Host: {self.upstream_host}:{self.upstream_port}"]
            lines += [f"{k}: {v}" for k, v in kept]
            lines += [f"Content-Length: {len(body)}", "Connection: close"]
            up_writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
            await up_writer.drain()
            head = await up_reader.readuntil(b"\r\n\r\n")
            status_line, reply_headers = _parse_head(head)
            if _header(reply_headers, "transfer-encoding").lower() == "chunked":
                reply_body = await _read_chunked(up_reader)
            elif length := _header(reply_headers, "content-length"):
                reply_body = await up_reader.readexactly(int(length))
            else:
                reply_body = await up_reader.read()
            dropped = ("connection", "content-length", "transfer-encoding", "keep-alive")
            return _Response(status_line, [(k, v) for k, v in reply_headers if k.lower() not in dropped], reply_body)
        finally:
            up_writer.close()
            with contextlib.suppress(Exception):
                await up_writer.wait_closed()


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, str, list[tuple[str, str]], bytes] | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None
    request_line, headers = _parse_head(head)
    method, path, _version = request_line.decode("latin-1").split(" ", 2)
    length = int(_header(headers, "content-length") or 0)
    body = await reader.readexactly(length) if length else b""
    return method, path, headers, body


def _parse_head(head: bytes) -> tuple[bytes, list[tuple[str, str]]]:
    first, *rest = head.rstrip(b"\r\n").split(b"\r\n")
    headers = []
    for line in rest:
        name, _, value = line.decode("latin-1").partition(":")
        headers.append((name.strip(), value.strip()))
    return first, headers


def _header(headers: list[tuple[str, str]], name: str) -> str:
    return next((v for k, v in headers if k.lower() == name), "")


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    body = bytearray()
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";")[0].strip(), 16)
        if size == 0:
            await reader.readuntil(b"\r\n")
            return bytes(body)
        body += await reader.readexactly(size)
        await reader.readexactly(2)


async def _write_response(
    writer: asyncio.StreamWriter, reply: _Response, *, send: int | None = None, trickle: float = 0.0
) -> None:
    """Write a response; returns as soon as the last byte is handed to the transport.

    Returning before the final drain lets the caller mark the answer finished before a
    client that already has it can stop the proxy.
    """
    lines = [reply.status_line.decode("latin-1"), *(f"{k}: {v}" for k, v in reply.headers)]
    lines += [f"Content-Length: {len(reply.body)}", "Connection: keep-alive"]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
    body = reply.body if send is None else reply.body[:send]
    if trickle <= 0:
        writer.write(body)
        return
    for start in range(0, len(body), 16):
        await writer.drain()
        if start:
            await asyncio.sleep(trickle)
        writer.write(body[start : start + 16])
