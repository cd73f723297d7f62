"""Reconnect pacing shared by every live run of a process: a lone drop at once, a herd spread.

When a server drops every socket at once (a restart, a load balancer, a network blip), every
run of the process reconnects in the same instant: 500 runs make about 1,400 attempts a second,
a quarter of them inside one 100 ms window. One :class:`ReconnectPacer` per event loop, shared
by every patched run on it, lets such a herd through a sliding window whose size follows the
herd. With ``W = WINDOW`` (0.1 s), ``burst`` (``ResumePolicy.process_reconnect_burst``),
``share`` (``ResumePolicy.process_reconnect_share``), ``rate``
(``ResumePolicy.process_reconnect_rate``, a ceiling in attempts per second) and ``herd`` (the
attempts that asked since the pacer was last calm: nobody waiting and no attempt started in
the last ``W`` seconds), the attempt at the head of the queue may start at ``now`` when fewer
than ::

    limit = max(burst, min(floor(share * herd), floor(rate * W)))

attempts started in ``(now - W, now]``.

Why a window that follows the herd and not a fixed rate: a process that recovers hundreds of
sessions is CPU-bound, its event loop runs late, and a fixed-rate token bucket then lets only
its burst through per loop iteration (at 1,000 sessions, 50 attempts a second instead of 250:
recovery took twice as long as unpaced). Here a late wake lets the whole window's worth
through, and that worth grows with the herd, so the pacer bounds how much of a herd lands at
once (the share of the attempts in any 100 ms, what hurts a server) without bounding how fast
a busy process may go.

Guarantees:

* **A quiet process adds no wait**: while fewer than ``burst`` attempts started in the last
  ``W`` seconds and nobody waits, an attempt starts at once (its ticket is done when it is
  made).
* **A herd is spread**: any interval of ``W`` seconds holds at most
  ``max(burst, min(share * H, rate * W))`` attempt starts (deadline-bound ones aside), ``H``
  being the herd's size, in the order they asked; so a herd of ``H`` attempts takes at least
  ``W * (ceil(H / limit) - 1)`` seconds (at least about ``W / share`` for a large herd) and
  never more than that plus the event loop's own delays. ``limit`` only grows within a herd.
* **Deadlines are kept**: an attempt with a ``latest`` start time (a goAway rotation, which
  must reconnect by ``timeLeft - go_away_margin``) is let through at that time even if it is
  not its turn; it still counts, so the attempts after it wait for it.
* Runs with different policies share one window: the head of the queue decides with its own
  ``rate``, ``burst`` and ``share``.
* ``rate == 0`` turns pacing off for that attempt (it neither waits nor counts), and so does
  :func:`adk_live_resume.set_testing` (``testing_backoff()``); pacer tests that need the waits
  turn the testing switch off, as backoff tests do.
* An attempt whose run ends while it waits (cancelled ticket) leaves the queue at once.

:class:`PacerSchedule` holds every rule and is pure (times are passed in);
:class:`ReconnectPacer` only wakes it up on the event loop.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import math
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .policy import ResumePolicy, is_testing

__all__ = ["WINDOW", "PacerSchedule", "ReconnectPacer", "Ticket", "pacer_for", "take_turn"]

logger = logging.getLogger("adk_live_resume.pacing")

#: Seconds: the sliding window the pacer counts attempts in (the issue's "per 100 ms").
WINDOW = 0.1


@dataclass(eq=False)
class Ticket:
    """One connection attempt waiting for its turn."""

    rate: float
    burst: int
    share: float
    #: The latest time the attempt may start (``None``: no deadline).
    latest: float | None = None
    #: When it was let through (``None``: still waiting, or cancelled).
    started: float | None = None
    cancelled: bool = False


@dataclass
class PacerSchedule:
    """The sliding window and the queue of waiting attempts; pure, times in seconds."""

    _recent: collections.deque[float] = field(default_factory=collections.deque)
    _waiting: collections.deque[Ticket] = field(default_factory=collections.deque)
    _now: float = -math.inf
    #: Waiting tickets with a deadline (most herds have none: no scan of the queue then).
    _deadlines: int = 0
    #: Attempts that asked since the pacer was last calm (the current herd's size).
    herd: int = 0
    #: Attempts counted so far (let through at once or after a wait).
    started: int = 0
    #: Attempts that had to wait (a herd, as opposed to lone drops).
    paced: int = 0

    def arrive(
        self, now: float, rate: float, burst: int, share: float, *, latest: float | None = None
    ) -> Ticket:
        """A ticket for an attempt wanted at ``now``; ``ticket.started`` is set if it may
        start at once, else it waits for :meth:`let_through`."""
        if rate < 0 or burst < 1 or not 0 <= share <= 1:
            raise ValueError(
                "a pacer needs rate >= 0, burst >= 1 and 0 <= share <= 1,"
                f" not {rate}, {burst} and {share}"
            )
        ticket = Ticket(rate, burst, share, latest)
        if rate == 0 or is_testing():
            ticket.started = now
            return ticket
        self._advance(now)
        if not self._waiting and not self._recent:
            self.herd = 0  # calm: a new herd (or a lone drop) begins
        self.herd += 1
        if not self._waiting and len(self._recent) < self.limit(ticket):
            self._start(ticket, self._now)
            return ticket
        self._waiting.append(ticket)
        self._deadlines += latest is not None
        self.paced += 1
        return ticket

    def cancel(self, ticket: Ticket) -> None:
        """Take a waiting ticket out of the queue (its run ended); no-op once started."""
        if ticket.started is None and not ticket.cancelled:
            ticket.cancelled = True
            self._waiting.remove(ticket)
            self._deadlines -= ticket.latest is not None

    def let_through(self, now: float) -> list[Ticket]:
        """Start every waiting ticket whose turn (or deadline) has come, in queue order."""
        self._advance(now)
        started: list[Ticket] = []
        now = self._now
        if self._deadlines:
            for ticket in [t for t in self._waiting if t.latest is not None and t.latest <= now]:
                self._waiting.remove(ticket)
                self._deadlines -= 1
                self._start(ticket, now)
                started.append(ticket)
        while self._waiting and len(self._recent) < self.limit(self._waiting[0]):
            ticket = self._waiting.popleft()
            self._deadlines -= ticket.latest is not None
            self._start(ticket, now)
            started.append(ticket)
        return started

    def next_turn(self) -> float | None:
        """When :meth:`let_through` may next start a ticket (``None``: nobody waits)."""
        if not self._waiting:
            return None
        # the head may start once all but limit - 1 of the recent starts have left the window
        leaving = len(self._recent) - self.limit(self._waiting[0])
        turn = self._recent[leaving] + WINDOW if leaving >= 0 else self._now
        if not self._deadlines:
            return turn
        return min([turn, *(t.latest for t in self._waiting if t.latest is not None)])

    def limit(self, ticket: Ticket) -> int:
        """How many starts the window may hold for ``ticket`` to start (see the module)."""
        grown = min(math.floor(ticket.share * self.herd), math.floor(ticket.rate * WINDOW))
        return max(ticket.burst, grown)

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def _advance(self, now: float) -> None:
        """Move the clock to ``now`` (never back): starts older than the window stop counting."""
        self._now = max(self._now, now)
        while self._recent and self._recent[0] + WINDOW <= self._now:
            self._recent.popleft()

    def _start(self, ticket: Ticket, now: float) -> None:
        ticket.started = now
        self._recent.append(now)
        self.started += 1


class ReconnectPacer:
    """A :class:`PacerSchedule` on an event loop: tickets are futures, a timer lets them in."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.schedule = PacerSchedule()
        self._timer: asyncio.TimerHandle | None = None
        self._futures: dict[Ticket, asyncio.Future[None]] = {}

    def turn(
        self, rate: float, burst: int, share: float, *, latest: float | None = None
    ) -> asyncio.Future[None]:
        """A future done when the attempt may start (already done when it may start now).

        Cancelling the future gives the place in the queue up.
        """
        future: asyncio.Future[None] = self.loop.create_future()
        ticket = self.schedule.arrive(self.loop.time(), rate, burst, share, latest=latest)
        if ticket.started is not None:
            future.set_result(None)
            return future
        self._futures[ticket] = future
        future.add_done_callback(lambda _: self._forget(ticket))
        self._arm()
        return future

    def _forget(self, ticket: Ticket) -> None:
        self._futures.pop(ticket, None)
        self.schedule.cancel(ticket)

    def _arm(self) -> None:
        when = self.schedule.next_turn()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if when is not None:
            self._timer = self.loop.call_at(when, self._wake, when)

    def _wake(self, when: float) -> None:
        self._timer = None
        # The loop may call a timer up to its clock resolution early: it is due all the same.
        for ticket in self.schedule.let_through(max(self.loop.time(), when)):
            future = self._futures.pop(ticket, None)
            if future is not None and not future.done():
                future.set_result(None)
        self._arm()


_pacers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, ReconnectPacer] = (
    weakref.WeakKeyDictionary()
)


def pacer_for(loop: asyncio.AbstractEventLoop) -> ReconnectPacer:
    """The pacer every live run on ``loop`` shares (made on first use, gone with the loop)."""
    pacer = _pacers.get(loop)
    if pacer is None:
        pacer = _pacers[loop] = ReconnectPacer(loop)
    return pacer


async def take_turn(
    policy: ResumePolicy,
    *,
    latest: float | None = None,
    on_close: Callable[[Callable[[], None]], Callable[[], None]] | None = None,
) -> bool:
    """Wait for this process's go-ahead for a reconnect attempt wanted now (its backoff wait
    over); return ``False`` if the run was closed first (its place is given up).

    ``latest``: a loop time the attempt must start by (a goAway rotation's deadline).
    ``on_close(callback)`` registers a callback for the end of the run and returns a function
    that unregisters it (``QueueGuard.on_close``). Returns at once while the process is quiet.
    """
    pacer = pacer_for(asyncio.get_running_loop())
    turn = pacer.turn(
        policy.process_reconnect_rate,
        policy.process_reconnect_burst,
        policy.process_reconnect_share,
        latest=latest,
    )
    if turn.done():
        return True
    logger.debug("waiting for this process's reconnect pacer (%d waiting)", pacer.schedule.waiting)
    closed = asyncio.Event()
    remove = on_close(closed.set) if on_close is not None else None
    closing = asyncio.ensure_future(closed.wait())
    try:
        either: set[asyncio.Future[Any]] = {turn, closing}
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
    finally:
        turn.cancel()  # gives the place up unless it came
        closing.cancel()
        if remove is not None:
            remove()
    return not closed.is_set()
