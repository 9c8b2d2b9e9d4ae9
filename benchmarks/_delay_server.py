"""An OpenAI-compatible server on 127.0.0.1 that answers every completion after a fixed delay.

It stands in for a model server whose latency is known exactly, so what a client adds
on top of ``delay`` is the client's own cost. ``POST /v1/chat/completions`` and
``POST /v1/completions`` answer one fixed letter; ``GET /v1/models`` lists the model;
``GET /stats`` reports what the server saw (wall-clock ``time.time()`` stamps, so another
process can relate them to its own start); ``POST /reset`` clears those counts.

Run it alone with ``python benchmarks/_delay_server.py --delay 0.2 --port-file PORT``, or
in-process with ``async with DelayServer(0.2) as server: ... server.url``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from types import TracebackType
from typing import Any


@dataclass
class Stats:
    """What the server saw since it started (or since the last reset)."""

    requests: int = 0
    """Completion requests answered."""
    first_arrival: float | None = None
    """``time.time()`` when the first completion request arrived."""
    last_arrival: float | None = None
    """``time.time()`` when the last completion request arrived."""
    last_done: float | None = None
    """``time.time()`` when the last completion answer was written."""
    in_flight: int = 0
    """Completion requests waiting out their delay now."""
    max_in_flight: int = 0
    """The most completion requests in flight at once."""
    connections: int = 0
    """TCP connections accepted."""


class DelayServer:
    """The server, as an async context manager; ``url`` is its root once entered."""

    def __init__(
        self,
        delay: float = 0.0,
        letter: str = "A",
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        reply: Callable[[dict[str, Any]], str] | None = None,
    ) -> None:
        """Configure the server.

        Args:
            delay: Seconds each completion request waits before its answer.
            letter: The text of every answer.
            host: Address to listen on.
            port: Port to listen on; 0 picks a free one.
            reply: Makes the text of each answer from the request body instead of ``letter``.
        """
        self.delay = delay
        self.letter = letter
        self.reply = reply
        self.host = host
        self.port = port
        self.stats = Stats()
        self.url = ""
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    async def __aenter__(self) -> DelayServer:
        self._server = await asyncio.start_server(self._connection, self.host, self.port, backlog=1024)
        self.port = self._server.sockets[0].getsockname()[1]
        self.url = f"http://{self.host}:{self.port}"
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._server is not None:
            self._server.close()
            # Open keep-alive connections would otherwise hold wait_closed() (Python ≥ 3.12.1) or linger.
            for writer in list(self._writers):
                writer.close()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._server.wait_closed(), 2.0)
            self._server = None

    async def serve_forever(self) -> None:
        """Serve until cancelled."""
        assert self._server is not None
        await self._server.serve_forever()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.stats.connections += 1
        self._writers.add(writer)
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except asyncio.IncompleteReadError:
                    break
                method, path, headers = _parse_head(head)
                length = int(headers.get("content-length", "0") or 0)
                body = await reader.readexactly(length) if length else b""
                status, payload = await self._answer(method, path.split("?", 1)[0], body)
                data = json.dumps(payload).encode()
                close = headers.get("connection", "").lower() == "close"
                writer.write(
                    f"HTTP/1.1 {status} {'OK' if status == 200 else 'Error'}\r\n"
                    f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
                    f"Connection: {'close' if close else 'keep-alive'}\r\n\r\n".encode("latin-1")
                    + data
                )
                await writer.drain()
                if path.endswith("/completions"):
                    self.stats.last_done = time.time()
                if close:
                    break
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            pass
        finally:
            self._writers.discard(writer)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _answer(self, method: str, path: str, body: bytes) -> tuple[int, dict[str, Any]]:
        if method == "GET" and path == "/stats":
            return 200, asdict(self.stats)
        if method == "POST" and path == "/reset":
            self.stats = Stats()
            return 200, {"reset": True}
        if method == "GET" and path.endswith("/models"):
            return 200, {"object": "list", "data": [{"id": "delay", "object": "model", "owned_by": "bench"}]}
        if method != "POST" or not path.endswith(("/chat/completions", "/completions")):
            return 404, {"error": {"message": f"no route {method} {path}"}}
        now = time.time()
        stats = self.stats
        stats.requests += 1
        stats.first_arrival = stats.first_arrival or now
        stats.last_arrival = now
        stats.in_flight += 1
        stats.max_in_flight = max(stats.max_in_flight, stats.in_flight)
        try:
            request = json.loads(body or b"{}")
            if self.delay > 0:
                await asyncio.sleep(self.delay)
        except ValueError:
            return 400, {"error": {"message": "the body is not JSON"}}
        finally:
            stats.in_flight -= 1
        model = str(request.get("model", "delay"))
        text = self.letter if self.reply is None else self.reply(request)
        usage = {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}
        common = {"id": f"cmpl-{stats.requests}", "created": int(now), "model": model, "usage": usage}
        if path.endswith("/chat/completions"):
            message = {"role": "assistant", "content": text}
            choice = {"index": 0, "message": message, "finish_reason": "stop", "logprobs": None}
            return 200, {**common, "object": "chat.completion", "choices": [choice]}
        return 200, {
            **common,
            "object": "text_completion",
            "choices": [{"index": 0, "text": text, "finish_reason": "stop", "logprobs": None}],
        }


def _parse_head(head: bytes) -> tuple[str, str, dict[str, str]]:
    first, *lines = head.decode("latin-1").rstrip("\r\n").split("\r\n")
    method, path, _version = first.split(" ", 2)
    headers = {}
    for line in lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return method, path, headers


async def _main(delay: float, letter: str, port: int, port_file: Path | None) -> None:
    async with DelayServer(delay, letter, port=port) as server:
        if port_file is not None:
            # Written whole by rename, so a reader polling for the file never sees it half-written.
            partial = port_file.with_suffix(".partial")
            partial.write_text(str(server.port))
            partial.replace(port_file)
        print(server.url, flush=True)
        await server.serve_forever()


def main() -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before each completion answer")
    parser.add_argument("--letter", default="A", help="the answer text")
    parser.add_argument("--port", type=int, default=0, help="port (0: any free one)")
    parser.add_argument("--port-file", type=Path, help="write the chosen port to this file")
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_main(args.delay, args.letter, args.port, args.port_file))


if __name__ == "__main__":
    main()
