"""withheld: user turns ADK's screening blocked never go back to the model as history.

The pure rules first; then end to end (real ``Runner.run_live``, real google-genai, TLS
websockets to the fake server, both entry points) where this google-adk release screens live
content (2.x).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.events.event import Event
from google.adk.models.llm_response import LlmResponse
from google.genai import types

from adk_live_resume import ResumableLlmAgent, ResumePolicy
from adk_live_resume.conversation import withheld
from adk_live_resume.testing import FakeLiveServer, Fault
from adk_live_resume.testing.driver import LiveDriver

from ..conftest import AgentFactory, adk_screens_live_content
from ..helpers import content


def _events(*turns: tuple[str, str]) -> list[Event]:
    return [
        Event(author="user" if role == "user" else "assistant", content=content(role, text))
        for role, text in turns
    ]


def _texts(contents: list[Any]) -> list[str]:
    return [withheld.content_text(c) for c in contents]


def test_a_withheld_turn_leaves_the_history_by_its_event_not_by_its_words() -> None:
    events = _events(
        ("user", "yes"),
        ("model", "echo: yes"),
        ("user", "delete everything"),
        ("model", "echo: delete everything"),
        ("user", "yes"),  # blocked
        ("model", "not allowed"),
        ("user", "yes"),  # sent again later and answered: it stays
        ("model", "echo: yes"),
    )
    history = [event.content for event in events]  # as ADK rebuilds it, in the events' order
    screened = withheld.Withheld(frozenset({events[4].id}))
    assert _texts(screened.history(history, events)) == [
        "yes",
        "echo: yes",
        "delete everything",
        "echo: delete everything",
        "not allowed",
        "yes",
        "echo: yes",
    ]
    assert _texts(screened.history(history[:6], events[:6])) == [
        "yes",  # the earlier turn with the same words stays
        "echo: yes",
        "delete everything",
        "echo: delete everything",
        "not allowed",
    ]
    assert len(history) == 8, "the session's contents are not changed"
    assert screened.events(events) == events[:4] + events[5:]
    assert withheld.Withheld().history(history, events) == history


def test_a_withheld_turn_is_found_when_adk_left_an_earlier_event_out_of_the_history() -> None:
    events = _events(("user", "yes"), ("user", "yes"), ("model", "not allowed"), ("user", "yes"))
    # ADK's history lacks the first "yes" (a turn between a background call and its result)
    history = [events[1].content, events[2].content, events[3].content]
    screened = withheld.Withheld(frozenset({events[1].id}))
    assert _texts(screened.history(history, events)) == ["not allowed", "yes"]


def test_a_spoken_turn_with_the_words_of_a_withheld_one_after_it_does_not_take_its_place() -> None:
    """ADK's history holds a transcription as a user turn: it counts among the turns with its
    words (found by the property tests: the spoken "yes" was removed, the blocked one sent)."""
    events = [
        *_events(("user", "yes"), ("model", "not allowed")),
        Event(author="user", input_transcription=types.Transcription(text="yes")),
    ]
    history = [events[0].content, events[1].content, content("user", "yes")]
    screened = withheld.Withheld(frozenset({events[0].id}))
    assert screened.history(history, events) == history[1:]


def test_turns_adk_leaves_out_before_a_late_result_take_no_place_among_those_words() -> None:
    """A background call's late result, the newest event, moves next to its call and ADK
    leaves the turns between them out (found by the property tests: the blocked "yes" was
    sent and the allowed one before it removed)."""
    call = types.Part(function_call=types.FunctionCall(id="bg", name="job", args={}))
    result = types.Part(function_response=types.FunctionResponse(id="bg", name="job", response={}))
    events = [
        *_events(("user", "yes"), ("model", "not allowed")),
        Event(author="assistant", content=types.Content(role="model", parts=[call])),
        *_events(("user", "yes")),
        Event(author="user", content=types.Content(role="user", parts=[result])),
    ]
    history = [events[0].content, events[1].content, events[2].content, events[4].content]
    screened = withheld.Withheld(frozenset({events[0].id}))
    assert screened.history(history, events) == history[1:]
    allowed_first = withheld.Withheld(frozenset({events[3].id}))
    assert allowed_first.history(history, events) == history


def test_the_source_event_is_the_one_holding_the_content_else_the_newest_with_its_words() -> None:
    said = content("user", "yes")
    events = _events(("user", "yes"), ("model", "yes"))
    mine = Event(author="user", content=said)
    assert withheld.source_event([*events, mine, *_events(("user", "yes"))], said) is mine
    copy = said.model_copy()  # ADK stored a copy (it set the role)
    assert withheld.source_event(events, copy) is events[0]
    assert withheld.source_event(events, content("user", "no")) is None
    assert withheld.source_event([], said) is None


def test_the_record_is_per_session_and_bounded() -> None:
    withheld.forget("s1")
    withheld.forget("s2")
    for n in range(withheld.MAX_TURNS + 5):
        withheld.note("s1", f"e{n}")
    withheld.note("s1", "")  # no event: nothing to keep out
    withheld.note("s1", f"e{withheld.MAX_TURNS + 4}")  # noted once
    kept = withheld.of_session("s1").event_ids
    assert "e4" not in kept and "e5" in kept and len(kept) == withheld.MAX_TURNS
    assert withheld.of_session("s2") == withheld.Withheld()
    withheld.forget("s1")


# ---- end to end: real Runner.run_live, the fake Gemini Live server, both entry points ----------


def _agent(
    make_agent: AgentFactory, server: FakeLiveServer, policy: ResumePolicy, **extra: Any
) -> Any:
    """A live agent through the test's entry point, with ADK options ``make_agent`` lacks."""
    make_agent(server, policy=policy)  # installs the patch for the "install" entry point
    if make_agent.entry == "install":
        return LlmAgent(name="assistant", model=server.gemini(), **extra)
    return ResumableLlmAgent(name="assistant", model=server.gemini(), resume_policy=policy, **extra)


def _refusal() -> LlmResponse:
    return LlmResponse(content=types.Content(role="model", parts=[types.Part(text="not allowed")]))


def _screened_text(llm_request: Any) -> str:
    return "".join(p.text or "" for c in llm_request.contents for p in c.parts or [])


def _sent(server: FakeLiveServer) -> list[str]:
    return [str(m) for c in server.connections for m in c.client_messages]


async def _next_run(live: LiveDriver, run_config: Any) -> LiveDriver:
    """A second ``run_live`` of ``live``'s session in this process, on the same runner."""
    from google.adk.agents.live_request_queue import LiveRequestQueue

    session = await live.runner.session_service.get_session(
        app_name=live.session.app_name, user_id=live.session.user_id, session_id=live.session.id
    )
    driver = LiveDriver(live.runner, session, LiveRequestQueue(), run_config)
    driver._task = asyncio.create_task(driver._consume(session.user_id), name="LiveDriver.run_live")
    return driver


@pytest.mark.e2e
async def test_a_blocked_turn_stays_out_of_the_catch_up_of_a_stored_handle(
    make_agent: AgentFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The stored handle covers "one"; the blocked turn and its refusal come after it in the
    # ADK session. The next run_live resumes with the stored handle and gets what came after
    # it as context: never the blocked turn.
    if not adk_screens_live_content():
        pytest.skip("this google-adk release does not screen live content in its send step")
    from cryptography.fernet import Fernet
    from google.adk.agents.run_config import RunConfig

    from adk_live_resume.resumption.stored_handle import HANDLE_KEY_ENV

    async def screen(callback_context: Any, llm_request: Any) -> LlmResponse | None:
        return _refusal() if "forbidden" in _screened_text(llm_request) else None

    monkeypatch.setenv(HANDLE_KEY_ENV, Fernet.generate_key().decode())
    config = RunConfig(response_modalities=[types.Modality.TEXT])  # no handles to the app
    async with asyncio.timeout(45), FakeLiveServer() as server:
        policy = ResumePolicy(store_handle_in_session=True)
        agent = _agent(make_agent, server, policy, before_model_callback=screen)
        async with await LiveDriver.start(agent, run_config=config) as first:
            assert await first.say("one") == "echo: one"
            assert await first.say("a forbidden thing") == "not allowed"
            await first.close()
        async with await _next_run(first, config) as second:
            assert await second.say("two") == "echo: two"
            assert await second.say("recall") == "you said: one | two"
            await second.close()
    resumed = server.connections[1]
    assert resumed.resumed and resumed.resume_handle == server.connections[0].handles_issued[-1]
    assert not [m for m in _sent(server) if "forbidden" in m], "blocked content reached the model"


@pytest.mark.e2e
async def test_a_blocked_turn_is_kept_out_by_the_event_it_came_from_not_by_its_words(
    make_agent: AgentFactory,
) -> None:
    # "yes" is answered, then "delete everything", then a second "yes" is blocked. The resume
    # is refused: the fresh session's history keeps the first "yes" and leaves out the second.
    if not adk_screens_live_content():
        pytest.skip("this google-adk release does not screen live content in its send step")
    yeses: list[str] = []

    async def screen(callback_context: Any, llm_request: Any) -> LlmResponse | None:
        if _screened_text(llm_request) != "yes":
            return None
        yeses.append("yes")
        return _refusal() if len(yeses) == 2 else None

    async with asyncio.timeout(45), FakeLiveServer() as server:
        server.script(Fault.refuse_resume(), connection=2)
        agent = _agent(make_agent, server, ResumePolicy(), before_model_callback=screen)
        async with await LiveDriver.start(agent) as live:
            assert await live.say("yes") == "echo: yes"
            assert await live.say("delete everything") == "echo: delete everything"
            assert await live.say("yes") == "not allowed"
            await server.close_open(1011)  # the resume is refused: a fresh session
            assert await live.say("recall") == "you said: yes | delete everything"
            await live.close()
    fresh = server.connections[-1]
    assert fresh.resume_handle is None and fresh.history_sends == 1
    assert server.user_turns_answered() == ["yes", "delete everything", "recall"]
