"""One port for Live and REST: a websockets connection that serves plain HTTP requests itself.

google-genai reaches the Live API with a websocket upgrade (``GET`` with ``Upgrade:
websocket``) and ``generateContent`` with a ``POST`` to the same base URL, so the fake serves
both on its one TLS port. :class:`FrontConnection` is the websockets ``ServerConnection`` the
fake's server builds for every TCP connection (websockets' documented ``create_connection``
hook). It reads the request head first:

* a websocket upgrade goes on to websockets unchanged, bytes and all (the Live fake);
* anything else is an HTTP/1.1 request the connection answers itself through
  :class:`RestService` (:mod:`~adk_live_resume.testing.rest` decides the answer), then closes
  (``Connection: close``; streams use chunked transfer coding, one server-sent event a chunk).

Guarantees: a REST request is never handed to websockets (so it never logs an "opening
handshake failed"), nor is a connection closed before its request head came (one DEBUG
line: a socket a client dialed early and dropped unused is no error); every request is
answered (an error status with a JSON message at worst), and :meth:`RestService.stop` aborts
every REST connection still open.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from websockets.asyncio.server import ServerConnection

from .rest import RestCall, answer_rest, error_body, parse_route, sse_event

__all__ = ["FrontConnection", "RestService"]

logger = logging.getLogger("adk_live_resume.testing")

_MAX_HEAD = 64 * 1024
_MAX_BODY = 32 * 1024 * 1024
_REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    411: "Length Required",
    500: "Internal Server Error",
}


class RestService:
    """The REST side of one fake server: its records and its open REST connections."""

    def __init__(self, chunk_delay: float) -> None:
        self.chunk_delay = chunk_delay
        self.calls: list[RestCall] = []
        self._open: set[FrontConnection] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    def stop(self) -> None:
        """Abort every REST connection still open and cancel its answer."""
        for connection in list(self._open):
            connection.transport.abort()
        for task in list(self._tasks):
            task.cancel()

    def connection_factory(self) -> Callable[..., ServerConnection]:
        """The ``create_connection`` to give websockets' ``serve``."""

        def create(*args: Any, **kwargs: Any) -> ServerConnection:
            return FrontConnection(*args, rest=self, **kwargs)

        return create

    def start(self, connection: FrontConnection, answer: Awaitable[None]) -> None:
        self._open.add(connection)
        task = asyncio.ensure_future(answer)
        self._tasks.add(task)

        def done(finished: asyncio.Task[None]) -> None:
            self._tasks.discard(finished)
            self._open.discard(connection)
            if not finished.cancelled() and finished.exception() is not None:
                logger.error("fake REST answer failed", exc_info=finished.exception())
            connection.transport.close()

        task.add_done_callback(done)


class FrontConnection(ServerConnection):
    """A websockets connection that answers non-websocket HTTP requests itself."""

    def __init__(self, *args: Any, rest: RestService, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._rest = rest
        self._buffer = b""
        self._mode: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._head: tuple[str, str, dict[str, str]] | None = None

    # ---- websockets' side --------------------------------------------------------------------

    async def handshake(self, *args: Any, **kwargs: Any) -> None:
        waiters: list[asyncio.Future[Any]] = [self._mode, self.connection_lost_waiter]
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        if not self._mode.done():
            # Closed before a whole request head came (a socket dialed early and dropped
            # unused): nothing to answer. websockets' handshake would log it as an ERROR
            # with a traceback ("did not receive a valid HTTP request"); one DEBUG line.
            logger.debug(
                "fake server: a connection closed before its request (%d bytes came)",
                len(self._buffer),
            )
            return  # (not open: websockets' handler lets go)
        if self._mode.result() == "rest":
            await self.connection_lost_waiter  # websockets' handler then just lets go
            return
        await super().handshake(*args, **kwargs)

    def data_received(self, data: bytes) -> None:
        if self._mode.done() and self._mode.result() == "websocket":
            super().data_received(data)
            return
        self._buffer += data
        if not self._mode.done():
            self._sniff()
        elif self._head is not None:
            self._body_arrived()

    def eof_received(self) -> None:
        if not (self._mode.done() and self._mode.result() == "rest"):
            super().eof_received()

    # ---- the HTTP side -----------------------------------------------------------------------

    def _sniff(self) -> None:
        end = self._buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(self._buffer) > _MAX_HEAD:
                self._mode.set_result("rest")
                self._refuse("?", "?", 400, "request head too large")
            return
        head = self._buffer[:end].decode("latin-1")
        request_line, *header_lines = head.split("\r\n")
        headers = {}
        for line in header_lines:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        method, _, rest = request_line.partition(" ")
        target = rest.rpartition(" ")[0] or rest
        if method == "GET" and headers.get("upgrade", "").lower() == "websocket":
            self._mode.set_result("websocket")
            buffered, self._buffer = self._buffer, b""
            super().data_received(buffered)
            return
        self._mode.set_result("rest")
        self._buffer = self._buffer[end + 4 :]
        self._head = (method, target, headers)
        self._body_arrived()

    def _body_arrived(self) -> None:
        assert self._head is not None
        method, target, headers = self._head
        if "chunked" in headers.get("transfer-encoding", "").lower():
            self._head = None
            message = "the fake server reads request bodies with a Content-Length only"
            self._refuse(method, target, 411, message)
            return
        length = int(headers.get("content-length", "0") or 0)
        if length > _MAX_BODY:
            self._head = None
            self._refuse(method, target, 400, "request body too large")
            return
        if len(self._buffer) < length:
            return
        body, self._buffer, self._head = self._buffer[:length], b"", None
        self._rest.start(self, self._serve(method, target, body))

    async def _serve(self, method: str, target: str, raw: bytes) -> None:
        route = parse_route(target)
        call = RestCall(http_method=method, path=target.partition("?")[0], route=route, body=None)
        self._rest.calls.append(call)
        if route is None:
            call.failed(
                404,
                (
                    f"the fake serves POST .../models/MODEL:generateContent and "
                    f":streamGenerateContent (Gemini API or Vertex AI paths), not {method} {target}"
                ),
            )
        elif method != "POST":
            call.failed(404, f"{route.method} takes POST, not {method}")
        else:
            try:
                body = json.loads(raw or b"{}")
            except ValueError as error:
                body = None
                call.failed(400, f"the request body is not JSON: {error}")
            else:
                if not isinstance(body, dict):
                    call.failed(400, "the request body must be a JSON object")
                else:
                    call.read(body)
        if call.status:
            await self._reply_error(call.status, call.error)
            return
        try:
            bodies = answer_rest(call)
        except Exception as error:  # a bug in the fake: say so to the client, never hang up
            logger.exception("fake REST answer failed")
            call.failed(500, f"the fake server failed: {error!r}")
            await self._reply_error(call.status, call.error)
            return
        assert route is not None
        if not route.stream:
            self._write_response(200, "application/json", json.dumps(bodies[0]).encode())
            return
        if not route.sse:  # without alt=sse the stream is one JSON array
            self._write_response(200, "application/json", json.dumps(bodies).encode())
            return
        self._write_head(200, "text/event-stream", chunked=True)
        for index, body_chunk in enumerate(bodies):
            if index and self._rest.chunk_delay:
                await asyncio.sleep(self._rest.chunk_delay)
            if self.transport.is_closing():
                return
            event = sse_event(body_chunk)
            self.transport.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
        self.transport.write(b"0\r\n\r\n")

    def _refuse(self, method: str, target: str, status: int, message: str) -> None:
        """Record a request refused before its body was read, and answer it."""
        path = target.partition("?")[0]
        call = RestCall(method, path, parse_route(target), None, status=status, error=message)
        self._rest.calls.append(call)
        self._rest.start(self, self._reply_error(status, message))

    async def _reply_error(self, status: int, message: str) -> None:
        logger.warning("fake REST request refused with %d: %s", status, message)
        self._write_response(
            status, "application/json", json.dumps(error_body(status, message)).encode()
        )

    def _write_head(
        self, status: int, content_type: str, *, chunked: bool = False, length: int = 0
    ) -> None:
        lines = [
            f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}",
            f"Content-Type: {content_type}",
            "Connection: close",
            "Transfer-Encoding: chunked" if chunked else f"Content-Length: {length}",
        ]
        self.transport.write(("\r\n".join(lines) + "\r\n\r\n").encode())

    def _write_response(self, status: int, content_type: str, payload: bytes) -> None:
        self._write_head(status, content_type, length=len(payload))
        self.transport.write(payload)
