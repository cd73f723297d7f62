"""The pure rule of what a stored handle covers of the ADK session and what comes after it.

No sockets; the end-to-end behaviour (workers killed mid-turn) is in ``tests/e2e/test_workers.py``
and ``tests/e2e/test_workers_deployment.py``.
"""

from __future__ import annotations

from typing import Any

import pytest
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.genai import types

from adk_live_resume.conversation.client_message import ClientMessage
from adk_live_resume.conversation.model_work import label_working
from adk_live_resume.conversation.outbox import Replay
from adk_live_resume.resumption.handle_coverage import (
    START,
    CatchUp,
    catch_up,
    covered_event_id,
    with_catch_up,
)

AGENT = "voice"


def _event(author: str, text: str | None = None, **content: Any) -> Event:
    parts = [types.Part(text=text)] if text is not None else []
    if content:
        parts.append(types.Part(**content))
    return Event(
        author=author,
        content=types.Content(role="user" if author == "user" else "model", parts=parts)
        if parts
        else None,
    )


def _state() -> Event:
    return Event(author=AGENT, actions=EventActions(state_delta={"k": "v"}))


def test_a_handle_covers_up_to_the_answer_not_the_user_turns_after_it() -> None:
    ada, echo, done = _event("user", "my name is Ada"), _event(AGENT, "echo: Ada"), _state()
    paris = _event("user", "I live in Paris")
    assert covered_event_id([]) == START
    assert covered_event_id([ada]) == START  # only an unanswered turn
    assert covered_event_id([ada, echo, done]) == done.id
    assert covered_event_id([ada, echo, done, paris]) == done.id
    assert covered_event_id([ada, echo, done, paris, _state()]) == done.id


def test_what_comes_after_the_covered_event_splits_at_the_model_s_last_turn() -> None:
    events = [
        _event("user", "my name is Ada"),
        _event(AGENT, "echo: my name is Ada"),
        _state(),
        _event("user", "I live in Paris"),
        _event(AGENT, "echo: I live in Paris"),
        _state(),
        _event("user", "and I like tea"),
        _event("user", "recall"),
    ]
    after = catch_up(events, events[2].id, AGENT)
    assert after == CatchUp(
        context=[("user", "I live in Paris"), ("model", "echo: I live in Paris")],
        unanswered=["and I like tea", "recall"],
    )
    assert catch_up(events, events[-1].id, AGENT) == CatchUp()
    assert not catch_up(events, events[-1].id, AGENT)
    everything = catch_up(events, START, AGENT)
    assert everything is not None and len(everything.context) == 4


def test_partial_events_and_thoughts_are_not_turns() -> None:
    partial = _event(AGENT, "echo: my na")
    partial.partial = True
    thought = _event(AGENT, "echo: hi")
    assert thought.content is not None
    thought.content.parts.insert(0, types.Part(text="thinking...", thought=True))
    events = [_state(), _event("user", "hi"), partial, thought]
    assert catch_up(events, events[0].id, AGENT) == CatchUp(
        context=[("user", "hi"), ("model", "echo: hi")]
    )


@pytest.mark.parametrize(
    "after",
    [
        _event(AGENT, function_call=types.FunctionCall(name="f", args={})),
        _event("user", function_response=types.FunctionResponse(name="f", response={})),
        _event("user", inline_data=types.Blob(mime_type="audio/pcm", data=b"\0\0")),
        _event("other_agent", "I am someone else"),
        Event(author="user", input_transcription=types.Transcription(text="hi", finished=True)),
    ],
    ids=["call", "response", "audio", "other-agent", "transcription"],
)
def test_what_cannot_be_told_as_text_turns_asks_for_a_fresh_start(after: Event) -> None:
    covered = _state()
    assert catch_up([covered, _event("user", "hi"), after], covered.id, AGENT) is None


def test_a_covered_event_the_session_does_not_hold_asks_for_a_fresh_start() -> None:
    assert catch_up([_event("user", "hi")], "gone-event-id", AGENT) is None


def test_the_catch_up_goes_before_the_replay_context_first_then_the_unanswered_turn() -> None:
    own = ClientMessage(1, "send_realtime_input", {"text": "later"})
    replay = Replay(context=[("user", "x"), ("model", "y")], messages=[own])
    after = CatchUp(context=[("user", "a"), ("model", "b")], unanswered=["c"])
    joined = with_catch_up(after, replay)
    assert joined.context == [("user", "a"), ("model", "b"), ("user", "x"), ("model", "y")]
    first, second = joined.messages
    assert second is own and first.method == "send_client_content"
    assert first.kwargs["turn_complete"] is True
    assert [c.parts[0].text for c in first.kwargs["turns"]] == ["c"]
    assert with_catch_up(None, replay) is replay and with_catch_up(CatchUp(), replay) is replay


def test_the_catch_up_leaves_out_the_turns_withheld_from_the_model() -> None:
    from adk_live_resume.conversation.withheld import Withheld

    one, echo = _event("user", "one"), _event(AGENT, "echo: one")
    blocked, refusal = _event("user", "a forbidden thing"), _event(AGENT, "not allowed")
    later = _event("user", "a forbidden thing")  # the same words, not withheld
    events = [one, echo, blocked, refusal, later]
    screened = Withheld(frozenset({blocked.id}))
    assert catch_up(events, echo.id, AGENT, screened) == CatchUp(
        context=[("model", "not allowed")], unanswered=["a forbidden thing"]
    )
    assert catch_up(events, echo.id, AGENT) == CatchUp(
        context=[("user", "a forbidden thing"), ("model", "not allowed")],
        unanswered=["a forbidden thing"],
    )


def test_a_function_response_the_agent_wrote_is_input_a_handle_after_it_does_not_cover() -> None:
    """ADK writes a function response as an event of the agent; a Gemini 3.x model sends a
    handle right after the client's ``toolResponse``, before its answer: that handle covers
    the call, not the response, so the next worker asks for what came after (a fresh start:
    a response cannot be given back as a text turn)."""
    ask = _event("user", "what is the weather?")
    call = _event(AGENT, function_call=types.FunctionCall(name="weather", args={}))
    response = _event(AGENT, function_response=types.FunctionResponse(name="weather", response={}))
    answer = _event(AGENT, "clear skies")
    assert covered_event_id([ask, call, response]) == call.id
    assert catch_up([ask, call, response], call.id, AGENT) is None
    assert covered_event_id([ask, call, response, answer]) == answer.id


def _working(text: str) -> Event:
    event = _event(AGENT, text)
    label_working(event, "IN_PROGRESS")
    return event


def test_a_working_utterance_is_no_answer_the_request_before_it_stays_unanswered() -> None:
    one, echo = _event("user", "one"), _event(AGENT, "echo: one")
    two, working = _event("user", "two"), _working("working on: two")
    assert catch_up([one, echo, two, working], echo.id, AGENT) == CatchUp(unanswered=["two"])
    assert catch_up([one, _working("working on: one"), echo, two], START, AGENT) == CatchUp(
        context=[("user", "one"), ("model", "working on: one"), ("model", "echo: one")],
        unanswered=["two"],
    )
