"""Whether the model is working (pure): ``interactionStatus`` read with each ``turnComplete``,
and the statuses read from raw frames given back in reading order."""

from __future__ import annotations

import enum

from hypothesis import given
from hypothesis import strategies as st

from adk_live_resume.model_work import FrameStatuses, ModelWork, status_name


class _Status(enum.Enum):  # google-genai's InteractionStatus has this shape
    IN_PROGRESS = "IN_PROGRESS"
    IDLE = "IDLE"


def test_an_utterance_ended_while_the_work_goes_on_does_not_finish_the_turn() -> None:
    work = ModelWork()
    assert not work.working
    work.output()
    assert work.working
    assert not work.turn_complete("IN_PROGRESS")
    assert work.working and work.in_progress
    work.output()  # the answer, after the work
    assert work.turn_complete("IDLE")
    assert not work.working and not work.in_progress


def test_without_a_status_a_turn_complete_finishes_the_turn_as_before() -> None:
    work = ModelWork()
    work.output()
    assert work.turn_complete(None) and not work.working
    work.turn_complete("IN_PROGRESS")
    assert work.turn_complete() and not work.in_progress, "a server that stops sending it"


def test_statuses_by_kind() -> None:
    for finishing in ("IDLE", "INTERACTION_STATUS_UNSPECIFIED", "idle", _Status.IDLE, ""):
        assert ModelWork().turn_complete(finishing), finishing
    for going_on in ("IN_PROGRESS", "REQUIRES_ACTION", _Status.IN_PROGRESS, "SOME_NEW_STATUS"):
        assert not ModelWork().turn_complete(going_on), going_on
    assert status_name(_Status.IN_PROGRESS) == "IN_PROGRESS" and status_name(None) is None


def test_an_interruption_ends_the_output_not_the_status() -> None:
    work = ModelWork()
    work.output()
    work.interrupted()
    assert not work.working
    work.turn_complete("IN_PROGRESS")
    work.interrupted()
    assert work.working and work.in_progress


_EVENTS = st.lists(
    st.one_of(
        st.just(("output", None)),
        st.just(("interrupted", None)),
        st.tuples(
            st.just("turn_complete"),
            st.sampled_from([None, "IDLE", "IN_PROGRESS", "REQUIRES_ACTION", "X"]),
        ),
    ),
    max_size=30,
)


@given(_EVENTS)
def test_working_is_output_since_the_last_finishing_turn_end_or_a_status_going_on(
    events: list[tuple[str, str | None]],
) -> None:
    work = ModelWork()
    output = status_going_on = False
    for kind, status in events:
        if kind == "output":
            work.output()
            output = True
        elif kind == "interrupted":
            work.interrupted()
            output = False
        else:
            finished = work.turn_complete(status)
            status_going_on = status not in (None, "IDLE")
            assert finished == (not status_going_on)
            output = output and status_going_on
        assert work.in_progress == status_going_on
        assert work.working == (output or status_going_on)


def test_frame_statuses_come_back_with_the_message_they_came_in() -> None:
    statuses = FrameStatuses()
    assert statuses.read() is None  # not counting yet: nothing is given back
    statuses.arrived("IN_PROGRESS")
    assert statuses.read() is None
    statuses.start()
    for status in (None, "IN_PROGRESS", None, "IDLE"):
        statuses.arrived(status)
    assert [statuses.read() for _ in range(4)] == [None, "IN_PROGRESS", None, "IDLE"]
    assert statuses.read() is None


@given(st.lists(st.one_of(st.none(), st.sampled_from(["IDLE", "IN_PROGRESS"])), max_size=20))
def test_frame_statuses_never_run_ahead_of_reading(arrivals: list[str | None]) -> None:
    statuses = FrameStatuses()
    statuses.start()
    for status in arrivals:
        statuses.arrived(status)
    assert [statuses.read() for _ in arrivals] == arrivals
