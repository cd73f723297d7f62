"""Whether the model is working (pure): ``interactionStatus`` read with each ``turnComplete``,
and the statuses read from raw frames given back in reading order."""

from __future__ import annotations

import enum
from types import SimpleNamespace

from hypothesis import given
from hypothesis import strategies as st

from adk_live_resume.conversation.model_work import (
    WORK_KEY,
    FrameStatuses,
    ModelWork,
    WorkingLabels,
    is_working,
    label_working,
    status_name,
    unfinished_work,
)


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
    finishing_statuses = ("IDLE", "INTERACTION_STATUS_UNSPECIFIED", "idle", _Status.IDLE, "")
    for finishing in (*finishing_statuses, "REQUIRES_ACTION", "requires_action"):
        assert ModelWork().turn_complete(finishing), finishing
    for going_on in ("IN_PROGRESS", _Status.IN_PROGRESS):
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


def test_requires_action_finishes_the_turn_as_idle_does() -> None:
    # "Deprecated: Use IDLE instead. The server has completed all processing and background
    # reasoning" (the API reference; google-genai 3.6.1)
    work = ModelWork()
    work.output()
    assert work.turn_complete("REQUIRES_ACTION")
    assert not work.in_progress and not work.working and work.unknown is None


def test_an_unknown_status_finishes_the_turn_and_holds_a_move_for_one_answers_time() -> None:
    work = ModelWork()
    work.output()
    assert work.turn_complete("SOME_NEW_STATUS"), "what was said is answered"
    assert not work.in_progress and not work.working and work.unknown == "SOME_NEW_STATUS"
    assert work.holds_move
    assert work.unknown_expired()
    assert not work.holds_move and work.unknown is None
    assert not work.unknown_expired(), "held only once"
    work.turn_complete("SOME_NEW_STATUS")
    work.turn_complete("IDLE")
    assert not work.holds_move, "the next turnComplete says what holds"
    work.turn_complete("IN_PROGRESS")
    assert not work.unknown_expired() and work.holds_move, "IN_PROGRESS is no unknown status"


_EVENTS = st.lists(
    st.one_of(
        st.sampled_from([("output", None), ("interrupted", None), ("tool_call", None)]),
        st.tuples(
            st.just("turn_complete"),
            st.sampled_from([None, "IDLE", "IN_PROGRESS", "REQUIRES_ACTION", "X"]),
        ),
    ),
    max_size=30,
)


@given(_EVENTS)
def test_the_readings_follow_the_last_status_and_the_output_since_the_turn_ended(
    events: list[tuple[str, str | None]],
) -> None:
    work = ModelWork()
    output, last, unknown = False, None, None
    for kind, status in events:
        if kind == "output":
            work.output()
            output = True
        elif kind in ("interrupted", "tool_call"):
            getattr(work, kind)()
            output = False
        else:
            finished = work.turn_complete(status)
            last = "IN_PROGRESS" if status == "IN_PROGRESS" else None
            unknown = status if status == "X" else None
            assert finished == (last is None)
            output = output and last is not None
        assert work.in_progress == (last is not None)
        assert work.working == (output or last == "IN_PROGRESS")
        assert work.unknown == unknown
        assert work.holds_move == (last is not None or unknown is not None)


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


# -- working utterances in the ADK session ------------------------------------------------


def _said(text: str, *, working: bool = False) -> SimpleNamespace:
    event = SimpleNamespace(
        author="assistant",
        content=SimpleNamespace(parts=[SimpleNamespace(text=text)]),
        custom_metadata={"other": 1},
    )
    if working:
        label_working(event, "IN_PROGRESS")
    return event


def _user(text: str) -> SimpleNamespace:
    return SimpleNamespace(
        author="user", content=SimpleNamespace(parts=[SimpleNamespace(text=text)])
    )


def test_a_label_keeps_the_events_other_metadata_and_says_it_was_working() -> None:
    event = _said("working on: two", working=True)
    assert is_working(event) and event.custom_metadata["other"] == 1
    assert event.custom_metadata[WORK_KEY] == "IN_PROGRESS"
    assert not is_working(_said("echo: two")) and not is_working(SimpleNamespace())


def test_the_unfinished_work_is_the_working_utterances_after_the_last_answer() -> None:
    turn_end = SimpleNamespace(author="assistant", content=None)
    response = SimpleNamespace(
        author="assistant",
        content=SimpleNamespace(parts=[SimpleNamespace(text=None, function_response=object())]),
    )
    spoken = SimpleNamespace(
        author="assistant",
        content=None,
        output_transcription=SimpleNamespace(text="still at it"),
        custom_metadata={WORK_KEY: "IN_PROGRESS"},
    )
    events = [
        _user("one"),
        _said("working on: one", working=True),  # its work finished: not unfinished
        _said("echo: one"),
        _user("two"),
        _said("working on: two", working=True),
        turn_end,
        response,
        spoken,
    ]
    assert unfinished_work(events) == ["working on: two", "still at it"]
    assert unfinished_work(events[:3]) == []
    assert unfinished_work([]) == []


def test_working_labels_go_on_what_is_built_from_a_working_utterances_turn_complete() -> None:
    labels = WorkingLabels()
    built = _said("working on: two")
    labels.message_read()
    labels.work_goes_on("IN_PROGRESS")
    labels.label(built)
    partial = _said("working on")
    partial.partial = True  # type: ignore[attr-defined]
    labels.label(partial)
    labels.label(_user("two"))
    assert is_working(built) and not is_working(partial)
    labels.message_read()  # (the next message ends no working utterance)
    answer = _said("echo: two")
    labels.label(answer)
    assert not is_working(answer)
