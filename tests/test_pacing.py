"""The process-wide reconnect pacer: a lone drop at once, a herd spread, deadlines kept.

:class:`PacerSchedule` is pure (times are passed in), so most of these tests need no clock
at all; the asyncio glue is checked on a real event loop with waits of a few milliseconds.
"""

from __future__ import annotations

import asyncio
import bisect
import itertools
import random

import pytest

from adk_live_resume import ResumePolicy, set_testing
from adk_live_resume.pacing import PacerSchedule, pacer_for, take_turn


@pytest.fixture
def pacing_on() -> None:
    """These tests need the waits the testing switch turns off (conftest turns it on)."""
    set_testing(False)


def drain(schedule: PacerSchedule, until: float, step: float = 0.001) -> list[float]:
    """Start times of everything let through, waking every ``step`` s up to ``until``."""
    starts: list[float] = []
    now = 0.0
    while now <= until:
        starts += [t.started for t in schedule.let_through(now) if t.started is not None]
        now += step
    return starts


def most_in_any_window(times: list[float], width: float) -> int:
    """The most ``times`` in any window ``[t, t + width)`` that starts at one of them."""
    ordered = sorted(times)
    return max(bisect.bisect_left(ordered, t + width) - i for i, t in enumerate(ordered))


def test_a_lone_attempt_in_a_quiet_process_starts_at_once(pacing_on: None) -> None:
    schedule = PacerSchedule()
    ticket = schedule.arrive(100.0, 250.0, 20)
    assert ticket.started == 100.0
    assert (schedule.started, schedule.paced, schedule.waiting) == (1, 0, 0)


def test_up_to_burst_attempts_at_once_never_wait(pacing_on: None) -> None:
    schedule = PacerSchedule()
    tickets = [schedule.arrive(5.0, 100.0, 10) for _ in range(10)]
    assert all(t.started == 5.0 for t in tickets)
    assert schedule.arrive(5.0, 100.0, 10).started is None
    assert schedule.waiting == 1


def test_a_herd_is_let_through_in_order_at_the_rate(pacing_on: None) -> None:
    schedule = PacerSchedule()
    tickets = [schedule.arrive(0.0, 100.0, 10) for _ in range(60)]
    starts = drain(schedule, until=1.0)
    assert len(starts) == 50 and schedule.waiting == 0
    assert [t.started for t in tickets] == sorted(t.started for t in tickets)  # FIFO
    assert schedule.paced == 50
    # once the burst is used up, one start per 1/rate = 10 ms
    gaps = {round(b - a, 3) for a, b in itertools.pairwise(starts)}
    assert gaps == {0.01}


@pytest.mark.parametrize(("rate", "burst"), [(250.0, 20), (100.0, 1), (1000.0, 50)])
def test_no_window_holds_more_than_burst_plus_rate_times_its_length(
    pacing_on: None, rate: float, burst: int
) -> None:
    rng = random.Random(7)
    schedule = PacerSchedule()
    arrivals = sorted(rng.uniform(0.0, 2.0) for _ in range(1000))
    starts: list[float] = []
    now = 0.0
    for arrival in arrivals:
        while now < arrival:  # a loop that wakes every 3 ms
            starts += [t.started for t in schedule.let_through(now) if t.started is not None]
            now += 0.003
        ticket = schedule.arrive(now, rate, burst)
        if ticket.started is not None:
            starts.append(ticket.started)
    starts += drain(schedule, until=now + 1000 / rate + 1)
    assert len(starts) == 1000
    for width in (0.01, 0.1, 0.5):
        assert most_in_any_window(starts, width) <= burst + int(width * rate) + 1


def test_a_late_wake_lets_at_most_burst_through(pacing_on: None) -> None:
    """An event loop that falls behind (a garbage collection) does not release a spike."""
    schedule = PacerSchedule()
    for _ in range(200):
        schedule.arrive(0.0, 250.0, 20)
    assert len(schedule.let_through(0.5)) == 20  # 0.5 s late: 125 turns came, 20 go
    assert schedule.let_through(0.5) == []
    assert schedule.next_turn() == pytest.approx(0.504)


def test_a_deadline_lets_a_ticket_through_out_of_turn_and_it_still_counts(
    pacing_on: None,
) -> None:
    schedule = PacerSchedule()
    for _ in range(30):
        schedule.arrive(0.0, 100.0, 1)
    rotation = schedule.arrive(0.0, 100.0, 1, latest=0.05)
    assert schedule.next_turn() == pytest.approx(0.01)
    started_at_deadline = schedule.let_through(0.05)
    assert rotation in started_at_deadline and rotation.started == 0.05
    before = schedule.next_turn()
    assert before is not None and before > 0.05  # the others wait for the rotation's slot


def test_a_cancelled_ticket_leaves_the_queue(pacing_on: None) -> None:
    schedule = PacerSchedule()
    schedule.arrive(0.0, 10.0, 1)
    waiting = schedule.arrive(0.0, 10.0, 1)
    schedule.cancel(waiting)
    assert schedule.waiting == 0 and schedule.next_turn() is None
    schedule.cancel(waiting)  # twice is harmless
    assert schedule.let_through(10.0) == []


def test_rate_zero_and_the_testing_switch_turn_pacing_off() -> None:
    schedule = PacerSchedule()
    set_testing(True)
    assert all(schedule.arrive(0.0, 1.0, 1).started == 0.0 for _ in range(100))
    set_testing(False)
    assert all(schedule.arrive(0.0, 0.0, 1).started == 0.0 for _ in range(100))
    assert schedule.started == 0  # neither counted


def test_runs_with_different_policies_share_one_schedule(pacing_on: None) -> None:
    schedule = PacerSchedule()
    assert schedule.arrive(0.0, 1000.0, 1).started == 0.0
    slow = schedule.arrive(0.0, 10.0, 1)  # its own spacing, after the fast one's slot
    assert slow.started is None
    assert schedule.next_turn() == pytest.approx(0.001)


def test_bad_parameters_are_refused() -> None:
    with pytest.raises(ValueError, match="rate >= 0 and burst >= 1"):
        PacerSchedule().arrive(0.0, 10.0, 0)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"process_reconnect_rate": -1.0}, "process_reconnect_rate must be >= 0"),
        ({"process_reconnect_burst": 0}, "process_reconnect_burst must be >= 1"),
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
        policy = ResumePolicy(process_reconnect_rate=1000.0, process_reconnect_burst=2)
        loop = asyncio.get_running_loop()
        started: list[float] = []

        async def attempt() -> None:
            assert await take_turn(policy)
            started.append(loop.time())

        await asyncio.gather(*(attempt() for _ in range(12)))
        assert len(started) == 12
        assert max(started) - min(started) >= 0.009  # 10 paced turns, 1 ms apart
        assert pacer_for(loop).schedule.paced >= 10

        # a run closed while it waits gives its place up and returns False
        closers: list[object] = []

        def on_close(callback: object) -> object:
            closers.append(callback)
            return lambda: None

        slow = ResumePolicy(process_reconnect_rate=1.0, process_reconnect_burst=1)
        assert await take_turn(slow)  # may or may not wait for the herd's last slot
        waiting = asyncio.ensure_future(take_turn(slow, on_close=on_close))  # type: ignore[arg-type]
        await asyncio.sleep(0.01)
        assert not waiting.done() and pacer_for(loop).schedule.waiting == 1
        closers[0]()  # type: ignore[operator]
        assert await waiting is False
        assert pacer_for(loop).schedule.waiting == 0


async def test_a_deadline_bound_turn_never_waits_past_its_deadline(pacing_on: None) -> None:
    async with asyncio.timeout(5):
        loop = asyncio.get_running_loop()
        slow = ResumePolicy(process_reconnect_rate=0.5, process_reconnect_burst=1)
        assert await take_turn(slow)  # the next slot is 2 s away
        asked = loop.time()
        assert await take_turn(slow, latest=asked + 0.02)
        assert loop.time() - asked < 1.0
