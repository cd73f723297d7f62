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
* **A herd is spread**: an attempt counts from the moment its run goes on after the wait
  (``take_turn`` returns), not from the moment the pacer let it through (a busy event loop
  may run it much later), and it goes on only if the window has room at that moment (else
  it is held: it keeps its place and tries again when the window has room): any interval of ``W``
  seconds holds at most ``max(burst, min(share * H, rate * W))`` attempt starts
  (deadline-bound ones aside), ``H`` being the herd's size, in the order they asked; so a herd
  of ``H`` attempts takes at least ``W * (ceil(H / limit) - 1)`` seconds (at least about
  ``W / share`` for a large herd). ``limit`` only grows within a herd.
* **The limit is time, not loop turns**: a run let through goes on one event loop turn
  later, and in a busy process (full garbage collections, hundreds of handshakes) a turn may
  last longer than ``W``. The pacer measures that delay (:attr:`PacerSchedule.ahead`: the last
  let-through attempt's wait from its go-ahead to its run going on, at most
  :data:`MOST_AHEAD`) and lets attempts through that much ahead of their time: as many as the
  window will have room for by then, plus one window's worth for every whole ``W`` the delay
  spans, since the runs of one turn go on one after the other and each checks the window as
  it goes on (a run held there tries again in the next loop turn, or when the window has
  room if that is further off than a turn). It lets them through while the runs before them
  go on, not from a timer one turn later, and a run awaits its go-ahead itself (no helper
  task in between). So once the delay is measured, a loop whose turns are longer than ``W``
  moves at least one window's worth every turn (it moved one every two or three turns), and
  more when the runs' own work spreads them over the turn: as many as ``W``-long stretches of
  time allow, not loop turns. One exception: a turn that begins with runs held in the turn
  before moves those (a window's worth, or all of them if fewer) and lets the queue behind
  them through only as the last of them goes, so the turn after it moves a window's worth
  again (a run let through while another is held would be scheduled before that run's retry,
  and the order of asking would break). With a fast loop ``ahead`` is about 0 and the pacer lets
  attempts through at their time, as before. The runs let through go on before the next are
  let through, so the order of asking holds.
* **Deadlines are kept**: an attempt with a ``latest`` start time (a goAway move, which
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

from ..rules.policy import ResumePolicy, is_testing

__all__ = ["WINDOW", "PacerSchedule", "ReconnectPacer", "Ticket", "pacer_for", "take_turn"]

logger = logging.getLogger("adk_live_resume.pacing")

#: Seconds: the sliding window the pacer counts attempts in (the issue's "per 100 ms").
WINDOW = 0.1
#: Seconds: the most the pacer lets attempts through ahead of their time (a slow loop turn).
MOST_AHEAD = 1.0


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
    #: Its run went on (:meth:`PacerSchedule.go`): the attempt is counted at that time.
    gone: bool = False
    cancelled: bool = False
    #: Its place in the order of asking.
    order: int = 0
    #: Let through, its run found the window full when it went on: it tries again.
    held: bool = False


@dataclass
class PacerSchedule:
    """The sliding window and the queue of waiting attempts; pure, times in seconds.

    A ticket let through (:meth:`let_through`) holds a place in the window until its run
    actually goes on (:meth:`go`, one event loop iteration later, which in a busy process may
    be a long time): the window counts the times attempts went, not the times they were let
    through, so the bound holds for the attempts themselves.
    """

    #: The times the attempts in the window went, oldest first.
    _recent: collections.deque[float] = field(default_factory=collections.deque)
    _waiting: collections.deque[Ticket] = field(default_factory=collections.deque)
    _now: float = -math.inf
    #: Tickets let through whose runs have not gone on yet (each holds a place).
    _pending: int = 0
    #: Waiting tickets with a deadline (most herds have none: no scan of the queue then).
    _deadlines: int = 0
    #: Attempts that asked since the pacer was last calm (the current herd's size).
    herd: int = 0
    #: Attempts counted so far (let through at once or after a wait).
    started: int = 0
    #: Attempts that had to wait (a herd, as opposed to lone drops).
    paced: int = 0
    #: Runs let through that found the window full when they went on (and tried again).
    held: int = 0
    #: Seconds: how long the last ticket let through took to go on (one event loop turn),
    #: at most :data:`MOST_AHEAD`; tickets are let through that much ahead of their time.
    ahead: float = 0.0
    _asked: int = 0

    def arrive(
        self, now: float, rate: float, burst: int, share: float, *, latest: float | None = None
    ) -> Ticket:
        """A ticket for an attempt wanted at ``now``; if ``ticket.started`` is set, it went at
        once (no :meth:`go` needed), else it waits for :meth:`let_through`."""
        if rate < 0 or burst < 1 or not 0 <= share <= 1:
            raise ValueError(
                "a pacer needs rate >= 0, burst >= 1 and 0 <= share <= 1,"
                f" not {rate}, {burst} and {share}"
            )
        self._asked += 1
        ticket = Ticket(rate, burst, share, latest, order=self._asked)
        if rate == 0 or is_testing():
            ticket.started = now
            ticket.gone = True
            return ticket
        self._advance(now)
        if not self._waiting and not self._recent and not self._pending:
            self.herd = 0  # calm: a new herd (or a lone drop) begins
        self.herd += 1
        if not self._waiting and not self._pending and self._room(ticket, 0.0) > 0:
            self._start(ticket, self._now)
            self._count(ticket)
            return ticket
        self._waiting.append(ticket)
        self._deadlines += latest is not None
        self.paced += 1
        return ticket

    def go(self, ticket: Ticket, now: float) -> bool:
        """The run of a ticket let through goes on at ``now``: count its attempt then and
        return ``True``; or, if the window is full at ``now`` (it was let through ahead of
        its time) and its deadline has not come, hold it (it keeps its place, let through;
        its run tries again at :meth:`room_at`) and return ``False``."""
        if ticket.gone or ticket.cancelled or ticket.started is None:
            return ticket.gone
        self._advance(now)
        if not ticket.held:  # the delay from the go-ahead to the run: one loop turn
            self.ahead = min(MOST_AHEAD, self._now - ticket.started)
        due = ticket.latest is not None and ticket.latest <= self._now
        if not due and len(self._recent) >= self.limit(ticket):
            self.held += not ticket.held
            ticket.held = True
            return False
        self._count(ticket)
        return True

    def room_at(self, ticket: Ticket) -> float:
        """When the window next has room for a held ticket's run (now, if it has)."""
        full = len(self._recent) - self.limit(ticket)
        return self._now if full < 0 else self._recent[full] + WINDOW

    def _count(self, ticket: Ticket) -> None:
        """A ticket let through goes on now: it leaves the pending places for the window."""
        ticket.gone = True
        self._pending -= 1
        self._recent.append(self._now)

    def cancel(self, ticket: Ticket) -> None:
        """Take a ticket out (its run ended): a waiting one leaves the queue, one let through
        but not gone gives its place in the window back; no-op once gone."""
        if ticket.gone or ticket.cancelled:
            return
        ticket.cancelled = True
        if ticket.started is None:
            self._waiting.remove(ticket)
            self._deadlines -= ticket.latest is not None
        else:
            self._pending -= 1

    def let_through(self, now: float) -> list[Ticket]:
        """Let every waiting ticket whose turn (or deadline) has come through, in queue
        order; each holds its place until :meth:`go` (or :meth:`cancel`)."""
        self._advance(now)
        started: list[Ticket] = []
        now = self._now
        # the runs let through before go on (or come back) before the next are let through:
        # the order of asking holds even for runs sent back
        in_order = not self._pending
        if self._deadlines:
            for ticket in [t for t in self._waiting if t.latest is not None and t.latest <= now]:
                self._waiting.remove(ticket)
                self._deadlines -= 1
                self._start(ticket, now)
                started.append(ticket)
        while in_order and self._waiting and self._room(self._waiting[0], self.ahead) > 0:
            ticket = self._waiting.popleft()
            self._deadlines -= ticket.latest is not None
            self._start(ticket, now)
            started.append(ticket)
        return started

    def next_turn(self) -> float | None:
        """When :meth:`let_through` may next let a ticket through (``None``: nobody waits,
        or only tickets let through and not gone yet hold the window: ask after :meth:`go`)."""
        if not self._waiting:
            return None
        # the head may be let through once all but limit - 1 of the places taken will have
        # left the window ``ahead`` seconds later, when its run is expected to go on
        leaving = len(self._recent) + self._pending - self._places(self._waiting[0], self.ahead)
        turn: float | None
        if self._pending:
            turn = None  # ask again when the runs let through have gone on
        elif leaving < 0:
            turn = self._now
        elif leaving < len(self._recent):
            turn = max(self._now, self._recent[leaving] + WINDOW - self.ahead)
        else:
            turn = None
        if not self._deadlines:
            return turn
        deadlines = [t.latest for t in self._waiting if t.latest is not None]
        return min(deadlines if turn is None else [turn, *deadlines])

    def limit(self, ticket: Ticket) -> int:
        """How many attempts the window may hold for ``ticket`` to go (see the module)."""
        grown = min(math.floor(ticket.share * self.herd), math.floor(ticket.rate * WINDOW))
        return max(ticket.burst, grown)

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def _places(self, ticket: Ticket, ahead: float) -> int:
        """How many may be let through for ``ticket``'s turn, to go ``ahead`` seconds from
        now: the window's limit, and one more window's worth for every whole ``W`` the loop
        turn spans (the turn's runs go on one after the other, each checking the window)."""
        return self.limit(ticket) * (1 + math.floor(ahead / WINDOW))

    def _room(self, ticket: Ticket, ahead: float) -> int:
        """Tickets that may be let through now for ``ticket``'s turn, to go ``ahead`` seconds
        from now (0: at once, the window's limit as it stands)."""
        horizon = self._now + ahead
        leaving = 0
        while leaving < len(self._recent) and self._recent[leaving] + WINDOW <= horizon:
            leaving += 1
        return self._places(ticket, ahead) - (len(self._recent) - leaving) - self._pending

    def _advance(self, now: float) -> None:
        """Move the clock to ``now`` (never back): attempts older than the window stop
        counting."""
        self._now = max(self._now, now)
        while self._recent and self._recent[0] + WINDOW <= self._now:
            self._recent.popleft()

    def _start(self, ticket: Ticket, now: float) -> None:
        ticket.started = now
        self._pending += 1
        self.started += 1


class ReconnectPacer:
    """A :class:`PacerSchedule` on an event loop: tickets are futures, a timer lets them in."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.schedule = PacerSchedule()
        self._timer: asyncio.TimerHandle | None = None
        self._futures: dict[Ticket, asyncio.Future[Ticket]] = {}

    def turn(
        self, rate: float, burst: int, share: float, *, latest: float | None = None
    ) -> asyncio.Future[Ticket]:
        """A future done (with its ticket) when the attempt may go; already done, and the
        attempt counted, when it may go now.

        Cancelling the future gives the place in the queue up. Once it is done, call
        :meth:`went` when the run goes on, or :meth:`give_up` if it does not.
        """
        ticket = self.schedule.arrive(self.loop.time(), rate, burst, share, latest=latest)
        if ticket.started is not None:
            future: asyncio.Future[Ticket] = self.loop.create_future()
            future.set_result(ticket)
            return future
        return self._wait(ticket)

    def went(self, ticket: Ticket) -> float | None:
        """The run of ``ticket`` goes on now: its attempt counts from now (``None``); or the
        window is full now: the seconds its run waits before it tries again (0: one loop
        turn, when the loop's turns are longer than the wait).

        The tickets whose turn comes within one loop turn are let through now, while this
        run goes on, so that theirs go on in the next turn (see the module)."""
        now = self.loop.time()
        if not self.schedule.go(ticket, now):
            wait = self.schedule.room_at(ticket) - now
            return 0.0 if wait <= self.schedule.ahead else wait
        when = self.schedule.next_turn()
        if when is not None and when <= now:
            if self._timer is not None:
                self._timer.cancel()
            self._wake(now)
        else:
            self._arm()
        return None

    def _wait(self, ticket: Ticket) -> asyncio.Future[Ticket]:
        future: asyncio.Future[Ticket] = self.loop.create_future()
        self._futures[ticket] = future
        future.add_done_callback(lambda done: self._forget(ticket, done))
        self._arm()
        return future

    def give_up(self, ticket: Ticket) -> None:
        """The run of ``ticket`` ended before it went: its place is free."""
        self.schedule.cancel(ticket)
        self._arm()

    def _forget(self, ticket: Ticket, future: asyncio.Future[Ticket]) -> None:
        if self._futures.get(ticket) is future:
            del self._futures[ticket]
        if ticket.started is None:  # cancelled while it waited
            self.schedule.cancel(ticket)
            self._arm()

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
                future.set_result(ticket)
            else:
                self.schedule.cancel(ticket)
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

    ``latest``: a loop time the attempt must start by (a goAway move's deadline).
    ``on_close(callback)`` registers a callback for the end of the run and returns a function
    that unregisters it (``QueueGuard.on_close``). Returns at once while the process is quiet.
    The attempt counts in the pacer's window from the moment this returns ``True``.
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
    # The run awaits its turn's future itself (no helper task, no asyncio.wait): it goes on in
    # the loop turn after its go-ahead, which is the delay the pacer measures and leads by.
    closed = False

    def close() -> None:
        nonlocal closed
        closed = True
        turn.cancel()  # a future let through already is done: cancelling it does nothing

    remove = on_close(close) if on_close is not None else None
    going = False
    try:
        try:
            ticket = await turn
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if closed and (task is None or not task.cancelling()):
                return False  # the run was closed (not this task cancelled): place given up
            raise
        while not closed:
            wait = pacer.went(ticket)
            if wait is None:
                going = True
                break
            await asyncio.sleep(wait)  # the window was full when it went on: try again
    finally:
        if going:
            pass
        elif turn.done() and not turn.cancelled():
            pacer.give_up(turn.result())  # let through, but the run ended
        else:
            turn.cancel()  # gives the place in the queue up
        if remove is not None:
            remove()
    return going
