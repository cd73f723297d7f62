"""Video and image frames in the outbox (pure): the newest ``max_frames`` kept, however long
the model stays silent, the rest counted; a replay sends the window only, in order."""

from __future__ import annotations

from typing import Any

import pytest
from google.genai import types

from adk_live_resume.conversation.client_sends import is_frame
from adk_live_resume.conversation.frame_window import FrameWindow
from adk_live_resume.conversation.outbox import Outbox

from ...helpers import silent_audio_input, typed_turn


def frame(n: int, mime: str = "image/jpeg", key: str = "media") -> dict[str, Any]:
    """A camera frame carrying its number, as ADK sends it (``send_realtime_input``)."""
    return {key: types.Blob(data=b"\xff\xd8" + n.to_bytes(4, "big") + bytes(400), mime_type=mime)}


def numbers(messages: list[Any]) -> list[int]:
    return [int.from_bytes(m.kwargs[next(iter(m.kwargs))].data[2:6], "big") for m in messages]


@pytest.mark.parametrize(
    ("method", "kwargs", "expected"),
    [
        ("send_realtime_input", frame(1), True),
        ("send_realtime_input", frame(1, "image/png"), True),
        ("send_realtime_input", frame(1, "video/mp4", key="video"), True),
        ("send_realtime_input", {"media": {"data": "AAAA", "mimeType": "image/jpeg"}}, True),
        ("send", {"input": frame(1)["media"]}, True),
        ("send", {"input": types.LiveClientRealtimeInput(media_chunks=[frame(1)["media"]])}, True),
        ("send", {"input": types.LiveClientRealtimeInput(video=frame(1)["media"])}, True),
        ("send_realtime_input", silent_audio_input(20), False),
        ("send_realtime_input", {"media": silent_audio_input(20)["audio"]}, False),
        ("send_realtime_input", {"text": "hi"}, False),
        ("send_realtime_input", {"activity_start": types.ActivityStart()}, False),
        ("send_client_content", typed_turn("look at this"), False),
        ("send", {"input": "hello"}, False),
        (
            "send",
            {
                "input": types.LiveClientRealtimeInput(
                    media_chunks=[frame(1)["media"], silent_audio_input(20)["audio"]]
                )
            },
            False,
        ),
    ],
)
def test_a_frame_is_realtime_input_of_an_image_or_video_and_nothing_else(
    method: str, kwargs: dict[str, Any], expected: bool
) -> None:
    assert is_frame(method, kwargs) is expected


def test_a_silent_model_keeps_only_the_newest_frames_however_many_handles_come() -> None:
    """The issue's figures: 120 frames with the model silent and 16 handles meanwhile."""
    outbox = Outbox(max_frames=20)
    for n in range(120):
        outbox.record("send_realtime_input", frame(n))
        outbox.record("send_realtime_input", silent_audio_input(100))
        if n % 8 == 7:
            outbox.covered(None)  # a handle: on the Gemini API it covers nothing here
        assert outbox.frames.held <= 25  # trimmed back to 20 once it holds a quarter more
    assert outbox.frames.peak == 25
    replay = outbox.take_replay()
    frames = [m for m in replay.messages if m.frame]
    assert numbers(frames) == list(range(100, 120))  # the window only, in order
    assert replay.dropped_frames == outbox.frames.dropped_total == 100
    outbox.record("send_realtime_input", frame(120))
    assert outbox.take_replay().dropped_frames == 0  # counted once, at the replay after


def test_frames_covered_by_a_handle_leave_uncounted_and_the_window_counts_what_is_left() -> None:
    outbox = Outbox(max_frames=4)
    for n in range(3):
        outbox.record("send_realtime_input", frame(n))
    outbox.record("send_client_content", typed_turn("what do you see?"))
    outbox.model_text("a cat")
    outbox.turn_complete()
    outbox.covered(None)  # model output followed the frames: the handle holds them
    assert outbox.frames.held == 0
    for n in range(3, 9):
        outbox.record("send_realtime_input", frame(n))
    replay = outbox.take_replay()
    assert numbers([m for m in replay.messages if m.frame]) == [5, 6, 7, 8]
    assert replay.dropped_frames == 2 and outbox.frames.dropped_total == 2


def test_on_vertex_the_consumed_index_covers_frames_and_the_window_bounds_the_rest() -> None:
    outbox = Outbox(max_frames=4)
    for n in range(4):
        outbox.record("send_realtime_input", frame(n))  # messages 1..4
    outbox.covered(2)
    assert outbox.frames.held == 2
    for n in range(4, 7):
        outbox.record("send_realtime_input", frame(n))  # the fifth held: back to four
    replay = outbox.take_replay()
    assert numbers(replay.messages) == [3, 4, 5, 6] and replay.dropped_frames == 1


def test_no_frame_is_kept_with_a_window_of_zero_and_audio_and_turns_stay() -> None:
    outbox = Outbox(max_frames=0)
    outbox.record("send_realtime_input", frame(0))
    outbox.record("send_client_content", typed_turn("hello"))
    outbox.record("send_realtime_input", frame(1))
    replay = outbox.take_replay()
    assert [m.user_text for m in replay.messages] == ["hello"]
    assert replay.dropped_frames == 2 and outbox.frames.peak == 1


def test_the_window_trims_the_oldest_and_counts_them_once() -> None:
    window = FrameWindow(4)
    items = [f"f{n}" if n % 2 else f"a{n}" for n in range(12)]  # six frames among others
    for item in items:
        if item.startswith("f"):
            window.added()
    kept = window.trim(items, lambda item: item.startswith("f"))
    assert kept == ["a0", "a2", "a4", "f5", "a6", "f7", "a8", "f9", "a10", "f11"]
    assert (window.held, window.dropped_total) == (4, 2)
    assert window.trim(kept, lambda item: item.startswith("f")) == kept
    assert window.replayed() == 2 and window.replayed() == 0 and window.held == 0
