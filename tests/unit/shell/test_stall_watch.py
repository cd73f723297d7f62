"""The stall watch of one connection, fed with google-genai messages, without sockets."""

from __future__ import annotations

import array
import asyncio
from typing import Any

import pytest
from google.genai import types

from adk_live_resume.conversation.client_message import ClientMessage
from adk_live_resume.rules import stall_rule
from adk_live_resume.rules.stall_rule import Stall
from adk_live_resume.shell.stall_watch import StallWatch, non_blocking_names

pytestmark = pytest.mark.timeout(10)


def watch(
    timeout: float = 0.1, turns: int = 0, **kwargs: Any
) -> tuple[StallWatch, list[Stall], list[bool]]:
    seen: list[Stall] = []
    speaking = [False]
    stall_watch = StallWatch(
        timeout, turns, on_stall=seen.append, user_speaking=lambda: speaking[0], **kwargs
    )
    stall_watch.start()
    return stall_watch, seen, speaking


def typed(text: str = "hi") -> ClientMessage:
    return ClientMessage(1, "send_client_content", {}, user_text=text)


def response(call_id: str) -> ClientMessage:
    return ClientMessage(1, "send_tool_response", {}, response_ids=(call_id,))


def call(call_id: str, name: str = "f") -> types.LiveServerMessage:
    return types.LiveServerMessage(
        tool_call=types.LiveServerToolCall(
            function_calls=[types.FunctionCall(id=call_id, name=name, args={})]
        )
    )


def content(**fields: Any) -> types.LiveServerMessage:
    return types.LiveServerMessage(server_content=types.LiveServerContent(**fields))


def audio(amplitude: int) -> types.LiveServerMessage:
    pcm = array.array("h", [amplitude, -amplitude] * 2400).tobytes()
    part = types.Part(inline_data=types.Blob(data=pcm, mime_type="audio/pcm;rate=24000"))
    return content(model_turn=types.Content(role="model", parts=[part]))


async def test_a_typed_turn_without_an_answer_stalls_once() -> None:
    stall_watch, seen, _ = watch()
    stall_watch.client_send(typed(), "send_client_content", {})
    await asyncio.sleep(0.3)
    assert [s.kind for s in seen] == ["silence"] and "typed turn" in seen[0].seen


async def test_a_running_tool_excuses_a_turn_typed_meanwhile() -> None:
    stall_watch, seen, _ = watch()
    stall_watch.server_message(call("c1"))
    stall_watch.client_send(typed(), "send_client_content", {})
    await asyncio.sleep(0.4)
    assert seen == []
    stall_watch.client_send(response("c1"), "send_tool_response", {})
    await asyncio.sleep(0.5)
    assert [s.kind for s in seen] == ["silence"]


async def test_a_non_blocking_result_waits_for_no_answer() -> None:
    stall_watch, seen, _ = watch(non_blocking=frozenset({"mail"}))
    stall_watch.server_message(call("c1", "mail"))
    stall_watch.client_send(response("c1"), "send_tool_response", {})
    await asyncio.sleep(0.3)
    assert seen == []


async def test_the_user_speaking_excuses_the_wait() -> None:
    stall_watch, seen, speaking = watch()
    speaking[0] = True
    stall_watch.server_message(content(input_transcription=types.Transcription(text="hel")))
    await asyncio.sleep(0.4)
    assert seen == []
    speaking[0] = False
    await asyncio.sleep(0.5)
    assert seen and "transcribed" in seen[0].seen


def audio_chunk() -> ClientMessage:
    return ClientMessage(1, "send_realtime_input", {}, audio_ms=20.0)


async def test_an_interrupted_that_cut_nothing_answers_nothing() -> None:
    """The user spoke again before any answer: the server cut a generation that had said
    nothing. The wait goes on, and the user's speaking now pauses it (both quiet stretches
    count), so a user who keeps talking still gets the stall seen."""
    stall_watch, seen, speaking = watch(timeout=0.3)
    heard = content(input_transcription=types.Transcription(text="hello"))
    stall_watch.server_message(heard)
    await asyncio.sleep(0.2)
    speaking[0] = True
    stall_watch.client_send(audio_chunk(), "send_realtime_input", {})
    stall_watch.server_message(content(interrupted=True))
    await asyncio.sleep(0.4)  # speaking: paused
    assert seen == []
    speaking[0] = False
    stall_watch.client_send(audio_chunk(), "send_realtime_input", {})
    await asyncio.sleep(0.25)
    assert [s.kind for s in seen] == ["silence"]
    assert "after an utterance the server transcribed" in seen[0].seen


async def test_a_look_due_sooner_than_the_armed_timer_rearms_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The timer stays armed across messages while it fires no later than the rule's next
    look, and is armed again when that look comes sooner. Here the wait's quiet stretches
    add up (an ``interrupted`` cut nothing): 1 s of quiet, then the user speaks; the wait's
    timer fires in the pause (2 s) and arms the pause's poll (1.8 s, at 3.8 s); the pause
    ends at 2.1 s with 1 s of the wait left, so the silence is due at 3 s, not 3.8 s (the
    loop runs that timer before the test's own wake-up at 3.1 s)."""
    monkeypatch.setattr(stall_rule, "EXCUSE_POLL", 1.8)
    stall_watch, seen, speaking = watch(timeout=2.0)
    stall_watch.server_message(content(input_transcription=types.Transcription(text="hi")))
    stall_watch.server_message(content(interrupted=True))
    await asyncio.sleep(1.0)
    speaking[0] = True
    stall_watch.client_send(audio_chunk(), "send_realtime_input", {})
    await asyncio.sleep(1.1)
    assert seen == []
    speaking[0] = False
    stall_watch.client_send(audio_chunk(), "send_realtime_input", {})
    await asyncio.sleep(1.0)
    assert [s.kind for s in seen] == ["silence"]


async def test_an_interrupted_that_cut_an_answer_answers() -> None:
    stall_watch, seen, speaking = watch(timeout=0.3)
    stall_watch.server_message(content(input_transcription=types.Transcription(text="hi")))
    stall_watch.server_message(audio(3000))
    speaking[0] = True
    stall_watch.server_message(content(interrupted=True))
    speaking[0] = False
    await asyncio.sleep(0.5)
    assert seen == [] and not stall_watch.rule.waiting


async def test_a_stopped_watch_reports_nothing() -> None:
    stall_watch, seen, _ = watch()
    stall_watch.client_send(typed(), "send_client_content", {})
    stall_watch.stop()
    await asyncio.sleep(0.3)
    assert seen == []


@pytest.mark.parametrize(
    ("messages", "why"),
    [
        ([content(turn_complete=True)], "no content"),
        (
            [
                content(
                    turn_complete=True,
                    turn_complete_reason=types.TurnCompleteReason.RESPONSE_REJECTED,
                )
            ],
            "RESPONSE_REJECTED",
        ),
        ([audio(20), content(turn_complete=True)], "near silence"),
    ],
)
async def test_degenerate_turns(messages: list[types.LiveServerMessage], why: str) -> None:
    stall_watch, seen, _ = watch(timeout=0.0, turns=1)
    stall_watch.client_send(typed(), "send_client_content", {})
    for message in messages:
        stall_watch.server_message(message)
    assert [s.kind for s in seen] == ["degenerate"] and why in seen[0].seen


async def test_a_spoken_answer_is_no_degenerate_turn() -> None:
    stall_watch, seen, _ = watch(timeout=0.0, turns=1)
    stall_watch.client_send(typed(), "send_client_content", {})
    stall_watch.server_message(audio(3000))
    stall_watch.server_message(content(turn_complete=True))
    assert seen == [] and stall_watch.answers == 1


async def test_a_history_ending_with_a_user_turn_waits_for_its_answer() -> None:
    stall_watch, seen, _ = watch()
    turns = [types.Content(role="model", parts=[types.Part(text="x")])]
    stall_watch.history_sent("send_client_content", {"turns": turns, "turn_complete": False})
    await asyncio.sleep(0.3)
    assert seen == []
    turns.append(types.Content(role="user", parts=[types.Part(text="y")]))
    stall_watch.history_sent("send_client_content", {"turns": turns, "turn_complete": True})
    await asyncio.sleep(0.3)
    assert seen and "rebuilt history" in seen[0].seen


def test_non_blocking_names_from_the_request() -> None:
    declaration = types.FunctionDeclaration(name="mail", behavior=types.Behavior.NON_BLOCKING)
    other = types.FunctionDeclaration(name="look")
    config = types.GenerateContentConfig(
        tools=[types.Tool(function_declarations=[declaration, other])]
    )

    class Request:
        pass

    request = Request()
    request.config = config  # type: ignore[attr-defined]
    assert non_blocking_names(request) == frozenset({"mail"})
    assert non_blocking_names(object()) == frozenset()


def transcribed(text: str) -> types.LiveServerMessage:
    return content(input_transcription=types.Transcription(text=text))


def said(text: str) -> types.LiveServerMessage:
    return content(model_turn=types.Content(role="model", parts=[types.Part(text=text)]))


async def test_the_same_words_said_again_and_answered_alike_are_no_degenerate_turn() -> None:
    stall_watch, seen, _ = watch(timeout=0.0, turns=1)
    stall_watch.server_message(transcribed("lights on"))
    stall_watch.server_message(said("done"))
    stall_watch.server_message(content(turn_complete=True))
    # the second utterance is transcribed before its answer's turn ended: "lights onlights on"
    stall_watch.server_message(transcribed("lights on"))
    stall_watch.server_message(transcribed(" lights on"))
    stall_watch.server_message(said("done"))
    stall_watch.server_message(content(turn_complete=True))
    assert seen == [] and stall_watch.answers == 2


async def test_other_words_answered_alike_are_a_degenerate_turn() -> None:
    stall_watch, seen, _ = watch(timeout=0.0, turns=1)
    for asked in ("lights on", "what time is it"):
        stall_watch.server_message(transcribed(asked))
        stall_watch.server_message(said("done"))
        stall_watch.server_message(content(turn_complete=True))
    assert [s.kind for s in seen] == ["degenerate"] and "same answer" in seen[0].seen
