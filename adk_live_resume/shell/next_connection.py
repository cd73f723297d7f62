"""Make-before-break: the next connection opens while the old one serves, the old one closes apart.

On ``goAway`` the live loop opens the next connection (connect and setup with the handle) in a
task of its own while the old connection is still open, switches over once it is ready, and
closes the old one without waiting for its close handshake. Two small pieces hold that:

* :class:`NextConnection`: the opening task and the exit stack that owns what it opened.
  :meth:`NextConnection.take` hands both to the connection that uses it;
  :meth:`NextConnection.discard` cancels the opening or closes what it opened.
* :class:`BackgroundCloser`: closes exit stacks (old connections, discarded openings) in tasks
  of their own, each bounded by ``close_timeout`` and then aborted; :meth:`BackgroundCloser.wait`
  awaits them all at the end of the run, so no task outlives it.

Guarantees: nothing here raises from a close or a discard (a broken socket is aborted, not
reported); every task started here is awaited or cancelled and awaited.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine
from typing import Any

logger = logging.getLogger("adk_live_resume.loop")

#: Opens a connection into the exit stack; ``None`` when there is nobody to talk to any more.
Opener = Callable[[contextlib.AsyncExitStack], Coroutine[Any, Any, Any]]


class NextConnection:
    """A connection being opened ahead of need, with the handle it resumes."""

    def __init__(self, handle: str | None, opener: Opener, *, name: str) -> None:
        self.handle = handle
        self.stack = contextlib.AsyncExitStack()
        self.task: asyncio.Task[Any] = asyncio.get_running_loop().create_task(
            opener(self.stack), name=name
        )

    def opened(self) -> bool:
        """The connection is open and set up (the opening finished without an error)."""
        task = self.task
        return (
            task.done()
            and not task.cancelled()
            and task.exception() is None
            and task.result() is not None
        )

    async def take(self, stack: contextlib.AsyncExitStack) -> Any:
        """Wait for the opening; what it opened is closed with ``stack`` from now on.

        Returns the connection (``None`` if the run was closed meanwhile); raises what the
        opening raised (a connect error, to be classified like any other)."""
        stack.push_async_exit(self.stack)
        return await self.task

    async def discard(self, closer: BackgroundCloser, abort: Callable[[Any], None]) -> None:
        """Give the connection up: cancel the opening, close what it opened (in the
        background, bounded; ``abort(connection)`` if that close fails). Never raises (a
        cancellation of the caller aside)."""
        if not self.task.done():
            self.task.cancel()
        await asyncio.wait({self.task})
        if not self.task.cancelled() and self.task.exception() is not None:
            logger.debug("connection opened ahead failed: %r", self.task.exception())
        connection = self.task.result() if self.opened() else None
        closer.close(self.stack, None if connection is None else lambda: abort(connection))


class BackgroundCloser:
    """Closes exit stacks in the background, each within ``timeout`` seconds."""

    def __init__(self, timeout: float) -> None:
        self._timeout = timeout
        self._tasks: set[asyncio.Task[None]] = set()

    def close(self, stack: contextlib.AsyncExitStack, abort: Callable[[], None] | None) -> None:
        """Start closing ``stack``; ``abort()`` drops its transport at once if the close does
        not finish in time or fails."""
        task = asyncio.get_running_loop().create_task(
            self._close(stack, abort), name="adk_live_resume close"
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def close_one(self, closable: Any, abort: Callable[[], None] | None) -> None:
        """Start ``await closable.close()`` (a socket, a session), bounded as :meth:`close`."""
        stack = contextlib.AsyncExitStack()
        stack.push_async_callback(closable.close)
        self.close(stack, abort)

    async def _close(
        self, stack: contextlib.AsyncExitStack, abort: Callable[[], None] | None
    ) -> None:
        try:
            await asyncio.wait_for(stack.aclose(), self._timeout)
        except Exception as error:  # a silent server, a broken socket: abort it
            logger.debug("closing an old connection: %r; aborting it", error)
            if abort is not None:
                abort()

    async def wait(self) -> None:
        """Await every close started so far (each is bounded); cancel any still running after
        a grace period."""
        while self._tasks:
            tasks = set(self._tasks)
            _, pending = await asyncio.wait(tasks, timeout=self._timeout + 0.5)
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending)
