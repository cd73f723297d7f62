"""The nudge a silent session gets once per connection before its stall is recovered.

With ``ResumePolicy.stall_nudge`` on, a silence seen on a connection first sends
:data:`~.stall_rule.NUDGE` as realtime text on that connection's own session
(never recorded for replay: no later connection is sent it), as a field workaround does
(cookbook issue 1228: a nudge after 4 s, then a dead-call watchdog); the stall watch then
waits for its answer as for a user turn.

Guarantees: at most one nudge per connection; a nudge whose send fails (a broken socket)
or takes longer than ``close_timeout`` recovers the stall at once, as without a nudge; the
task is cancelled and awaited by :meth:`StallNudge.stop`, so it never outlives its
connection.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from .stall_rule import NUDGE, Stall


class StallNudge:
    """One connection's nudge: sent at most once, stopped with the connection."""

    def __init__(self, number: int, close_timeout: float) -> None:
        self.number = number
        self.close_timeout = close_timeout
        self._task: asyncio.Task[None] | None = None

    @property
    def sent(self) -> bool:
        """A nudge was started on this connection (it is never sent twice)."""
        return self._task is not None

    def send(
        self,
        session: Any,
        stall: Stall,
        *,
        answered: Callable[[], None],
        failed: Callable[[Stall], None],
    ) -> None:
        """Nudge ``session`` about ``stall``: ``answered()`` once the nudge went out (wait for
        its answer), ``failed(stall)`` if it could not be sent (recover now)."""
        assert self._task is None, "a connection is nudged once"

        async def nudge() -> None:
            try:
                await asyncio.wait_for(session.send_realtime_input(text=NUDGE), self.close_timeout)
            except Exception:  # a broken socket: the stall is recovered as without a nudge
                failed(stall)
                return
            answered()

        self._task = asyncio.get_running_loop().create_task(
            nudge(), name=f"adk_live_resume nudge #{self.number}"
        )

    async def stop(self) -> None:
        """Cancel a nudge still being sent, and wait for it."""
        task = self._task
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait({task})
