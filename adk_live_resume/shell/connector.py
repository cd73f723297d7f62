"""Opening a run's next connection: ahead of time, paced, on a socket dialed early.

:class:`Connector` holds what one run has on the way to its next connection: the connection
being opened ahead (:class:`~.next_connection.NextConnection`), the socket
dialed early (:mod:`adk_live_resume.shell.early_dial`) and the closer of connections left behind.
The run decides *whether* to open ahead (it knows the handle and the session); this module
only opens, paces and discards.

Guarantees:

* Every connection attempt takes its turn at the process's pacer (:mod:`.pacing`) first,
  unless a socket dialed early (which took its turn) serves it; closing the run's queue
  gives the turn up.
* A connect is bounded by ``connect_timeout``; closing the ``LiveRequestQueue`` while it is
  under way ends the attempt at once (nobody would talk on it).
* Open ahead: on goAway the next connection (connect and setup with the last good
  handle) is opened while the old one is still open; a connection opened ahead and not used
  is discarded (closed in the background, bounded by ``close_timeout``), and every task
  started here is awaited at the run's end (:meth:`Connector.discard_ahead`,
  ``closer.wait()``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from ..compat import adk_compat, genai_compat, hooks
from ..rules.policy import ResumePolicy
from . import early_dial, pacing
from .next_connection import BackgroundCloser, NextConnection
from .queue_guard import QueueGuard

logger = logging.getLogger("adk_live_resume.loop")


class Connector:
    """One run's way to its next connection: opened ahead, paced, dialed early."""

    def __init__(
        self,
        policy: ResumePolicy,
        llm: Any,
        available: hooks.Hooks,
        *,
        guard: Callable[[], QueueGuard | None],
    ) -> None:
        self.policy = policy
        self.llm = llm
        #: The run's queue guard, once the run has one.
        self._guard = guard
        #: The next connection, opened ahead on goAway.
        self.opening: NextConnection | None = None
        #: Closes retired connections and discarded openings in the background.
        self.closer = BackgroundCloser(policy.close_timeout)
        #: Opens the next connection's socket ahead: on a goAway that waits for its safe
        #: point, and on a server's close frame.
        self.dialer: early_dial.EarlyDialer | None = (
            early_dial.EarlyDialer(close=self._close_unused_socket)
            if policy.early_dial and available.on(hooks.EARLY_DIAL) and early_dial.hook()
            else None
        )

    def dial_early(self, *, latest: float | None) -> None:
        """Start opening the next connection's socket now (a goAway that must wait for its
        safe point, a server's close frame), after its turn at the process's pacer; the next
        connect of this run uses it."""
        if self.dialer is not None:
            self.dialer.dial(lambda: self._pacer_turn(latest))

    async def take_turn(self, *, latest: float | None) -> bool:
        """Wait for the pacer's go-ahead for a connection attempt, unless a socket opened ahead
        (which took its turn) will serve it; ``False`` if the run was closed first."""
        if self.dialer is not None and self.dialer.holds_turn():
            return True
        return await self._pacer_turn(latest)

    async def _pacer_turn(self, latest: float | None) -> bool:
        """This run's turn at the process's pacer (given up when the run is closed)."""
        guard = self._guard()
        on_close = guard.on_close if guard is not None else None
        return await pacing.take_turn(self.policy, latest=latest, on_close=on_close)

    def _close_unused_socket(self, websocket: Any) -> None:
        transport = getattr(websocket, "transport", None)
        self.closer.close_one(websocket, transport.abort if transport is not None else None)

    def open_next(self, number: int, handle: str, request: Any, *, latest: float | None) -> None:
        """Start opening connection ``number`` with ``request`` (resuming ``handle``); it
        takes its turn at the process's pacer first (``latest``: the turn's deadline)."""

        async def opener(stack: contextlib.AsyncExitStack) -> Any:
            if not await self.take_turn(latest=latest):
                return None
            return await self.connect(stack, request)

        logger.debug("opening connection %d ahead", number)
        self.opening = NextConnection(handle, opener, name=f"adk_live_resume open #{number}")

    def take_opening(self) -> NextConnection | None:
        """The connection opened ahead, for the connection about to be served (it is no
        longer this connector's to discard)."""
        opening, self.opening = self.opening, None
        return opening

    def forget_failed_opening(self) -> None:
        """The connection opened ahead failed and the old one serves on: nothing of the
        opening serves; what it opened is closed in the background."""
        opening, self.opening = self.opening, None
        if opening is not None:
            self.closer.close(opening.stack, None)

    async def discard_opening(self) -> None:
        opening, self.opening = self.opening, None
        if opening is not None:
            await opening.discard(self.closer, abort_connection)

    async def discard_ahead(self) -> None:
        """Nothing opened ahead serves this run any more (its end, a transfer, a rerun)."""
        await self.discard_opening()
        if self.dialer is not None:
            await self.dialer.discard()

    async def connect(self, stack: contextlib.AsyncExitStack, request: Any) -> Any:
        """Open a connection (bounded by ``connect_timeout``); ``None`` if the queue closed.

        Closing the ``LiveRequestQueue`` while a connection is being opened ends the attempt
        at once: nobody would talk on it.
        """
        guard = self._guard()
        closed = False
        try:
            async with asyncio.timeout(self.policy.connect_timeout) as deadline:

                def on_close() -> None:
                    nonlocal closed
                    closed = True
                    deadline.reschedule(asyncio.get_running_loop().time())

                remove = guard.on_close(on_close) if guard is not None else None
                dialing = early_dial.dialing_for(self.dialer)  # google-genai's socket, if ready
                try:
                    return await stack.enter_async_context(self.llm.connect(request))
                finally:
                    early_dial.stop_dialing(dialing)
                    if remove is not None:
                        remove()
        except TimeoutError:  # (raised as the timeout's block exits)
            if closed:
                return None
            raise


def abort_connection(connection: Any) -> None:
    genai_compat.abort_transport(adk_compat.genai_session(connection))
