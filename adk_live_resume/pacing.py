"""Reconnect pacing shared by every live run of a process: a lone drop at once, a herd spread.

When a server drops every socket at once (a restart, a load balancer, a network blip), every
run of the process reconnects in the same instant: 500 runs make about 1,400 attempts a second,
a quarter of them inside one 100 ms window. One :class:`ReconnectPacer` per event loop, shared
by every patched run on it, lets such a herd through a token bucket, in its virtual-scheduling
form (GCRA, the generic cell rate algorithm). With ``rate`` (``ResumePolicy.
process_reconnect_rate``, attempts per second), ``burst`` (``ResumePolicy.
process_reconnect_burst``), ``T = 1 / rate`` and ``tau = (burst - 1) * T``, the attempt at the
head of the queue may start at ``now`` when ``now >= tat - tau``, and then
``tat = max(tat, now) + T`` (``tat``, the theoretical arrival time, starts in the past).

The decision is taken when an attempt is let through, not when it asks: an event loop that
falls behind (a busy process, a garbage collection) then lets at most ``burst`` waiting
attempts through at once when it catches up, instead of every attempt whose time has come.

Guarantees:

* **A quiet process adds no wait**: while fewer than ``burst`` attempts started in the last
  ``burst / rate`` seconds and nobody waits, an attempt starts at once (its ticket is done
  when it is made).
* **A herd is spread**: any interval of ``L`` seconds holds at most
  ``burst + floor(L * rate)`` attempt starts (deadline-bound ones aside), in the order they
  asked, evenly spaced ``1 / rate`` apart once the burst is used up.
* **Deadlines are kept**: an attempt with a ``latest`` start time (a goAway rotation, which
  must reconnect by ``timeLeft - go_away_margin``) is let through at that time even if it is
  not its turn; it still counts, so the attempts after it wait for it.
* Runs with different policies share one schedule: each attempt is spaced by its own
  ``rate`` and ``burst``.
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

__all__ = ["PacerSchedule", "ReconnectPacer", "Ticket", "pacer_for", "take_turn"]

logger = logging.getLogger("adk_live_resume.pacing")

_EPSILON = 1e-9


@dataclass(eq=False)
class Ticket:
    """One connection attempt waiting for its turn."""

    rate: float
    burst: int
    #: The latest time the attempt may start (``None``: no deadline).
    latest: float | None = None
    #: When it was let through (``None``: still waiting, or cancelled).
    started: float | None = None
    cancelled: bool = False


@dataclass
class PacerSchedule:
    """The token bucket (GCRA) and the queue of waiting attempts; pure, times in seconds."""

    _tat: float = -math.inf
    _waiting: collections.deque[Ticket] = field(default_factory=collections.deque)
    #: Attempts counted so far (let through at once or after a wait).
    started: int = 0
    #: Attempts that had to wait (a herd, as opposed to lone drops).
    paced: int = 0

    def arrive(self, now: float, rate: float, burst: int, *, latest: float | None = None) -> Ticket:
        """A ticket for an attempt wanted at ``now``; ``ticket.started`` is set if it may
        start at once, else it waits for :meth:`let_through`."""
        if rate < 0 or burst < 1:
            raise ValueError(f"a pacer needs rate >= 0 and burst >= 1, not {rate} and {burst}")
        ticket = Ticket(rate, burst, latest)
        if rate == 0 or is_testing():
            ticket.started = now
            return ticket
        if not self._waiting and self._conforms(ticket, now):
            self._start(ticket, now)
            return ticket
        self._waiting.append(ticket)
        self.paced += 1
        return ticket

    def cancel(self, ticket: Ticket) -> None:
        """Take a waiting ticket out of the queue (its run ended); no-op once started."""
        if ticket.started is None and not ticket.cancelled:
            ticket.cancelled = True
            self._waiting.remove(ticket)

    def let_through(self, now: float) -> list[Ticket]:
        """Start every waiting ticket whose turn (or deadline) has come, in queue order."""
        started: list[Ticket] = []
        for ticket in [t for t in self._waiting if t.latest is not None and t.latest <= now]:
            self._waiting.remove(ticket)
            self._start(ticket, now)
            started.append(ticket)
        while self._waiting and self._conforms(self._waiting[0], now):
            ticket = self._waiting.popleft()
            self._start(ticket, now)
            started.append(ticket)
        return started

    def next_turn(self) -> float | None:
        """When :meth:`let_through` may next start a ticket (``None``: nobody waits)."""
        if not self._waiting:
            return None
        head = self._waiting[0]
        turn = self._tat - (head.burst - 1) / head.rate
        deadlines = [t.latest for t in self._waiting if t.latest is not None]
        return min([turn, *deadlines])

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def _conforms(self, ticket: Ticket, now: float) -> bool:
        # _EPSILON: sums of 1/rate are inexact; the burst-th ticket of an instant conforms.
        return now + _EPSILON >= self._tat - (ticket.burst - 1) / ticket.rate

    def _start(self, ticket: Ticket, now: float) -> None:
        ticket.started = now
        self._tat = max(self._tat, now) + 1.0 / ticket.rate
        self.started += 1


class ReconnectPacer:
    """A :class:`PacerSchedule` on an event loop: tickets are futures, a timer lets them in."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.schedule = PacerSchedule()
        self._timer: asyncio.TimerHandle | None = None
        self._futures: dict[Ticket, asyncio.Future[None]] = {}

    def turn(self, rate: float, burst: int, *, latest: float | None = None) -> asyncio.Future[None]:
        """A future done when the attempt may start (already done when it may start now).

        Cancelling the future gives the place in the queue up.
        """
        future: asyncio.Future[None] = self.loop.create_future()
        ticket = self.schedule.arrive(self.loop.time(), rate, burst, latest=latest)
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
    turn = pacer.turn(policy.process_reconnect_rate, policy.process_reconnect_burst, latest=latest)
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
