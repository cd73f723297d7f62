"""The phases of a run's start (pure rules, clocks passed in): each phase's first end counts,
each is timed from the end of the one before, and the first answer tells it once."""

from __future__ import annotations

import logging

import pytest

from adk_live_resume.observe.run_timeline import PHASES, RunTimeline


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _timeline(clock: Clock) -> RunTimeline:
    return RunTimeline("s-1", wall_clock=lambda: 1_700_000_000.25, clock=clock)


def test_each_phase_is_timed_from_the_end_of_the_one_before() -> None:
    clock = Clock()
    timeline = _timeline(clock)
    for step, phase in enumerate(PHASES[:-1], start=1):
        clock.now += step / 1000  # 1 ms, 2 ms, 3 ms, 4 ms
        timeline.mark(phase)
    assert timeline.durations_ms() == pytest.approx(
        {"request": 1.0, "handle": 2.0, "connect": 3.0, "restore": 4.0}
    )
    assert timeline.started_at == 1_700_000_000.25


def test_only_the_first_end_of_a_phase_counts() -> None:
    clock = Clock()
    timeline = _timeline(clock)
    clock.now += 0.010
    timeline.mark("request")
    clock.now += 0.500  # a fresh start rebuilds the request again: not the run's start
    timeline.mark("request")
    timeline.mark("handle")
    assert timeline.durations_ms() == pytest.approx({"request": 10.0, "handle": 500.0})


def test_a_phase_not_reached_ends_the_chain() -> None:
    clock = Clock()
    timeline = _timeline(clock)
    timeline.mark("request")
    timeline.mark("connect")  # (no handle phase: the chain stops before it)
    assert list(timeline.durations_ms()) == ["request"]
    with pytest.raises(ValueError, match="unknown phase 'dial'"):
        timeline.mark("dial")


def test_the_first_answer_tells_the_phases_once_at_debug(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    timeline = _timeline(clock)
    with caplog.at_level(logging.DEBUG, logger="adk_live_resume.timeline"):
        for phase in PHASES:
            clock.now += 0.002
            timeline.mark(phase)
        timeline.tell()  # (the run's end: told already)
        timeline.mark("answer")
    lines = [r.getMessage() for r in caplog.records if r.name == "adk_live_resume.timeline"]
    assert lines == [
        "session s-1: run started at 1700000000.250; request 2.0 ms, handle 2.0 ms,"
        " connect 2.0 ms, restore 2.0 ms, answer 2.0 ms"
    ]


def test_a_run_that_ends_before_an_answer_tells_what_it_reached(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    timeline = _timeline(clock)
    with caplog.at_level(logging.DEBUG, logger="adk_live_resume.timeline"):
        clock.now += 0.001
        timeline.mark("request")
        timeline.tell()
        timeline.tell()
    assert [r.getMessage() for r in caplog.records] == [
        "session s-1: run started at 1700000000.250; request 1.0 ms"
    ]
