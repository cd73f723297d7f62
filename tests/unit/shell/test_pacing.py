"""The process-wide reconnect pacer: a lone drop at once, a herd spread, deadlines kept.

:class:`PacerSchedule` is pure (times are passed in), so most of these tests need no clock
at all; the asyncio glue is checked on a real event loop with waits of a few milliseconds.
"""

from __future__ import annotations

import asyncio
import bisect
import random

import pytest

from adk_live_resume import ResumePolicy, set_testing
from adk_live_resume.shell.pacing import WINDOW, PacerSchedule, Ticket, pacer_for, take_turn


@pytest.fixture
def pacing_on() -> None:
    """These tests need the waits the testing switch turns off (conftest turns it on)."""
    set_testing(False)


def drain(
    schedule: PacerSchedule, until: float, step: float = 0.001, now: float = 0.0
) -> list[float]:
    """Start times of everything let through, waking every ``step`` s from ``now`` to ``until``
    (each run goes on as soon as it is let through)."""
    starts: list[float] = []
    while now <= until:
        starts += go(schedule, schedule.let_through(now), now)
        now += step
    return starts


def go(schedule: PacerSchedule, tickets: list[Ticket], now: float) -> list[float]:
    """The runs of ``tickets`` go on at ``now``; their start times."""
    for ticket in tickets:
        schedule.go(ticket, now)
    return [now for _ in tickets]


def most_in_any_window(times: list[float], width: float) -> int:
    """The most ``times`` in any window ``[t, t + width)`` that starts at one of them."""
    ordered = sorted(times)
    return max(bisect.bisect_left(ordered, t + width) - i for i, t in enumerate(ordered))


def test_a_lone_attempt_in_a_quiet_process_starts_at_once(pacing_on: None) -> None:
    schedule = PacerSchedule()
    ticket = schedule.arrive(100.0, 1000.0, 20, 0.08)
    assert ticket.started == 100.0
    assert (schedule.started, schedule.paced, schedule.waiting, schedule.herd) == (1, 0, 0, 1)


def test_up_to_burst_attempts_at_once_never_wait(pacing_on: None) -> None:
    schedule = PacerSchedule()
    tickets = [schedule.arrive(5.0, 1000.0, 10, 0.08) for _ in range(10)]
    assert all(t.started == 5.0 for t in tickets)
    assert schedule.arrive(5.0, 1000.0, 10, 0.08).started is None
    assert schedule.waiting == 1


def test_a_herd_is_let_through_in_order_one_window_at_a_time(pacing_on: None) -> None:
    schedule = PacerSchedule()
    tickets = [schedule.arrive(0.0, 1000.0, 10, 0.05) for _ in range(60)]
    assert schedule.limit(tickets[0]) == 10  # 5% of a herd of 60 is 3: the burst wins
    starts = drain(schedule, until=1.0)
    assert len(starts) == 50 and schedule.waiting == 0 and schedule.paced == 50
    assert [t.started for t in tickets] == sorted(t.started for t in tickets)  # FIFO
    # 10 at once, then 10 more each time the window has moved on
    assert sorted(set(t.started for t in tickets)) == pytest.approx([0.0, 0.1, 0.2, 0.3, 0.4, 0.5])


def test_the_window_grows_with_the_herd_up_to_the_rate_ceiling(pacing_on: None) -> None:
    schedule = PacerSchedule()
    tickets = [schedule.arrive(0.0, 1000.0, 20, 0.08) for _ in range(500)]
    assert schedule.limit(tickets[0]) == 40  # 8% of 500
    assert len([t for t in tickets if t.started is not None]) == 20  # the herd was not known yet
    assert len(go(schedule, schedule.let_through(0.0), 0.0)) == 20  # now the window takes 40
    assert schedule.let_through(0.05) == []
    assert len(go(schedule, schedule.let_through(0.1), 0.1)) == 40
    for _ in range(2000):
        schedule.arrive(0.1, 1000.0, 20, 0.08)
    assert schedule.limit(tickets[0]) == 100  # 8% of 2,500 is 200: the ceiling (1000/s) wins


def test_a_late_wake_lets_a_whole_window_through(pacing_on: None) -> None:
    """An event loop that falls behind (a busy process, a garbage collection) does not slow
    the herd down below one window's worth per wake, and never lets more than that through."""
    schedule = PacerSchedule()
    for _ in range(200):
        schedule.arrive(0.0, 1000.0, 20, 0.25)
    assert len(go(schedule, schedule.let_through(0.0), 0.0)) == 30  # 25% of 200 = 50
    late = schedule.let_through(0.5)
    assert len(late) == 50  # 0.5 s late: one window's worth, not more
    assert schedule.let_through(0.5) == []
    assert schedule.next_turn() is None  # their runs have not gone on yet: ask again then
    go(schedule, late, 0.55)  # a busy loop: they go a while after they were let through
    assert schedule.ahead == pytest.approx(0.05)  # the delay it measured: one loop turn
    # the window counts when they went (to 0.65), and the next ones are let through one
    # measured loop turn ahead of that
    assert schedule.next_turn() == pytest.approx(0.65 - 0.05)


@pytest.mark.parametrize(
    ("rate", "burst", "share"), [(1000.0, 20, 0.08), (100.0, 1, 1.0), (50.0, 3, 0.0)]
)
def test_no_window_holds_more_than_the_limit(
    pacing_on: None, rate: float, burst: int, share: float
) -> None:
    rng = random.Random(7)
    schedule = PacerSchedule()
    arrivals = sorted(rng.uniform(0.0, 2.0) for _ in range(1000))
    starts: list[float] = []
    now = 0.0
    for arrival in arrivals:
        while now < arrival:  # a loop that wakes every 3 ms, now and then 150 ms late
            starts += go(schedule, schedule.let_through(now), now)
            now += 0.15 if rng.random() < 0.02 else 0.003
        ticket = schedule.arrive(now, rate, burst, share)
        if ticket.started is not None:
            starts.append(ticket.started)
    limit = max(burst, min(int(share * 1000), int(rate * WINDOW)))
    starts += drain(schedule, until=now + 1000 / limit * WINDOW + 1, step=0.003, now=now)
    assert len(starts) == 1000 and schedule.herd == 1000
    assert most_in_any_window(starts, WINDOW) == limit  # the herd filled the window, no more
    assert most_in_any_window(starts, 5 * WINDOW) <= 5 * limit


def test_the_herd_starts_over_once_the_process_is_calm(pacing_on: None) -> None:
    schedule = PacerSchedule()
    for _ in range(100):
        schedule.arrive(0.0, 1000.0, 5, 0.5)
    drain(schedule, until=0.12)
    assert schedule.herd == 100 and schedule.waiting == 0
    assert schedule.arrive(0.15, 1000.0, 5, 0.5).started is None  # the last 50 went at 0.1
    assert schedule.herd == 101 and len(go(schedule, schedule.let_through(0.25), 0.25)) == 1
    assert schedule.arrive(1.0, 1000.0, 5, 0.5).started == 1.0  # calm for a window: new herd
    assert schedule.herd == 1


def test_a_deadline_lets_a_ticket_through_out_of_turn_and_it_still_counts(
    pacing_on: None,
) -> None:
    schedule = PacerSchedule()
    for _ in range(30):
        schedule.arrive(0.0, 1000.0, 1, 0.0)
    move = schedule.arrive(0.0, 1000.0, 1, 0.0, latest=0.05)
    assert schedule.next_turn() == pytest.approx(0.05)  # before the window's 0.1
    started_at_deadline = schedule.let_through(0.05)
    assert started_at_deadline == [move] and move.started == 0.05
    go(schedule, started_at_deadline, 0.05)
    assert schedule.let_through(0.1) == []  # the move still holds the window
    assert schedule.next_turn() == pytest.approx(0.15)


def test_a_ticket_let_through_holds_its_place_until_its_run_goes_or_gives_up(
    pacing_on: None,
) -> None:
    schedule = PacerSchedule()
    assert schedule.arrive(0.0, 1000.0, 1, 0.0).started == 0.0  # went at once
    second = schedule.arrive(0.0, 1000.0, 1, 0.0)
    third = schedule.arrive(0.0, 1000.0, 1, 0.0)
    assert schedule.let_through(0.1) == [second]
    assert schedule.let_through(0.3) == [] and schedule.next_turn() is None  # not gone yet
    schedule.cancel(second)  # its run ended before it went: the place is free
    assert schedule.let_through(0.3) == [third]
    schedule.go(third, 0.35)
    schedule.go(third, 0.5)  # twice is harmless
    assert schedule.arrive(0.4, 1000.0, 1, 0.0).started is None  # third's window: to 0.45
    # third went 0.05 s after it was let through: the next is let through that much ahead
    assert schedule.next_turn() == pytest.approx(0.45 - 0.05)


def test_the_queue_behind_a_held_run_waits_until_it_goes(pacing_on: None) -> None:
    """A run let through ahead of its time that finds the window full is held; until it goes,
    nobody behind it is let through, even when the window has room again: a run let through
    then would be scheduled before the held run's retry and go first (the order of asking)."""
    schedule = PacerSchedule()
    for _ in range(2):  # limit 2 (burst 2, no share): two go at once and fill the window
        assert schedule.arrive(0.0, 1000.0, 2, 0.0).started == 0.0
    first, held, behind = (schedule.arrive(0.0, 1000.0, 2, 0.0) for _ in range(3))
    schedule.ahead = 0.05  # a measured loop turn: let through 50 ms ahead of their time
    assert schedule.let_through(0.06) == [first, held]  # the window frees at 0.1
    assert not schedule.go(first, 0.06) and not schedule.go(held, 0.06)  # too early: held
    assert schedule.go(first, 0.1)  # goes on its retry; ``held`` has not retried yet
    # at 0.2 the window holds nothing and has room, but ``held`` still holds its place
    assert schedule.let_through(0.2) == []
    assert schedule.go(held, 0.2)
    assert schedule.let_through(0.2) == [behind]
    assert schedule.go(behind, 0.2)


def test_a_cancelled_ticket_leaves_the_queue(pacing_on: None) -> None:
    schedule = PacerSchedule()
    schedule.arrive(0.0, 10.0, 1, 0.0)
    waiting = schedule.arrive(0.0, 10.0, 1, 0.0)
    schedule.cancel(waiting)
    assert schedule.waiting == 0 and schedule.next_turn() is None
    schedule.cancel(waiting)  # twice is harmless
    assert schedule.let_through(10.0) == []


def test_rate_zero_and_the_testing_switch_turn_pacing_off() -> None:
    schedule = PacerSchedule()
    set_testing(True)
    assert all(schedule.arrive(0.0, 1.0, 1, 0.0).started == 0.0 for _ in range(100))
    set_testing(False)
    assert all(schedule.arrive(0.0, 0.0, 1, 0.0).started == 0.0 for _ in range(100))
    assert schedule.started == 0 and schedule.herd == 0  # neither counted


def test_runs_with_different_policies_share_one_window(pacing_on: None) -> None:
    schedule = PacerSchedule()
    assert schedule.arrive(0.0, 1000.0, 2, 0.0).started == 0.0
    assert schedule.arrive(0.0, 1000.0, 2, 0.0).started == 0.0
    strict = schedule.arrive(0.0, 1000.0, 1, 0.0)  # the window already holds more than 1
    assert strict.started is None
    assert schedule.next_turn() == pytest.approx(0.1)
    assert schedule.arrive(0.0, 1000.0, 5, 0.0).started is None  # behind it in the queue


def test_bad_parameters_are_refused() -> None:
    with pytest.raises(ValueError, match="rate >= 0, burst >= 1 and 0 <= share <= 1"):
        PacerSchedule().arrive(0.0, 10.0, 0, 0.1)
    with pytest.raises(ValueError, match=r"not 10\.0, 1 and 1\.5"):
        PacerSchedule().arrive(0.0, 10.0, 1, 1.5)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"process_reconnect_rate": -1.0}, "process_reconnect_rate must be >= 0"),
        ({"process_reconnect_burst": 0}, "process_reconnect_burst must be >= 1"),
        ({"process_reconnect_share": 1.5}, "process_reconnect_share must be between 0 and 1"),
        ({"first_attempt_jitter": -0.5}, "first_attempt_jitter must be >= 0"),
    ],
)
def test_the_policy_fields_are_validated(changes: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ResumePolicy(**changes)  # type: ignore[arg-type]


def test_first_attempt_jitter_is_off_by_default_and_bounded_when_on(pacing_on: None) -> None:
    rng = random.Random(3)
    assert ResumePolicy().wait_before(1, rng) == 0.0
    jittered = ResumePolicy(first_attempt_jitter=0.5)
    waits = [jittered.wait_before(1, rng) for _ in range(200)]
    assert all(0.0 <= w <= 0.5 for w in waits) and len(set(waits)) > 100
    set_testing(True)
    assert jittered.wait_before(1, rng) == 0.0


async def test_take_turn_on_a_real_loop_spreads_a_herd_and_gives_up_a_place_on_close(
    pacing_on: None,
) -> None:
    async with asyncio.timeout(5):
        policy = ResumePolicy(process_reconnect_burst=4, process_reconnect_share=0.0)
        loop = asyncio.get_running_loop()
        started: list[float] = []

        async def attempt() -> None:
            assert await take_turn(policy)
            started.append(loop.time())

        await asyncio.gather(*(attempt() for _ in range(12)))
        assert len(started) == 12
        assert max(started) - min(started) >= 2 * WINDOW - 0.01  # three windows of 4
        assert pacer_for(loop).schedule.paced >= 8

        # a run closed while it waits gives its place up and returns False
        closers: list[object] = []

        def on_close(callback: object) -> object:
            closers.append(callback)
            return lambda: None

        ahead = [asyncio.ensure_future(take_turn(policy)) for _ in range(40)]  # 1 s of turns
        waiting = asyncio.ensure_future(take_turn(policy, on_close=on_close))  # type: ignore[arg-type]
        await asyncio.sleep(0.01)
        assert not waiting.done() and pacer_for(loop).schedule.waiting >= 1
        closers[0]()  # type: ignore[operator]
        assert await waiting is False
        for each in ahead:
            each.cancel()  # their runs ended: they leave the queue too
        await asyncio.gather(*ahead, return_exceptions=True)
        assert pacer_for(loop).schedule.waiting == 0


async def test_a_deadline_bound_turn_never_waits_past_its_deadline(pacing_on: None) -> None:
    async with asyncio.timeout(5):
        loop = asyncio.get_running_loop()
        strict = ResumePolicy(process_reconnect_burst=1, process_reconnect_share=0.0)
        ahead = [asyncio.ensure_future(take_turn(strict)) for _ in range(30)]  # 3 s of turns
        await asyncio.sleep(0)
        asked = loop.time()
        assert await take_turn(strict, latest=asked + 0.02)
        assert loop.time() - asked < 1.0
        for each in ahead:
            each.cancel()
        await asyncio.gather(*ahead, return_exceptions=True)
