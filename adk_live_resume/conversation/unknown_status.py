"""An ``interactionStatus`` of a kind this release does not know: a move held one answer's time.

:class:`~.model_work.ModelWork` reads such a status as finished, and holds a
goAway move (:attr:`ModelWork.holds_move`) until :meth:`ModelWork.unknown_expired` is called:
:class:`UnknownStatusHold` calls it one answer's time (``stall_timeout``, or 15 s where that is
off) after each ``turnComplete`` that carried such a status, and then asks the connection to
judge its safe point again; it logs each unknown kind once per process (WARNING).

Guarantees: at most one timer runs (a new ``turnComplete`` replaces it), and
:meth:`UnknownStatusHold.stop` leaves none.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from .model_work import ModelWork

logger = logging.getLogger("adk_live_resume.loop")

#: ``interactionStatus`` values of an unknown kind already logged (once per process each).
_LOGGED: set[str] = set()
#: Seconds an unknown status holds the model's turn where ``stall_timeout`` is off: the
#: policy's default time for one answer.
ONE_ANSWER = 15.0


class UnknownStatusHold:
    """One connection's hold of a move after a ``turnComplete`` of an unknown status."""

    def __init__(self, work: ModelWork, stall_timeout: float, expired: Callable[[], None]) -> None:
        self._work = work
        self._hold = stall_timeout or ONE_ANSWER
        self._expired = expired
        self._timer: asyncio.TimerHandle | None = None

    def turn_complete(self) -> None:
        """A ``turnComplete`` was read (:meth:`ModelWork.turn_complete` first): an unknown
        status it carried holds a move for one answer's time at most."""
        self.stop()
        unknown = self._work.unknown
        if unknown is None:
            return
        if unknown not in _LOGGED:
            _LOGGED.add(unknown)
            logger.warning(
                "unknown interactionStatus %r with turnComplete: read as finished; a goAway"
                " move waits at most %.0f s for it",
                unknown[:40],
                self._hold,
            )
        self._timer = asyncio.get_running_loop().call_later(self._hold, self._end)

    def _end(self) -> None:
        self._timer = None
        if self._work.unknown_expired():
            self._expired()

    def stop(self) -> None:
        """No timer runs after this."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
