"""Whether the model is working (pure): ``interactionStatus`` read with each ``turnComplete``,
and the statuses read from raw frames given back in reading order."""

from __future__ import annotations

import enum
from types import SimpleNamespace

from google.genai import types
from hypothesis import given
from hypothesis import strategies as st

from adk_live_resume.conversation.model_work import (
    WORK_KEY,
    FrameStatuses,
    ModelWork,
    TurnEnd,
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


# -- one message at a time: ModelWork.read ---------------------------------------------------


def _message(
    *,
    text: str | None = None,
    transcription: str | None = None,
    tool_call: bool = False,
    interrupted: bool = False,
    generation_complete: bool = False,
    turn_complete: bool = False,
) -> types.LiveServerMessage:
    """A server message as google-genai gives it."""
    if tool_call:
        call = types.FunctionCall(id="c1", name="lookup", args={})
        return types.LiveServerMessage(tool_call=types.LiveServerToolCall(function_calls=[call]))
    content = types.LiveServerContent(
        model_turn=types.Content(role="model", parts=[types.Part(text=text)]) if text else None,
        output_transcription=types.Transcription(text=transcription) if transcription else None,
        interrupted=interrupted or None,
        generation_complete=generation_complete or None,
        turn_complete=turn_complete or None,
    )
    return types.LiveServerMessage(server_content=content)


def test_a_turn_read_message_by_message() -> None:
    work = ModelWork()
    assert work.read(_message(text="one")) is None
    assert work.turn_open and work.reply_streams and work.output_in_turn and work.working
    assert work.read(_message(generation_complete=True)) is None
    assert not work.reply_streams and work.turn_open, "the reply ended, not the turn"
    end = work.read(_message(turn_complete=True), "IN_PROGRESS")
    assert end == TurnEnd(finished=False)
    assert not work.turn_open and work.output_in_turn and work.working and work.in_progress
    work.read(_message(transcription="the answer"))
    assert work.read(_message(turn_complete=True), "IDLE") == TurnEnd(True, had_output=True)
    assert not (work.turn_open or work.output_in_turn or work.working or work.in_progress)
    assert work.read(_message(turn_complete=True)) == TurnEnd(True, had_output=False)


def test_a_status_on_a_message_of_the_turn_says_the_model_works_until_the_turn_ends() -> None:
    work = ModelWork()
    work.read(_message(interrupted=True), "IN_PROGRESS")
    assert work.working and not work.in_progress, "working, though no turnComplete said so"
    work.read(_message(interrupted=True))
    assert work.working, "a message without a status changes nothing"
    work.read(_message(interrupted=True), "IDLE")
    assert not work.working
    work.read(_message(interrupted=True), "IN_PROGRESS")
    work.read(_message(turn_complete=True), "IDLE")
    assert not work.working, "the turn's end says what holds"


def test_a_tool_call_ends_the_reply_and_the_output_not_the_turn() -> None:
    work = ModelWork()
    work.read(_message(text="let me look"))
    assert work.read(_message(tool_call=True)) is None
    assert not work.reply_streams and not work.working and work.turn_open
    work.read(_message(interrupted=True))
    assert not work.turn_open


_MESSAGES = st.lists(
    st.tuples(
        st.sampled_from(["text", "transcription", "tool_call", "nothing"]),
        st.booleans(),  # interrupted
        st.booleans(),  # generationComplete
        st.booleans(),  # turnComplete
        st.sampled_from([None, "IDLE", "IN_PROGRESS", "X"]),
    ),
    max_size=25,
)


@given(_MESSAGES)
def test_reading_a_message_is_its_steps_in_order(
    messages: list[tuple[str, bool, bool, bool, str | None]],
) -> None:
    work, steps = ModelWork(), ModelWork()
    turn_open = output_in_turn = streams = said_working = False
    for kind, interrupted, generation_complete, turn_complete, status in messages:
        if kind == "tool_call":
            message = _message(tool_call=True)
            interrupted = generation_complete = turn_complete = False
        else:
            message = _message(
                text="hi" if kind == "text" else None,
                transcription="hi" if kind == "transcription" else None,
                interrupted=interrupted,
                generation_complete=generation_complete,
                turn_complete=turn_complete,
            )
        end = work.read(message, status)
        # the same message as the connection's flags and the step methods read it, in order
        if kind == "tool_call":
            steps.tool_call()
            streams = False
        elif kind != "nothing":
            steps.output()
            turn_open = output_in_turn = streams = True
        if interrupted:
            steps.interrupted()
        if interrupted or turn_complete:
            turn_open = False
        if interrupted or turn_complete or generation_complete:
            streams = False
        if turn_complete:
            finished = steps.turn_complete(status)
            assert end == TurnEnd(finished, finished and output_in_turn)
            output_in_turn = output_in_turn and not finished
            said_working = False
        else:
            assert end is None
            if status is not None and kind != "tool_call":
                said_working = status == "IN_PROGRESS"
        assert (work.turn_open, work.output_in_turn, work.reply_streams) == (
            turn_open,
            output_in_turn,
            streams,
        )
        assert work.working == (steps.working or said_working)
        assert (work.in_progress, work.holds_move, work.unknown) == (
            steps.in_progress,
            steps.holds_move,
            steps.unknown,
        )
