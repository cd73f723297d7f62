"""A fresh history whose last user content the model answered in audio alone: pure rules.

With output transcription off, ADK's session holds no text of a spoken answer and its
``send_history`` leaves audio out, so the rebuilt history ends with the user content the
model answered and would ask the fresh session to answer it again. The outbox says whether
the content sent last was answered (:meth:`Outbox.answered_last`); the history then ends
with a model turn standing for the spoken answer (:data:`SPOKEN_ANSWER`), which asks for
no answer. Content nobody answered still ends the history, so it is answered once.
"""

from __future__ import annotations

from google.genai import types

from adk_live_resume.conversation.fresh_history import SPOKEN_ANSWER, fresh_history
from adk_live_resume.conversation.outbox import Outbox
from adk_live_resume.testing import speech_pcm

from ...helpers import audio_input, content, tool_response, typed_turn

SPOKEN = content("model", SPOKEN_ANSWER)


def audio_answer(outbox: Outbox) -> None:
    """The model answers in audio alone, then ends its turn."""
    outbox.model_audio()
    outbox.model_audio()
    outbox.turn_complete()


def test_a_typed_turn_answered_aloud_is_closed_by_a_model_turn() -> None:
    outbox = Outbox(1000.0)
    outbox.record("send_client_content", typed_turn("hello"))
    assert not outbox.answered_last()
    audio_answer(outbox)
    assert outbox.answered_last()
    stored = [content("user", "hello")]
    history, in_history = fresh_history(
        stored, "", speaking=False, answered_last=outbox.answered_last()
    )
    assert history == [*stored, SPOKEN] and not in_history
    assert stored == [content("user", "hello")], "ADK's contents are not changed"


def test_function_responses_told_aloud_are_closed_by_a_model_turn() -> None:
    outbox = Outbox(1000.0)
    outbox.record("send_client_content", typed_turn("call f"))
    outbox.tool_call(["c1"])
    outbox.record("send_tool_response", tool_response("c1"))
    assert not outbox.answered_last(), "the result is not told yet"
    audio_answer(outbox)
    assert outbox.answered_last()
    call = types.Content(
        role="model", parts=[types.Part(function_call=types.FunctionCall(name="f", args={}))]
    )
    response = types.Content(
        role="user",
        parts=[types.Part(function_response=types.FunctionResponse(name="f", response={}))],
    )
    stored = [content("user", "call f"), call, response]
    history, _ = fresh_history(stored, "", speaking=False, answered_last=True)
    assert history == [*stored, SPOKEN]


def test_content_the_model_has_not_answered_still_ends_the_history() -> None:
    outbox = Outbox(1000.0)
    assert not outbox.answered_last(), "nothing answered on this run: a history from before"
    outbox.record("send_client_content", typed_turn("one"))
    audio_answer(outbox)
    outbox.record("send_client_content", typed_turn("two"))
    assert not outbox.answered_last()
    outbox.model_audio()  # its answer began, and the connection died before its end
    assert not outbox.answered_last()
    outbox.begin_connection()
    assert not outbox.answered_last()
    stored = [content("user", "one"), content("user", "two")]
    assert fresh_history(stored, "", speaking=False, answered_last=False) == (stored, False)


def test_an_answer_of_near_silence_alone_leaves_the_turn_unanswered() -> None:
    outbox = Outbox(1000.0)
    outbox.record("send_client_content", typed_turn("grove"))
    outbox.model_audio(voiced=False)
    outbox.turn_complete()
    assert outbox.typed_turns_unanswered() == ["grove"]
    assert not outbox.answered_last()


def test_an_answer_streaming_before_the_turn_was_sent_does_not_answer_it() -> None:
    outbox = Outbox(1000.0)
    outbox.model_audio()  # an earlier answer, still streaming
    outbox.record("send_client_content", typed_turn("grove"))
    outbox.turn_complete()
    assert not outbox.answered_last()


def test_a_history_ending_with_model_text_or_nothing_gets_no_closing_turn() -> None:
    told = [content("user", "hello"), content("model", "echo: hello")]
    assert fresh_history(told, "", speaking=False, answered_last=True) == (told, False)
    assert fresh_history([], "", speaking=False, answered_last=True) == ([], False)


def test_a_model_turn_of_audio_alone_does_not_close_the_history() -> None:
    """ADK's ``send_history`` leaves audio parts out: a model turn of audio alone is not sent,
    and the user turn before it would end what the server gets."""
    audio = types.Content(
        role="model",
        parts=[types.Part(inline_data=types.Blob(mime_type="audio/pcm", data=b"\0\1"))],
    )
    stored = [content("user", "hello"), audio]
    history, _ = fresh_history(stored, "", speaking=False, answered_last=True)
    assert history == [*stored, SPOKEN]


def test_the_unanswered_utterance_in_the_history_is_answered_not_closed() -> None:
    stored = [content("user", "one"), content("user", "o e b c")]
    history, in_history = fresh_history(stored, "oebc", speaking=False, answered_last=True)
    assert history == stored and in_history


def test_an_utterance_still_spoken_leaves_and_the_answered_turn_before_it_is_closed() -> None:
    """The user speaks on after "one" was answered aloud: the utterance's start leaves the
    history (its audio is replayed whole), and "one" must not be answered again."""
    outbox = Outbox(1000.0)
    outbox.record("send_client_content", typed_turn("one"))
    audio_answer(outbox)
    outbox.record("send_realtime_input", audio_input(speech_pcm("o e b c", seconds=0.2)))
    assert outbox.answered_last(), "an utterance is not a typed turn or a function response"
    stored = [content("user", "one"), content("user", "oebc")]
    history, in_history = fresh_history(stored, "o e b c", speaking=True, answered_last=True)
    assert history == [content("user", "one"), SPOKEN] and not in_history


def test_a_near_silent_answer_whose_turn_a_handle_covered_leaves_it_unanswered() -> None:
    """A stall's answer (near-silent audio alone) to "two", then a handle whose state holds
    "two": the record forgets the turn, but the fresh session the stall recovery starts
    must still be asked it."""
    outbox = Outbox(1000.0)
    outbox.record("send_client_content", typed_turn("one"))
    audio_answer(outbox)
    outbox.record("send_client_content", typed_turn("two"))
    outbox.model_audio(voiced=False)
    outbox.turn_complete()
    outbox.covered(2)
    assert outbox.typed_turns_unanswered() == []
    assert not outbox.answered_last()


def _answered_then_called(outbox: Outbox) -> None:
    """ "one" answered aloud; then the model calls a tool and gets its response."""
    outbox.record("send_client_content", typed_turn("one"))
    audio_answer(outbox)
    outbox.record("send_client_content", typed_turn("call f"))
    outbox.model_text("calling f")
    outbox.tool_call(["c1"])
    outbox.record("send_tool_response", tool_response("c1"))


def test_a_function_response_answered_with_near_silence_after_the_call_stays_unanswered() -> None:
    """The tool call said something, but its response is a turn of its own: near silence
    after it (a stall's answer, ended or cut) answers nothing, so a fresh session is asked
    to tell the result (found by the property in test_properties_near_silence.py)."""
    for end in ("turn_complete", "interrupted"):
        outbox = Outbox(1000.0)
        _answered_then_called(outbox)
        outbox.model_audio(voiced=False)
        getattr(outbox, end)()
        assert not outbox.turns.unanswered, end
        assert not outbox.answered_last(), end
        outbox.model_audio()
        outbox.turn_complete()
        assert outbox.answered_last(), f"{end}: an answer aloud after it answers it"


def test_near_silence_after_the_models_work_paused_does_not_answer_a_turn_sent_meanwhile() -> None:
    """The model was speaking when the function response went, then said its work goes on
    (a ``turnComplete`` with IN_PROGRESS): what it said began before the response, and the
    near silence after the pause answers nothing, so the response stays unanswered."""
    outbox = Outbox(1000.0)
    outbox.record("send_client_content", typed_turn("one"))
    audio_answer(outbox)
    outbox.record("send_client_content", typed_turn("call f"))
    outbox.tool_call(["c1"])
    outbox.model_text("let me see")
    outbox.record("send_tool_response", tool_response("c1"))
    outbox.work_goes_on()
    outbox.model_audio(voiced=False)
    outbox.turn_complete()
    assert not outbox.turns.unanswered
    assert not outbox.answered_last()


def test_function_responses_never_sent_end_the_history_unanswered() -> None:
    """A tool ended as its connection went: ADK's session holds the response, its queue still
    the send. The run answered what it sent last, but not that response: the fresh session
    is asked to answer it, not told it was."""
    outbox = Outbox(1000.0)
    outbox.record("send_client_content", typed_turn("hello"))
    outbox.model_text("echo: hello")
    outbox.turn_complete()
    outbox.record("send_client_content", typed_turn("call f"))
    outbox.tool_call(["c2"])
    outbox.turn_complete()
    assert outbox.answered_last(), "as far as the run sent: the call answered the turn"
    call = types.Content(
        role="model",
        parts=[types.Part(function_call=types.FunctionCall(id="c2", name="f", args={}))],
    )
    response = types.Content(
        role="user",
        parts=[types.Part(function_response=types.FunctionResponse(id="c2", name="f"))],
    )
    stored = [content("user", "call f"), call, response]

    def rebuilt() -> list[types.Content]:
        history, _ = fresh_history(
            stored,
            "",
            speaking=False,
            answered_last=outbox.answered_last(),
            responses_sent_last=outbox.responses_sent_last,
        )
        return history

    assert rebuilt() == stored, "the response was never sent: nothing answered it"
    outbox.record("send_tool_response", tool_response("c2"))
    outbox.model_text("f returned")
    outbox.turn_complete()
    assert rebuilt() == [*stored, SPOKEN], "sent and answered: closed"
