"""The wire of one fake-server connection: its sends, its end, and every task it runs.

:class:`ConnectionWire` is the only part of a
:class:`~adk_live_resume.testing.connection.LiveConnection` that touches the websocket; the
other parts (setup, session, handle issuing, clocks, generation, turn taking) send and end
through it.

Guarantees:

* the messages of one :meth:`ConnectionWire.send` call go out back to back (nothing of this
  connection goes in between); each is in ``record.server_messages`` once handed to the
  socket, and taken back out when the closed socket refused it; a send on an ending
  connection raises :class:`_ConnectionEnded`;
* :meth:`ConnectionWire.terminate`: the first call wins; every other task of the connection is
  cancelled; the close codes that may not travel in a frame (1005, 1006, 1015) drop TCP;
* every task started by :meth:`ConnectionWire.spawn` is cancelled and awaited by
  :meth:`ConnectionWire.finish`, and the record is final (``record.finished``) from then on;
* a close this side began is not held up by what the client still sends: once the handler
  stopped reading, :meth:`ConnectionWire.finish` reads (and drops) the client's messages
  until the close handshake is over. An endpoint that sent its close frame goes on reading
  until the peer's (RFC 6455, section 5.5.1); with the client's messages left unread,
  websockets stops reading the socket (its flow control, past 16 frames), the client's close
  frame behind them is never seen, and the close waits out websockets' ``close_timeout``
  (10 s) before the TCP connection is dropped, the client noticing the close only then (a
  microphone streams 50 frames a second).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Coroutine
from typing import Any

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from . import protocol as wire
from .keepalive import hold_pongs
from .protocol import JsonDict
from .records import ConnectionRecord, EndedBy

__all__ = ["ConnectionWire"]

logger = logging.getLogger("adk_live_resume.testing")

_UNSENDABLE_CODES = frozenset({1005, 1006, 1015})


class _ConnectionEnded(Exception):
    """Raised inside a connection task once the connection is ending (never leaves the fake:
    the connection's tasks and its message loop stop on it)."""


class ConnectionWire:
    """Sends, ends and runs the tasks of one websocket connection (see the module docstring)."""

    def __init__(self, ws: ServerConnection, record: ConnectionRecord) -> None:
        self._ws = ws
        self.record = record
        self._loop = asyncio.get_running_loop()
        self._tasks: set[asyncio.Task[None]] = set()
        self._send_lock = asyncio.Lock()
        self._closer: asyncio.Task[None] | None = None

    def request_path(self) -> str:
        """The path of the websocket request ("" when unknown)."""
        request = self._ws.request
        return request.path if request is not None else ""

    async def receive(self) -> str | bytes:
        """The next message from the client (``ConnectionClosed`` once it closed)."""
        return await self._ws.recv()

    def messages(self) -> AsyncIterator[str | bytes]:
        """The client's messages until it closes (the socket's own iterator)."""
        return aiter(self._ws)

    def hold_pongs(self, delay: float) -> None:
        """Answer every ping ``delay`` real seconds late from now on
        (:func:`~adk_live_resume.testing.keepalive.hold_pongs`)."""
        hold_pongs(self._ws, delay, self.spawn)

    def now(self) -> float:
        """The event loop's time (real seconds)."""
        return self._loop.time()

    def future(self) -> asyncio.Future[Any]:
        """A new future of this connection's loop."""
        return self._loop.create_future()

    @property
    def vertex(self) -> bool:
        """True when the client speaks the Vertex AI dialect (its websocket path)."""
        return "aiplatform" in self.record.path

    @property
    def ending(self) -> bool:
        """True once the connection has been ended by anyone."""
        return self.record.ended_by is not None

    # ---- tasks -----------------------------------------------------------------------------

    def spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """Run ``coro`` in a task of this connection: cancelled by :meth:`terminate` (unless it
        is the caller), awaited by :meth:`finish`; an error in it is logged and recorded."""
        task = self._loop.create_task(self._guard(coro))
        task.add_done_callback(lambda _: coro.close())  # a task cancelled before it ran
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _guard(self, coro: Coroutine[Any, Any, None]) -> None:
        try:
            await coro
        except (_ConnectionEnded, ConnectionClosed):
            pass
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            logger.exception("fake live server: task of connection %d failed", self.record.index)
            self.record.errors.append(repr(exc))

    # ---- ending ----------------------------------------------------------------------------

    def terminate(
        self, ended_by: EndedBy, *, code: int = 1000, reason: str = "", abort: bool = False
    ) -> None:
        """End the connection now: with a close frame, or by dropping TCP when ``abort``.

        The first call wins; later calls do nothing. Safe to call from any task of this
        connection, including the one that will then stop at its next send. The codes 1005,
        1006 and 1015 may not travel in a close frame, so they drop TCP as ``abort`` does (the
        client then sees 1006).
        """
        if self.ending:
            return
        abort = abort or code in _UNSENDABLE_CODES
        if abort:
            self.record.ended(ended_by, self._loop.time(), code=1006, reason="")
        else:
            self.record.ended(ended_by, self._loop.time(), code=code, reason=reason)
        logger.info(
            "fake live server: connection %d ended by %s (%s)",
            self.record.index,
            ended_by,
            "abort" if abort else code,
        )
        current = asyncio.current_task()
        for task in list(self._tasks):
            if task is not current and not task.done():
                task.cancel()
        if abort:
            self._abort()
        else:
            self._closer = self._loop.create_task(self._close(code, reason))

    def _abort(self) -> None:
        transport = self._ws.transport
        if transport is not None:
            transport.abort()

    async def _close(self, code: int, reason: str) -> None:
        try:
            await self._ws.close(code, reason)
        except Exception:  # never leave the handler hanging: drop the connection instead
            logger.exception("fake live server: close(%d) failed; aborting", code)
            self._abort()

    async def finish(self) -> None:
        """The handler is returning: record a close by the client (if nobody ended the
        connection), cancel and await every task, and mark the record final."""
        if not self.ending:
            code = self._ws.close_code
            self.record.ended(
                "client",
                self._loop.time(),
                code=1006 if code is None else code,
                reason=self._ws.close_reason or "",
            )
            logger.info(
                "fake live server: connection %d closed by the client (%s)",
                self.record.index,
                self.record.close_code,
            )
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)
        if self._closer is not None:
            draining = self._loop.create_task(self._drain())
            try:
                await asyncio.wait([self._closer])
            finally:
                draining.cancel()
                await asyncio.wait([draining])

    async def _drain(self) -> None:
        """Read and drop the client's messages until the socket closes (see the module)."""
        try:
            async for _ in self._ws:
                pass
        except ConnectionClosed:
            pass

    def mark_finished(self) -> None:
        """The record is final from now on."""
        self.record.finish()

    # ---- sending ---------------------------------------------------------------------------

    async def send(self, *messages: JsonDict) -> None:
        """Send ``messages`` back to back (nothing of this connection goes in between)."""
        if self.ending:
            raise _ConnectionEnded
        async with self._send_lock:
            for message in messages:
                if self.ending:
                    raise _ConnectionEnded
                handed_at = self._loop.time()
                self.record.sending(message, handed_at)
                try:
                    await self._ws.send(wire.dumps(message))
                except ConnectionClosed:
                    self.record.not_sent()
                    raise _ConnectionEnded from None
                self.record.sent_at(handed_at)
