"""Property: withheld content is never sent, and everything else stays, in order.

Random ADK sessions (typed user turns with few distinct words, so that the same words come
again; the agent's answers; spoken turns ADK keeps as input transcriptions; a background
call whose late result is the newest event) with random turns blocked by
``before_model_callback``. The reference is the contract of docs/guarantees.md ("Blocked
content stays blocked") and :mod:`adk_live_resume.conversation.withheld`: a blocked turn is known by
its event, not its words; no history or catch-up built from the session holds it; every other turn
of that history or catch-up stays, in order.

ADK's history is modelled as google-adk builds it (``flows/llm_flows/contents``): one
content per event with content, consecutive input transcriptions joined into one user
turn, and a newest event that is a function response moved next to its call with every
event between them left out.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from google.genai import types
from hypothesis import given
from hypothesis import strategies as st

from adk_live_resume.conversation import withheld
from adk_live_resume.resumption import handle_coverage

from ...helpers import content

AGENT = "assistant"
WORDS = ("yes", "no", "delete everything")
_ids = itertools.count()


@dataclass
class _Event:
    """The attributes of ADK's ``Event`` that the rules read."""

    author: str
    content: types.Content | None = None
    input_transcription: types.Transcription | None = None
    output_transcription: types.Transcription | None = None
    partial: bool | None = None
    id: str = field(default_factory=lambda: f"e{next(_ids)}")

    def __repr__(self) -> str:
        if self.content is None:
            spoken = self.input_transcription.text if self.input_transcription else ""
            return f"spoken:{spoken!r}"
        part = (self.content.parts or [types.Part()])[0]
        if part.function_call is not None:
            return f"call({part.function_call.id})"
        if part.function_response is not None:
            return f"result({part.function_response.id})"
        return f"{self.author}:{withheld.content_text(self.content)!r}"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))


@dataclass
class _Session:
    events: list[_Event]
    #: The events a blocked typed turn was written as.
    blocked: set[str]

    def __repr__(self) -> str:
        marked = [f"BLOCKED {e!r}" if e.id in self.blocked else repr(e) for e in self.events]
        return f"Session({', '.join(marked)})"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))


@st.composite
def sessions(draw: st.DrawFn, *, spoken: bool = True, background: bool = True) -> _Session:
    """A session: typed turns (some blocked), answers, spoken turns, a late result."""
    kinds = ["typed", "typed", "answer", *(["spoken"] if spoken else [])]
    events: list[_Event] = []
    blocked: set[str] = set()
    steps = draw(st.lists(st.tuples(st.sampled_from(kinds), st.sampled_from(WORDS)), max_size=12))
    call_at = draw(st.integers(0, len(steps))) if background and draw(st.booleans()) else None
    for position, (kind, word) in enumerate(steps):
        if position == call_at:
            part = types.Part(function_call=types.FunctionCall(id="bg", name="job", args={}))
            events.append(_Event(AGENT, types.Content(role="model", parts=[part])))
        if kind == "typed":
            event = _Event("user", content("user", word))
            events.append(event)
            if draw(st.booleans()):
                blocked.add(event.id)
                events.append(_Event(AGENT, content("model", "not allowed")))
        elif kind == "answer":
            events.append(_Event(AGENT, content("model", f"echo: {word}")))
        else:
            events.append(_Event("user", input_transcription=types.Transcription(text=word)))
    if call_at is not None:
        if call_at == len(steps):
            part = types.Part(function_call=types.FunctionCall(id="bg", name="job", args={}))
            events.append(_Event(AGENT, types.Content(role="model", parts=[part])))
        response = types.FunctionResponse(id="bg", name="job", response={"done": True})
        events.append(
            _Event(
                "user", types.Content(role="user", parts=[types.Part(function_response=response)])
            )
        )
    return _Session(events, blocked)


def adk_history(events: list[_Event]) -> list[tuple[types.Content, list[str]]]:
    """ADK's history of ``events``: each content with the ids of the events it came from."""
    events = list(events)
    newest = events[-1] if events else None
    if newest is not None and newest.content is not None:
        responses = [
            p.function_response.id for p in newest.content.parts or [] if p.function_response
        ]
        if responses:
            at = next(
                i
                for i, e in enumerate(events)
                if e.content is not None
                and any(
                    p.function_call and p.function_call.id in responses
                    for p in e.content.parts or []
                )
            )
            events = [*events[: at + 1], newest]
    history: list[tuple[types.Content, list[str]]] = []
    spoken: list[_Event] = []
    for position, event in enumerate(events):
        if event.content is None and event.input_transcription is not None:
            spoken.append(event)
            following = events[position + 1] if position + 1 < len(events) else None
            if following is not None and following.input_transcription is not None:
                continue
            text = "".join(
                e.input_transcription.text or "" for e in spoken if e.input_transcription
            )
            history.append((content("user", text), [e.id for e in spoken]))
            spoken = []
        elif event.content is not None:
            history.append((event.content, [event.id]))
    return history


def _words(contents: list[Any]) -> list[str]:
    return [f"{getattr(c, 'role', '?')}:{withheld.content_text(c)}" for c in contents]


def _check_history(session: _Session) -> None:
    history = adk_history(session.events)
    screened = withheld.Withheld(frozenset(session.blocked))
    got = screened.history([content for content, _ in history], session.events)
    expected = [
        content for content, sources in history if not session.blocked.intersection(sources)
    ]
    assert [id(c) for c in got] == [id(c) for c in expected], (
        f"history {_words(got)} != expected {_words(expected)}"
    )


@given(sessions(spoken=False, background=False))
def test_withheld_typed_turns_leave_the_history_and_every_other_turn_stays(
    session: _Session,
) -> None:
    """Typed turns and answers only: the blocked events' turns, and only they, leave."""
    _check_history(session)


@given(sessions(background=False))
def test_withheld_turns_leave_a_history_with_spoken_turns_and_only_they(
    session: _Session,
) -> None:
    """The same with spoken turns: ADK's history holds their transcriptions as user turns,
    which may have the words of a blocked typed turn."""
    _check_history(session)


@given(sessions(spoken=False))
def test_withheld_turns_leave_a_history_that_ends_in_a_late_result_and_only_they(
    session: _Session,
) -> None:
    """The same when the newest event is a background call's late result: ADK moves it next
    to its call and leaves out every event between them."""
    _check_history(session)


@given(sessions())
def test_withheld_turns_leave_any_history_and_only_they(session: _Session) -> None:
    """Typed and spoken turns, answers and a late result together."""
    _check_history(session)


@given(sessions(spoken=False, background=False), st.data())
def test_a_catch_up_holds_no_withheld_turn_and_every_other_turn_in_order(
    session: _Session, data: st.DataObject
) -> None:
    """What comes after a stored handle's covered event: every turn after it but the blocked
    ones, in order, the finished exchanges apart from the unanswered turns."""
    events = session.events
    covered = data.draw(st.sampled_from([handle_coverage.START, *(e.id for e in events)]))
    screened = withheld.Withheld(frozenset(session.blocked))
    after = handle_coverage.catch_up(events, covered, AGENT, screened)
    assert after is not None, "plain text turns can always be given back"
    start = 0 if covered == handle_coverage.START else 1 + [e.id for e in events].index(covered)
    turns = [
        ("user" if e.author == "user" else "model", withheld.content_text(e.content))
        for e in events[start:]
        if e.id not in session.blocked
    ]
    last_model = max((i for i, (role, _) in enumerate(turns) if role == "model"), default=-1)
    assert after.context == turns[: last_model + 1]
    assert after.unanswered == [text for _, text in turns[last_model + 1 :]]
