"""The pacer on a slow event loop: its limit is time, not loop turns.

A run let through goes on one event loop turn later; in a busy process (full garbage
collections, hundreds of handshakes) a turn lasts longer than the pacer's 100 ms window. These
tests simulate such a loop on the pure :class:`PacerSchedule` with injected times (turn lengths
and the CPU each run takes when it goes on), and then run a real event loop whose turns are
made long by a blocking callback. The pacer must move at least one window's worth a turn (not
one every two or three turns), and the spread must hold all the same: no window holds more
than the limit, in the order the runs asked.
"""

from __future__ import annotations

import asyncio
import bisect
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from adk_live_resume import ResumePolicy, set_testing
from adk_live_resume.shell.pacing import WINDOW, PacerSchedule, Ticket, pacer_for, take_turn

RATE, BURST, SHARE = 1000.0, 20, 0.08  # the policy's defaults
#: Seconds: the least a simulated loop turn takes.
MIN_TURN = 1e-6


@pytest.fixture
def pacing_on() -> None:
    """These tests need the waits the testing switch turns off (conftest turns it on)."""
    set_testing(False)


def examples(fast: int) -> int:
    """``fast`` examples in the suite's ``fast`` profile (each example simulates a whole
    herd); the loaded profile's count in any other (``HYPOTHESIS_PROFILE=long``)."""
    profile = settings.get_current_profile_name()
    return fast if profile == "fast" else settings.default.max_examples


def most_in_any_window(times: list[float], width: float) -> int:
    ordered = sorted(times)
    return max(bisect.bisect_left(ordered, t + width) - i for i, t in enumerate(ordered))


@dataclass
class SlowLoop:
    """An event loop simulated turn by turn: a turn runs the pacer's due timer, then every
    run let through in the turn before (each takes ``cost`` seconds of CPU once it goes on,
    and as it goes on the shell asks the schedule whether to let more through, as
    :meth:`ReconnectPacer.went` does; a run held because the window is full tries again in
    the next turn, or at the window's room if that is further off than a measured turn),
    then ``extra`` seconds of other work (a garbage collection, other sessions' handshakes)."""

    schedule: PacerSchedule
    cost: float
    now: float = 0.0
    ready: list[Ticket] = field(default_factory=list)
    sleeping: list[tuple[float, Ticket]] = field(default_factory=list)
    went: list[tuple[float, int]] = field(default_factory=list)  # (time, order of asking)
    per_turn: list[int] = field(default_factory=list)
    #: Each turn's runs that were held in the turn before and try again in it.
    retrying: list[int] = field(default_factory=list)
    turns: int = 0

    def turn(self, extra: float) -> None:
        self.turns += 1
        timers = [when for when, _ in self.sleeping]
        timer = self.schedule.next_turn()
        if timer is not None:
            timers.append(timer)
        if not self.ready and timers and min(timers) > self.now:
            self.now = min(timers)  # an idle loop sleeps until its first timer
        began = self.now
        woken = [t for when, t in self.sleeping if when <= self.now]
        self.sleeping = [(when, t) for when, t in self.sleeping if when > self.now]
        due = self.schedule.next_turn()
        coming = self.schedule.let_through(self.now) if due is not None and due <= self.now else []
        gone = 0
        self.retrying.append(sum(t.held for t in self.ready))
        for ticket in self.ready:
            if not self.schedule.go(ticket, self.now):
                wait = self.schedule.room_at(ticket) - self.now
                if wait <= self.schedule.ahead:
                    coming.append(ticket)  # tries again in the next turn
                else:
                    self.sleeping.append((self.now + wait, ticket))
                continue
            self.went.append((self.now, ticket.order))
            gone += 1
            self.now += self.cost
            when = self.schedule.next_turn()
            if when is not None and when <= self.now:
                coming += self.schedule.let_through(self.now)
        self.per_turn.append(gone)
        self.ready = woken + coming
        # a real loop's clock moves every turn (its own work, the selector): a turn of only
        # held runs retrying is not free, or a run held an ulp before the window frees
        # would retry forever at one instant
        self.now = max(self.now + extra, began + MIN_TURN)


def herd(schedule: PacerSchedule, size: int) -> list[Ticket]:
    """``size`` attempts asking at time 0; the ones that went at once are counted then."""
    return [schedule.arrive(0.0, RATE, BURST, SHARE) for _ in range(size)]


def test_a_loop_of_long_turns_moves_a_window_every_turn(pacing_on: None) -> None:
    """Turns of 300 ms: the old rule (let through when the window has room, one turn before
    the runs go) moved one window's worth every second turn; now every turn moves one."""
    schedule = PacerSchedule()
    tickets = herd(schedule, 1000)
    limit = schedule.limit(tickets[-1])
    assert limit == 80
    loop = SlowLoop(schedule, cost=0.0)
    loop.went += [(0.0, t.order) for t in tickets if t.gone]
    while len(loop.went) < 1000 and loop.turns < 100:
        loop.turn(extra=0.3)
    assert len(loop.went) == 1000
    assert schedule.ahead == pytest.approx(0.3)  # the loop turn it measured
    assert [order for _, order in loop.went] == sorted(order for _, order in loop.went)
    # after the first two turns (the herd is known, the delay is measured), one window a turn
    assert all(n >= min(limit, left) for n, left in _per_turn_and_left(loop, 1000)[2:])
    assert loop.turns <= math.ceil(1000 / limit) + 3
    assert most_in_any_window([t for t, _ in loop.went], WINDOW) <= limit


def test_runs_whose_own_work_spreads_them_over_a_turn_go_more_than_a_window_a_turn(
    pacing_on: None,
) -> None:
    """Each run takes 2 ms of CPU when it goes on and turns carry 300 ms of other work: the
    time the runs' own work takes counts, so a turn moves more than one window's worth (the
    limit is time, not turns), and still no 100 ms holds more than the limit."""
    schedule = PacerSchedule()
    tickets = herd(schedule, 1000)
    limit = schedule.limit(tickets[-1])
    loop = SlowLoop(schedule, cost=0.002)
    loop.went += [(0.0, t.order) for t in tickets if t.gone]
    while len(loop.went) < 1000 and loop.turns < 100:
        loop.turn(extra=0.3)
    assert len(loop.went) == 1000
    assert [order for _, order in loop.went] == sorted(order for _, order in loop.went)
    assert max(loop.per_turn) > 2 * limit
    assert loop.turns < math.ceil(1000 / limit)  # fewer turns than one window a turn takes
    assert most_in_any_window([t for t, _ in loop.went], WINDOW) <= limit


def _per_turn_and_left(loop: SlowLoop, size: int) -> list[tuple[int, int]]:
    """Each turn's gone runs and how many were still to go when it began."""
    left = size - BURST
    pairs = []
    for n in loop.per_turn:
        pairs.append((n, left))
        left -= n
    return pairs


@settings(max_examples=examples(60), deadline=None)
@given(
    size=st.integers(min_value=30, max_value=1500),
    cost=st.floats(min_value=0.0, max_value=0.005),
    extras=st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=1, max_size=20),
)
# the last run is held an ulp before the window frees (0.905 + 0.1 rounds above 1.005) on a
# loop with no other work: it goes once the clock moves (found at 5,000 examples)
@example(size=202, cost=0.004999999999999999, extras=[0.0])
def test_any_loop_keeps_the_spread_and_the_order(
    size: int, cost: float, extras: list[float]
) -> None:
    """Whatever the turns' lengths (injected: 0 to 1 s of other work, repeating; a turn may
    be much shorter or longer than the one the pacer measured) and the runs' own CPU: every
    run goes, in the order asked, and no 100 ms window holds more than the limit."""
    set_testing(False)
    schedule = PacerSchedule()
    tickets = herd(schedule, size)
    limit = schedule.limit(tickets[-1])
    loop = SlowLoop(schedule, cost=cost)
    loop.went += [(0.0, t.order) for t in tickets if t.gone]
    while len(loop.went) < size and loop.turns < 20 * size:
        loop.turn(extra=extras[loop.turns % len(extras)])
    assert len(loop.went) == size
    assert [order for _, order in loop.went] == sorted(order for _, order in loop.went)
    assert most_in_any_window([t for t, _ in loop.went], WINDOW) <= limit


@settings(max_examples=examples(60), deadline=None)
@given(
    size=st.integers(min_value=30, max_value=1500),
    cost=st.floats(min_value=0.0, max_value=0.005),
    # longer than W (a turn of exactly W may meet the window's edge and wait one more turn)
    extras=st.lists(st.floats(min_value=1.01 * WINDOW, max_value=1.0), min_size=1, max_size=20),
)
# 20 runs of 5 ms fill the window exactly: the 61st run of the third turn starts an ulp inside
# the window of the run 20 before it and is held, and so are the 18 after it; the fourth turn
# moves those 19 and lets the last run through, to go in the fifth
@example(size=121, cost=0.005, extras=[0.25])
# the same edge at 100 runs of 1 ms: 308 held, three turns of 100, then a turn of the 8 left
# of them while 730 wait behind
@example(size=1330, cost=0.001, extras=[0.3647557909036472])
def test_a_loop_of_long_turns_moves_a_window_every_turn_whatever_their_lengths(
    size: int, cost: float, extras: list[float]
) -> None:
    """Every turn longer than ``W`` (0.1 to 1 s of other work, injected): from the third
    turn on (the herd is known, the delay measured), every turn moves at least one window's
    worth or what is left, except a turn that begins with runs held in the turn before: it
    moves them (a window's worth, or all of them if fewer) and the queue behind them is let
    through as the last of them goes, so the turn after it moves a window's worth again.

    Why the exception: the runs queued behind held ones may be let through only once the
    held ones have gone, or the order of asking breaks on a real event loop (a run let
    through while another is held would be scheduled before the held run's retry, since the
    retry is scheduled when the held run yields, after the pacer has returned)."""
    set_testing(False)
    schedule = PacerSchedule()
    tickets = herd(schedule, size)
    limit = schedule.limit(tickets[-1])
    loop = SlowLoop(schedule, cost=cost)
    loop.went += [(0.0, t.order) for t in tickets if t.gone]
    while len(loop.went) < size and loop.turns < 20 * size:
        loop.turn(extra=extras[loop.turns % len(extras)])
    assert len(loop.went) == size
    assert [order for _, order in loop.went] == sorted(order for _, order in loop.went)
    moved = list(zip(_per_turn_and_left(loop, size), loop.retrying, strict=True))[2:]
    for i, ((gone, left), retrying) in enumerate(moved):
        if retrying:
            assert gone >= min(limit, retrying, left), loop.per_turn
        else:
            assert gone >= min(limit, left), loop.per_turn
        if retrying and gone < min(limit, left) and i + 1 < len(moved):
            (after, left_after), _ = moved[i + 1]
            assert after >= min(limit, left_after), loop.per_turn
    assert most_in_any_window([t for t, _ in loop.went], WINDOW) <= limit


def _hog(turns: list[float], every: float) -> Callable[[], None]:
    """Block the running loop for ``every`` seconds each turn (a busy process), noting each
    turn's end in ``turns``; returns the function that stops it."""
    loop = asyncio.get_running_loop()
    handle: list[asyncio.Handle] = []

    def block() -> None:
        time.sleep(every)
        turns.append(loop.time())
        handle[0] = loop.call_soon(block)

    handle.append(loop.call_soon(block))
    return lambda: handle[0].cancel()


async def test_take_turn_on_a_loop_of_long_turns_moves_a_window_a_turn(pacing_on: None) -> None:
    """A real event loop whose every turn blocks for 120 ms: 60 attempts, 10 a window, go in
    about one turn per window (the old rule took two or three turns per window: the timer's
    turn, then asyncio.wait's, then the run's), and no 100 ms holds more than 10 of them."""
    async with asyncio.timeout(20):
        loop = asyncio.get_running_loop()
        policy = ResumePolicy(process_reconnect_burst=10, process_reconnect_share=0.0)
        went: list[float] = []
        turns: list[float] = []

        async def attempt() -> None:
            assert await take_turn(policy)
            went.append(loop.time())

        stop = _hog(turns, 0.12)
        try:
            began = len(turns)
            await asyncio.gather(*(attempt() for _ in range(60)))
            took = len(turns) - began
        finally:
            stop()
        assert len(went) == 60
        assert most_in_any_window(went, WINDOW) <= 10
        assert took <= 6 + 4, (took, pacer_for(loop).schedule.ahead)
