"""A stdlib OpenAI-compatible server on loopback whose replies a test scripts (real HTTP, no mock)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = Callable[[dict[str, Any], dict[str, str]], tuple[int, dict[str, Any]]]
"""(request body, lower-cased headers) → (HTTP status, JSON body) of a chat completion request."""


def completion(text: str) -> tuple[int, dict[str, Any]]:
    """A 200 chat completion answering ``text``."""
    choice = {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}
    return 200, {"choices": [choice], "usage": {"prompt_tokens": 5, "completion_tokens": 2}}


@contextmanager
def chat_server(reply: Reply, models: tuple[str, ...] = ()) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """Serve ``reply`` on 127.0.0.1; yields the base URL (``…/v1``) and the list of requests received.

    ``GET …/models`` lists ``models``; every POST is a chat completion answered by ``reply``.
    """
    received: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
            self._send(200, {"data": [{"id": m} for m in models]})

        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            headers = {k.lower(): v for k, v in self.headers.items()}
            received.append({"path": self.path, "body": body, "headers": headers})
            self._send(*reply(body, headers))

        def _send(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *_args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", received
    finally:
        server.shutdown()
        server.server_close()
