"""Property: what a stored handle covers of the ADK session, and the catch-up after it.

Random ADK sessions (the user's typed turns, the agent's answers, working utterances of a model
that works in the background, labelled as the loop labels them, function calls and the
function responses ADK writes as the agent's events, events without content) are played
against :mod:`adk_live_resume.resumption.handle_coverage`. The reference is its contract:

* :func:`covered_event_id`: the longest start of the session in which every input (a user
  turn or a function response, whoever wrote it) is followed by the model's output: the
  input after the model's last output is never covered, and nothing else is left out;
* :func:`catch_up`: ``None`` exactly when something after the covered event cannot be told
  as a text turn (a call, a response); otherwise every user turn after it exactly once, in
  order: those after the model's last answer (a working utterance is none) as unanswered,
  the others as context with the answers, and no working utterance after the last answer.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from google.genai import types
from hypothesis import given
from hypothesis import strategies as st

from adk_live_resume.conversation.model_work import is_working, label_working
from adk_live_resume.resumption.handle_coverage import START, catch_up, covered_event_id

AGENT = "assistant"
_ids = itertools.count()


@dataclass
class _Event:
    """The attributes of ADK's ``Event`` that the rules read."""

    author: str
    content: types.Content | None = None
    custom_metadata: dict[str, Any] | None = None
    partial: bool | None = None
    input_transcription: types.Transcription | None = None
    output_transcription: types.Transcription | None = None
    id: str = field(default_factory=lambda: f"e{next(_ids)}")

    def __repr__(self) -> str:
        if self.content is None:
            return "(no content)"
        part = (self.content.parts or [types.Part()])[0]
        if part.function_call is not None:
            return "call"
        if part.function_response is not None:
            return f"response({self.author})"
        return f"{'working' if is_working(self) else self.author}:{part.text!r}"


def _text(author: str, text: str) -> _Event:
    role = "user" if author == "user" else "model"
    return _Event(author, types.Content(role=role, parts=[types.Part(text=text)]))


def _make(kind: str, number: int) -> list[_Event]:
    """The session events of one step of a conversation."""
    if kind == "user":
        return [_text("user", f"u{number}")]
    if kind == "answer":
        return [_text(AGENT, f"a{number}"), _Event(AGENT)]  # (its turn's end)
    if kind == "working":
        said, turn_end = _text(AGENT, f"w{number}"), _Event(AGENT)
        for event in (said, turn_end):
            label_working(event, "IN_PROGRESS")
        return [said, turn_end]
    if kind == "call":
        call = types.FunctionCall(id=f"c{number}", name="f", args={})
        return [_Event(AGENT, types.Content(role="model", parts=[types.Part(function_call=call)]))]
    if kind == "response":
        response = types.FunctionResponse(id=f"c{number}", name="f", response={})
        part = types.Part(function_response=response)
        return [_Event(AGENT, types.Content(role="user", parts=[part]))]
    return [_Event(AGENT)]  # a state change, a turn's end: no content


def sessions(*, tools: bool = True) -> st.SearchStrategy[list[_Event]]:
    kinds = ["user", "answer", "working", "none"] + (["call", "response"] if tools else [])
    return st.lists(st.sampled_from(kinds), max_size=14).map(
        lambda steps: [event for n, kind in enumerate(steps) for event in _make(kind, n)]
    )


def _is_input(event: _Event) -> bool:
    parts = event.content.parts if event.content is not None else []
    return event.author == "user" or any(p.function_response is not None for p in parts or [])


@given(sessions())
def test_a_handle_covers_every_input_output_followed_and_no_other(events: list[_Event]) -> None:
    covered = covered_event_id(events)
    ids = [event.id for event in events]
    end = 0 if covered == START else ids.index(covered) + 1
    with_content = [(i, e) for i, e in enumerate(events) if e.content is not None]
    for i, event in with_content:
        if i < end and _is_input(event):
            assert any(j < end and not _is_input(later) for j, later in with_content if j > i), (
                f"{event!r} covered, though no model output followed it"
            )
        if i >= end:
            assert _is_input(event), f"{event!r} left out, though nothing after it is input"


@given(sessions(), st.data())
def test_the_catch_up_tells_every_user_turn_once_and_asks_those_not_answered(
    events: list[_Event], data: st.DataObject
) -> None:
    covered = data.draw(st.sampled_from([START, *(event.id for event in events)]))
    after = catch_up(events, covered, AGENT)
    start = 0 if covered == START else [e.id for e in events].index(covered) + 1
    tail = [e for e in events[start:] if e.content is not None]
    if any(p.text is None for e in tail for p in e.content.parts or []):  # type: ignore[union-attr]
        assert after is None, "a call or a response cannot be told as a text turn"
        return
    assert after is not None
    turns = [e for e in tail if e.content is not None]
    answers = [i for i, e in enumerate(turns) if e.author != "user" and not is_working(e)]
    last_answer = answers[-1] if answers else -1
    told_users = [t for role, t in after.context if role == "user"] + after.unanswered
    assert told_users == [e.content.parts[0].text for e in turns if e.author == "user"]  # type: ignore[union-attr,index]
    assert (
        after.unanswered
        == [
            e.content.parts[0].text  # type: ignore[union-attr,index]
            for e in turns[last_answer + 1 :]
            if e.author == "user"
        ]
    ), "the turns after the model's last answer, a working utterance being none"
    late_working = {
        e.content.parts[0].text
        for e in turns[last_answer + 1 :]
        if is_working(e)  # type: ignore[union-attr,index]
    }
    assert not late_working & {t for role, t in after.context if role == "model"}


@given(sessions(tools=False))
def test_plain_turns_can_always_be_caught_up_from_the_covered_event(events: list[_Event]) -> None:
    """A session of text turns alone: what comes after the handle's covered event is told,
    and none of it is an answer (nothing after it but the unanswered user turns)."""
    after = catch_up(events, covered_event_id(events), AGENT)
    assert after is not None and after.context == []
