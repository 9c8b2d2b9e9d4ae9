"""A real OpenAI-compatible chat server on 127.0.0.1 whose replies a test scripts, logging every request body."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@contextmanager
def openai_server(reply: Callable[[dict[str, Any]], str]) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """Serve ``/chat/completions`` with ``reply(body)`` as the message; yields the base URL and the bodies seen.

    Other paths (token counting and the like) answer 404, as a server that does not offer them.
    """
    bodies: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802  (http.server's name)
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if not self.path.endswith("/chat/completions"):
                self.send_error(404)
                return
            bodies.append(body)
            text = reply(body)
            answer = {
                "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            }
            data = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", bodies
    finally:
        httpd.shutdown()
        httpd.server_close()


def without_preflight(bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The request bodies a run's samples sent: the pre-flight request before its first sample left out."""
    from ebmeval.models.providers.openai_compatible import PREFLIGHT_PROMPT

    preflight = [{"role": "user", "content": PREFLIGHT_PROMPT}]
    return [body for body in bodies if body.get("messages") != preflight]
