"""Websocket pings answered late, as the service does (pongs held back 8-30 s).

The service has been seen answering a client's websocket ping only 8-30 s later; websockets'
default keepalive (a ping every 20 s, 20 s to answer) then closes the socket from the client
side with 1011 "keepalive ping timeout". :func:`hold_pongs` makes one server connection answer
every ping ``delay`` real seconds late, and changes nothing else: messages flow as before.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from typing import Any

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed
from websockets.frames import Frame, Opcode

__all__ = ["hold_pongs"]

Spawn = Callable[[Coroutine[Any, Any, None]], Any]


def hold_pongs(ws: ServerConnection, delay: float, spawn: Spawn) -> None:
    """Answer each ping on ``ws`` after ``delay`` real seconds, in a task made by ``spawn``
    (the connection's own, so it ends with the connection). A pong due after the socket
    closed is not sent."""
    protocol = ws.protocol
    answer_at_once = protocol.recv_frame

    async def pong_later(data: bytes) -> None:
        await asyncio.sleep(delay)
        with contextlib.suppress(ConnectionClosed):
            await ws.pong(data)

    def recv_frame(frame: Frame) -> None:
        if frame.opcode is Opcode.PING:
            spawn(pong_later(bytes(frame.data)))
            return
        answer_at_once(frame)

    protocol.recv_frame = recv_frame  # type: ignore[method-assign]
