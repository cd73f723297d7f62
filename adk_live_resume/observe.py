"""How users see reconnects: a callback registry and one INFO log line per reconnect.

Register with :func:`on_reconnect`; every completed reconnect of any patched live run calls
each callback with a :class:`ReconnectInfo`. A callback that raises is logged and ignored: it
never breaks the conversation.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

logger = logging.getLogger("adk_live_resume")

ReconnectReason = Literal["drop", "go_away", "restart"]


@dataclass(frozen=True)
class ReconnectInfo:
    """One completed reconnect of a live run."""

    #: ``"drop"`` (the socket was lost), ``"go_away"`` (planned, after the server's goAway),
    #: or ``"restart"`` (a fresh session had to be started without the old state).
    reason: ReconnectReason
    #: Connection attempts this outage took (1 = the first try worked).
    attempt: int
    #: Milliseconds from losing the old connection to the new one being ready.
    gap_ms: float
    #: Whether the server restored the session from a handle (``False``: fresh session).
    state_restored: bool
    #: How the old connection ended, e.g. ``"1011 Deadline expired"``.
    cause: str
    agent_name: str
    invocation_id: str
    session_id: str
    #: Connections this run has opened so far, the new one included.
    connection_number: int
    #: Client messages sent again on the new connection (user turns, audio, tool responses).
    replayed_messages: int = 0
    #: User audio (ms) too old for the replay window, so not replayed.
    dropped_audio_ms: float = 0.0


ReconnectCallback = Callable[[ReconnectInfo], None]

_lock = threading.Lock()
_callbacks: list[ReconnectCallback] = []


def on_reconnect(callback: ReconnectCallback) -> Callable[[], None]:
    """Call ``callback`` after every reconnect; return a function that unregisters it."""
    with _lock:
        _callbacks.append(callback)

    def remove() -> None:
        with _lock:
            if callback in _callbacks:
                _callbacks.remove(callback)

    return remove


def report(info: ReconnectInfo) -> None:
    """Log ``info`` at INFO on ``adk_live_resume`` and call the registered callbacks."""
    logger.info(
        "live session %s reconnected: reason=%s attempt=%d gap=%.0fms state_restored=%s "
        "cause=%r agent=%s connection=%d replayed=%d dropped_audio=%.0fms",
        info.session_id,
        info.reason,
        info.attempt,
        info.gap_ms,
        info.state_restored,
        info.cause,
        info.agent_name,
        info.connection_number,
        info.replayed_messages,
        info.dropped_audio_ms,
    )
    with _lock:
        callbacks = list(_callbacks)
    for callback in callbacks:
        try:
            callback(info)
        except Exception:
            logger.exception("on_reconnect callback %r failed; ignored", callback)
