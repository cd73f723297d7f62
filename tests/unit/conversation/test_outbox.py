"""Outbox rules (pure): what is covered by a handle, what is replayed, how (no I/O)."""

from __future__ import annotations

import asyncio
import gc

from google.genai import types

from adk_live_resume.conversation.client_sends import describe, without_responses
from adk_live_resume.conversation.late_results import LateResult, as_content
from adk_live_resume.conversation.outbox import Outbox
from adk_live_resume.conversation.tool_calls import call_key
from adk_live_resume.shell.queue_guard import QueueGuard

from ...helpers import audio_input, silent_audio_input, tool_response, typed_turn


def test_describe_reads_text_audio_and_response_ids() -> None:
    assert describe("send_client_content", typed_turn("hi")) == (0.0, "hi", ())
    ms, text, ids = describe("send_realtime_input", silent_audio_input(250))
    assert (round(ms), text, ids) == (250, None, ())
    assert describe("send_tool_response", tool_response("c1")) == (0.0, None, ("c1",))
    legacy = {"input": types.LiveClientContent(turns=typed_turn("yo")["turns"], turn_complete=True)}
    assert describe("send", legacy)[1] == "yo"


def test_on_the_gemini_api_a_handle_covers_what_model_output_followed() -> None:
    outbox = Outbox()
    outbox.record("send_client_content", typed_turn("one"))
    outbox.model_text("echo: one")
    outbox.turn_complete()
    outbox.covered(None)
    outbox.record("send_client_content", typed_turn("two"))
    replay = outbox.take_replay()
    assert [m.user_text for m in replay.messages] == ["two"] and not replay.context
    assert len(outbox) == 0


def test_a_text_turn_that_crosses_the_handle_of_the_previous_answer_is_kept() -> None:
    """The turn went out before the answer's handle arrived: the handle may not hold it."""
    outbox = Outbox()
    outbox.record("send_client_content", typed_turn("one"))
    outbox.model_text("echo: one")
    outbox.record("send_client_content", typed_turn("two"))  # sent before the handle arrived
    outbox.turn_complete()
    outbox.covered(None)
    assert [m.user_text for m in outbox.take_replay().messages] == ["two"]


def test_a_text_turn_sent_while_an_earlier_answer_streams_is_kept_past_its_end() -> None:
    """The rest of an answer already streaming was sent before the server had the turn, and
    so may the handle after it be: only an answer that began after the turn covers it."""
    outbox = Outbox()
    outbox.record("send_client_content", typed_turn("one"))
    outbox.model_text("echo: ")
    outbox.record("send_client_content", typed_turn("two"))  # while "echo: one" streams
    outbox.model_text("one")
    outbox.turn_complete()
    outbox.covered(None)
    assert [m.user_text for m in outbox.take_replay().messages] == ["two"]
    outbox.record("send_client_content", typed_turn("three"))
    outbox.model_text("echo: three")  # an answer that began after it: the server had it
    outbox.covered(None)
    assert outbox.take_replay().messages == []


def test_a_text_turn_sent_before_the_answer_to_the_last_began_is_kept_past_that_answer() -> None:
    """Each generation answers the oldest ask waiting: the answer to "one" began after "two"
    went out, but it answers "one", and the handle after it may predate "two". Two
    generations answer both; an interruption answers every ask before it."""
    outbox = Outbox()
    outbox.record("send_client_content", typed_turn("one"))
    outbox.record("send_client_content", typed_turn("two"))  # before "echo: one" began
    outbox.model_text("echo: one")
    outbox.turn_complete()
    outbox.covered(None)
    assert [m.user_text for m in outbox.take_replay().messages] == ["two"]
    assert outbox.typed_turns_unanswered() == []  # (the replay took "two" out of the record)
    outbox.record("send_client_content", typed_turn("three"))
    outbox.record("send_client_content", typed_turn("four"))
    assert outbox.typed_turns_unanswered() == ["three", "four"]
    outbox.model_text("echo: three")
    outbox.turn_complete()
    assert outbox.typed_turns_unanswered() == ["four"]
    outbox.model_text("echo: four")
    outbox.turn_complete()
    outbox.covered(None)
    assert outbox.take_replay().messages == []
    outbox.record("send_client_content", typed_turn("five"))
    outbox.record("send_client_content", typed_turn("six"))
    outbox.interrupted()
    outbox.covered(None)
    assert outbox.take_replay().messages == []


def test_a_function_response_sent_while_an_earlier_answer_streams_is_kept_past_its_end() -> None:
    outbox = Outbox()
    outbox.model_audio()  # a job's call was answered; the model goes on talking
    outbox.record("send_tool_response", tool_response("job-1"))
    outbox.model_audio()
    outbox.turn_complete()
    outbox.covered(None)
    assert [m.response_ids for m in outbox.take_replay().messages] == [("job-1",)]


#: A background job's result, told as content (its call belongs to an earlier connection).
LATE = LateResult("fc-1", "slow_job", {"job_name": "order"}, {"job": "order"})


def _told_while_an_answer_streams() -> Outbox:
    """An outbox where :data:`LATE` was told as content while the answer to "one" streamed,
    and that answer then ended (no handle yet)."""
    outbox = Outbox()
    outbox.record("send_client_content", typed_turn("one"))
    outbox.model_text("echo: ")
    outbox.record(*as_content([LATE]))  # while "echo: one" streams
    outbox.model_text("one")
    outbox.turn_complete()
    return outbox


def test_results_told_as_content_while_an_answer_streams_are_kept_past_its_end() -> None:
    outbox = _told_while_an_answer_streams()
    outbox.covered(None)
    (kept,) = outbox.take_replay().messages
    assert kept.method == "send_client_content" and kept.user_text is None
    outbox.record(*as_content([LATE]))
    outbox.model_text("slow_job returned ...")  # an answer that began after it
    outbox.covered(None)
    assert outbox.take_replay().messages == []


def test_results_told_while_an_answer_streams_are_replayed_when_no_handle_followed() -> None:
    """The connection is lost before any handle: the exchange the streaming answer ends goes
    back as context, the results told meanwhile (no text: as context they would be lost)
    go again as sent."""
    outbox = _told_while_an_answer_streams()
    replay = outbox.take_replay()
    assert replay.context == [("user", "one"), ("model", "echo: one")]
    (kept,) = replay.messages
    assert kept.method == "send_client_content" and kept.user_text is None
    assert kept.kwargs == as_content([LATE])[1]


def test_results_told_while_an_answer_streams_then_answered_go_back_as_context() -> None:
    outbox = _told_while_an_answer_streams()
    outbox.model_text("slow_job returned ...")  # an answer that began after it
    outbox.turn_complete()
    replay = outbox.take_replay()
    assert replay.messages == []
    assert replay.context == [("user", "one"), ("model", "echo: oneslow_job returned ...")]


def test_output_after_a_tool_call_answers_its_responses_without_a_turn_complete() -> None:
    """Native audio and Gemini 3.x Live go on after the tool responses in the same turn."""
    outbox = Outbox()
    outbox.record("send_client_content", typed_turn("look it up"))
    outbox.model_audio()
    outbox.tool_call(["c1"])
    outbox.record("send_tool_response", tool_response("c1"))
    outbox.model_audio()  # the same turn goes on: the answer to the response
    outbox.covered(None)
    assert outbox.take_replay().messages == []


def test_audio_sent_while_an_answer_streams_is_covered_by_the_rest_of_it() -> None:
    """Audio is taken in as it arrives: model output after it covers it, as before."""
    outbox = Outbox()
    outbox.model_text("echo: ")
    outbox.record("send_realtime_input", silent_audio_input(40))
    outbox.model_text("one")
    outbox.covered(None)
    assert outbox.take_replay().messages == []


def test_transparent_trims_exactly_by_last_consumed_index() -> None:
    outbox = Outbox()
    outbox.begin_connection()
    for word in ("a", "b", "c"):
        outbox.record("send_client_content", typed_turn(word))  # indices 1, 2, 3
    outbox.covered(2)
    assert [m.user_text for m in outbox.take_replay().messages] == ["c"]


def test_finished_exchanges_become_context_and_the_rest_is_replayed_as_sent() -> None:
    outbox = Outbox()
    outbox.record("send_client_content", typed_turn("one"))
    outbox.model_text("echo: ")
    outbox.model_text("one")
    outbox.turn_complete()
    outbox.record("send_client_content", typed_turn("two"))  # cut before its answer
    outbox.model_text("echo: t")
    replay = outbox.take_replay()
    assert replay.context == [("user", "one"), ("model", "echo: one")]
    assert [m.user_text for m in replay.messages] == ["two"]


def test_a_context_update_in_the_finished_part_is_replayed_first_not_folded_into_context() -> None:
    outbox = Outbox()
    update = {"system_instruction": "Be brief.", "tools": []}
    outbox.record("send_context_update", update)
    outbox.record("send_client_content", typed_turn("one"))
    outbox.model_text("echo: one")
    outbox.turn_complete()
    outbox.record("send_client_content", typed_turn("two"))
    replay = outbox.take_replay()
    assert replay.context == [("user", "one"), ("model", "echo: one")]
    assert [(m.method, m.user_text) for m in replay.messages] == [
        ("send_context_update", None),
        ("send_client_content", "two"),
    ]
    assert replay.messages[0].kwargs == update
    assert outbox.context.system_instruction == "Be brief." and outbox.context.tools == []


def test_context_joins_transcription_pieces_as_they_came_and_typed_turns_with_a_space() -> None:
    """Transcription pieces carry their own spacing ("w", "hat", " now"): the context says
    "what now", not "w hat  now"; two typed turns in a row stay two words apart (the second
    interrupted the generation the first began)."""
    outbox = Outbox()
    outbox.record("send_client_content", typed_turn("one"))
    outbox.record("send_client_content", typed_turn("two"))
    outbox.interrupted()
    for piece in ("w", "hat", " now"):
        outbox.input_text(piece)
    outbox.model_text("echo: ")
    outbox.model_text("what now")
    outbox.turn_complete()
    assert outbox.take_replay().context == [
        ("user", "one two what now"),
        ("model", "echo: what now"),
    ]


def test_a_tool_call_turn_is_not_resolved_until_the_answer_after_its_response() -> None:
    outbox = Outbox()
    outbox.record("send_client_content", typed_turn("call f"))
    outbox.tool_call(["c1"])
    outbox.turn_complete()  # the tool-call turn
    outbox.record("send_tool_response", tool_response("c1"))
    outbox.turn_complete()  # an empty turn: still no answer
    replay = outbox.take_replay(unknown_call_ids={"c1"})
    assert replay.context == []
    assert [m.user_text for m in replay.messages] == ["call f"]  # the model must ask again
    assert replay.dropped_responses == ["c1"]


def test_responses_to_unknown_calls_are_removed_others_kept() -> None:
    kwargs = {
        "function_responses": [
            types.FunctionResponse(id="old", name="f", response={}),
            types.FunctionResponse(id="new", name="f", response={}),
        ]
    }
    kept = without_responses("send_tool_response", kwargs, {"old"})
    assert kept is not None and [r.id for r in kept["function_responses"]] == ["new"]
    assert without_responses("send_tool_response", tool_response("old"), {"old"}) is None


def test_audio_older_than_the_window_is_counted_not_replayed() -> None:
    outbox = Outbox(audio_window_ms=500)
    for _ in range(10):
        outbox.record("send_realtime_input", silent_audio_input(100))
    replay = outbox.take_replay()
    assert len(replay.messages) == 5 and round(replay.dropped_silence_ms) == 500
    assert round(outbox.dropped_silence_ms_total) == 500
    assert replay.dropped_audio_ms == outbox.dropped_audio_ms_total == 0, "no voice was lost"


def test_call_key_ignores_argument_order() -> None:
    assert call_key("f", {"a": 1, "b": 2}) == call_key("f", {"b": 2, "a": 1})
    assert call_key("f", {"a": 1}) != call_key("g", {"a": 1})


async def test_queue_guard_knows_the_request_in_hand_until_it_is_sent() -> None:
    from google.adk.agents.live_request_queue import LiveRequestQueue

    queue = LiveRequestQueue()
    guard = QueueGuard(queue)
    queue.send_content(types.Content(role="user", parts=[types.Part(text="first")]))
    taken = await queue.get()
    assert taken.content.parts[0].text == "first" and guard.in_hand
    assert not await guard.wait_idle(0.01)  # ADK still works on it
    guard.mark_sent()
    assert not guard.in_hand and await guard.wait_idle(None)
    guard.pause()
    queue.send_content(types.Content(role="user", parts=[types.Part(text="second")]))
    waiting = asyncio.ensure_future(queue.get())
    await asyncio.sleep(0.01)
    assert not waiting.done(), "a paused queue hands out nothing"
    guard.resume()
    assert (await asyncio.wait_for(waiting, 1)).content.parts[0].text == "second"
    guard.release()
    assert "get" not in queue.__dict__


def test_a_late_answer_never_pushes_the_unanswered_speech_out_of_the_cap() -> None:
    """Until the model answers, every chunk after the utterance carries
    its number; the silence after it filled the utterance cap, and the speech itself was
    trimmed away when the loss was noticed late. Only the utterance's sound counts against
    the cap; the silence after it is window audio."""
    from adk_live_resume.testing import silence_pcm, speech_pcm

    outbox = Outbox(audio_window_ms=1000, max_utterance_ms=3000)
    speech = speech_pcm("hello", seconds=0.6)
    chunk = 640  # 20 ms at 16 kHz
    for start in range(0, len(speech), chunk):
        outbox.record("send_realtime_input", audio_input(speech[start : start + chunk]))
    quiet = silence_pcm(0.02)
    for _ in range(250):  # 5 s of silence, no answer yet
        outbox.record("send_realtime_input", audio_input(quiet))
    replay = outbox.take_replay()
    assert replay.dropped_audio_ms == 0, "no speech was trimmed"
    voiced = [m for m in replay.messages if m.voiced]
    assert sum(m.audio_ms for m in voiced) >= 500
    assert any(m.starts_utterance for m in replay.messages), "replayed from its start"
    held = sum(m.audio_ms for m in replay.messages)
    assert held <= 1000 + 3000 + 20


def test_a_replay_recorded_again_keeps_its_start_on_the_first_sound() -> None:
    """On google-adk 1.27.2 and Vertex AI (found by the voice soak): silence replayed before the
    utterance's start carries the utterance's number on the next connection; the start went
    to that silence, a handle covered it, and the next replay was not known to start the
    utterance (its transcription was shown twice)."""
    from adk_live_resume.testing import silence_pcm, speech_pcm

    outbox = Outbox(audio_window_ms=1000, max_utterance_ms=3000)
    outbox.begin_connection()
    for _ in range(3):
        outbox.record("send_realtime_input", audio_input(silence_pcm(0.02)))
    speech = speech_pcm("hello", seconds=0.4)
    for start in range(0, len(speech), 640):
        outbox.record("send_realtime_input", audio_input(speech[start : start + 640]))
    first = outbox.take_replay()
    assert [m.starts_utterance for m in first.messages][:4] == [False, False, False, True]
    outbox.begin_connection()  # the replay goes again, on a connection that dies
    for message in first.messages:
        outbox.record(message.method, dict(message.kwargs))
    outbox.covered(3)  # Vertex AI: the server consumed the three chunks of silence
    second = outbox.take_replay()
    assert second.messages[0].voiced and second.messages[0].starts_utterance


def test_a_fresh_session_gets_the_unanswered_typed_turns_its_history_lacks_once() -> None:
    """ADK's rebuilt history left out a turn typed before a background
    call's late result; the fresh session gets it after the history. A turn the history
    holds, answered or cut off, is not sent again."""
    from adk_live_resume.conversation.fresh_history import user_texts

    def content(role: str, text: str) -> types.Content:
        return types.Content(role=role, parts=[types.Part(text=text)])

    history = [
        content("user", "one"),
        content("model", "echo: one"),
        content("user", "cut"),
        content("model", "echo: c"),  # an answer cut off: ADK keeps what it stored of it
        content("user", "two"),
    ]
    assert user_texts(history) == ["one", "cut", "two"]
    outbox = Outbox(1000.0)
    outbox.record("send_client_content", typed_turn("one"))
    outbox.model_text("echo: one")
    outbox.turn_complete()
    outbox.record("send_client_content", typed_turn("cut"))
    outbox.model_text("echo: c")
    outbox.record("send_client_content", typed_turn("two"))
    outbox.record("send_client_content", typed_turn("three"))
    replay = outbox.take_audio(utterance_in_history=False, waiting_in_history=user_texts(history))
    assert [m.user_text for m in replay.messages] == ["three"]


def _speak(outbox: Outbox, text: str) -> None:
    """An utterance of ``text`` and the silence after it, in 20 ms microphone chunks."""
    from adk_live_resume.testing import silence_pcm, speech_pcm

    pcm = speech_pcm(text, seconds=0.4) + silence_pcm(0.6)
    for start in range(0, len(pcm), 640):
        outbox.record("send_realtime_input", audio_input(pcm[start : start + 640]))


def test_an_answer_in_audio_only_answers_the_utterance_for_handles_and_replays() -> None:
    """Model output is model output whatever its form: an answer with no text (output
    transcription off) answers the utterance, so a handle after it covers it, and a replay
    from an older handle resolves it instead of sending it to be answered again."""
    covered = Outbox()
    _speak(covered, "hello")
    assert covered.activity.unanswered
    covered.model_audio()
    covered.model_audio()
    covered.turn_complete()
    assert not covered.activity.unanswered, "the utterance was answered"
    covered.covered(None)
    assert len(covered) == 0, "the handle after the answer holds the utterance"

    older_handle = Outbox()
    _speak(older_handle, "hello")
    older_handle.model_audio()
    older_handle.turn_complete()
    replay = older_handle.take_replay()
    assert replay.messages == [], "the answered utterance is not replayed"
    assert replay.context == [], "audio has no text to give back"


def test_an_audio_answer_cut_off_answers_nothing() -> None:
    outbox = Outbox()
    _speak(outbox, "hello")
    outbox.model_audio()
    outbox.interrupted()
    assert outbox.activity.unanswered
    assert any(m.voiced for m in outbox.take_replay().messages), "replayed to be answered"


def test_a_replay_names_the_calls_whose_whole_exchange_goes_as_context() -> None:
    outbox = Outbox()
    outbox.record("send_client_content", typed_turn("call balance"))
    outbox.tool_call(["c1"])
    outbox.record("send_tool_response", tool_response("c1"))
    outbox.model_text("balance returned 100")
    outbox.turn_complete()  # resolved: the exchange goes as context
    outbox.record("send_client_content", typed_turn("call lookup"))
    outbox.tool_call(["c2"])
    outbox.turn_complete()  # c2's response has not come: replayed from its request
    replay = outbox.take_replay()
    assert replay.context_calls == ("c1",)
    assert replay.context == [("user", "call balance"), ("model", "balance returned 100")]
    assert [m.user_text for m in replay.messages] == ["call lookup"]


def test_context_a_replay_sent_goes_again_when_a_later_exchange_finishes_before_a_handle() -> None:
    """A second drop resumes from the same handle: the context the first replay sent is
    needed again, also when the exchange after it finished (found by the property tests: it
    was left out of the context and the model forgot "one")."""
    outbox = Outbox()
    outbox.record("send_client_content", typed_turn("one"))
    outbox.model_text("echo: one")
    outbox.turn_complete()
    outbox.begin_connection()
    first = outbox.take_replay()
    assert first.context == [("user", "one"), ("model", "echo: one")]
    outbox.record(
        "send_client_content", {"turns": first.context_contents(), "turn_complete": False}
    )
    outbox.record("send_client_content", typed_turn("two"))
    outbox.model_text("echo: two")
    outbox.turn_complete()
    outbox.begin_connection()
    assert outbox.take_replay().context == [
        ("user", "one"),
        ("model", "echo: one"),
        ("user", "two"),
        ("model", "echo: two"),
    ]


def test_a_microphone_chunk_is_kept_untracked_and_replayed_as_sent() -> None:
    """The replay window holds a chunk as its bytes and MIME type, which the garbage
    collector stops tracking (a full collection walks every tracked object of every
    session's window); the replay sends a ``Blob`` equal to the one sent, the same bytes.
    A ``Blob`` with more set (a display name) is kept as it was sent."""
    outbox = Outbox()
    chunk = audio_input(b"\x10\x20" * 320)
    named = {"media": types.Blob(data=b"\x01\x02" * 320, mime_type="audio/pcm", display_name="x")}
    kept = outbox.record("send_realtime_input", dict(chunk))
    outbox.record("send_realtime_input", named)
    gc.collect()
    assert not gc.is_tracked(kept.sent)
    replayed = outbox.take_replay().messages
    assert [m.kwargs for m in replayed] == [chunk, named]
    assert replayed[0].kwargs["audio"].data is chunk["audio"].data
    assert replayed[1].kwargs is named
