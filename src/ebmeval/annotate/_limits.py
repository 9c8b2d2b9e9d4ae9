"""The request body limit, enforced on the bytes actually received (with or without ``Content-Length``)."""

from __future__ import annotations

from fastapi import HTTPException
from fastapi.responses import JSONResponse
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

TOO_LARGE = "Request body too large."


class BodyLimit:
    """ASGI middleware: a body over ``limit`` bytes is answered 413 before the app parses any of it.

    A declared ``Content-Length`` over the limit is refused before a byte is read. Otherwise the
    bytes are counted as the app receives them, so a chunked body stops being read (and buffered)
    at the first chunk that crosses the limit: the app sees :class:`HTTPException` 413 from
    ``receive``, whatever reads the body (JSON, form or the raw stream).
    """

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = Headers(scope=scope).get("content-length")
        if length is not None and (not length.isdigit() or int(length) > self.limit):
            await JSONResponse({"detail": TOO_LARGE}, status_code=413)(scope, receive, send)
            return
        received = 0

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    raise HTTPException(413, TOO_LARGE)
            return message

        await self.app(scope, counted, send)
