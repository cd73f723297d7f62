"""Races between connections, end to end: real ``Runner.run_live``, real google-genai, real TLS
websockets on 127.0.0.1, the fake Gemini Live server. Both entry points.

Each test places the user's send (or a goAway) inside a window between two connections:

* while the next connection is being opened ahead (a goAway move), the old one takes
  no client send: the turn waits for the new connection and is answered there, once;
* a request in ADK's hand (its session write, its screening by ``before_model_callback``) at
  a goAway or a drop is never cut short: it is answered once, on one connection, and content
  the callback blocks never reaches the model;
* a resumption handle that crosses the user's next turn does not start a move before that
  turn is answered;
* a goAway that arrives while a blocking tool runs starts its deadline when its frame
  arrives, so the move happens before the server's deadline;
* a socket opened ahead never outlives an agent transfer, nor its own maximum age.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.models.llm_response import LlmResponse
from google.adk.sessions import InMemorySessionService
from google.genai import types

import adk_live_resume
from adk_live_resume import ResumableLlmAgent, ResumePolicy, RunStats
from adk_live_resume.compat import adk_compat
from adk_live_resume.shell import early_dial
from adk_live_resume.testing import FakeLiveServer, Fault, HandleSchedule
from adk_live_resume.testing.driver import LiveDriver

from ..conftest import AgentFactory, adk_screens_live_content

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]


class SlowUserEvents(InMemorySessionService):  # type: ignore[misc]
    """Stores the user event whose text is ``slow_text`` at once, then answers ``delay`` s
    later, like a database a little far away; ``entered`` is set when that write begins."""

    def __init__(self, slow_text: str, delay: float) -> None:
        super().__init__()
        self.slow_text = slow_text
        self.delay = delay
        self.entered = asyncio.Event()

    async def append_event(self, session: Any, event: Any) -> Any:
        stored = await super().append_event(session, event)
        content = getattr(event, "content", None)
        text = "".join(p.text or "" for p in content.parts or []) if content else ""
        if getattr(event, "author", None) == "user" and text == self.slow_text:
            self.entered.set()
            await asyncio.sleep(self.delay)
        return stored


def _interrupted(live: LiveDriver) -> list[Any]:
    return [e for e in live.events if getattr(e, "interrupted", False)]


def _user_texts(session: Any) -> list[str]:
    return [
        "".join(p.text or "" for p in e.content.parts or [])
        for e in session.events
        if e.author == "user" and e.content is not None
    ]


# ---- the open-ahead window: a goAway move -----------------------------------------------------


async def test_a_turn_sent_while_the_next_connection_opens_goes_to_the_new_one(
    make_agent: AgentFactory,
) -> None:
    # goAway 0.9 s after accept, between turns: the next connection opens at once, and its
    # setup is answered 0.3 s later. "two" is sent inside that window.
    async with FakeLiveServer(
        time_scale=0.01, connection_lifetime=150, go_away_lead=60, chunk_delay=0.1
    ) as server:
        server.script(Fault.setup_delay(30), connection=2)
        agent = make_agent(server, policy=ResumePolicy(go_away_margin=0.05))
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one") == "echo: one"
            await server.wait_for_connections(2, timeout=5)
            old = server.connections[0]
            assert not old.finished, "still open: the window is now"
            mark = live.send_text("two")
            assert await live.answer_after(mark, timeout=10) == "echo: two"
            assert await live.say("recall") == "you said: one | two"
            await live.close()
        new = server.connections[1]
        assert old.user_turns == ["one"], "a turn went to the connection being replaced"
        assert new.resumed and new.user_turns[:2] == ["two", "recall"]
        assert server.user_turns_answered() == ["one", "two", "recall"]
        assert _interrupted(live) == [], "an answer was cut and said again"
        assert server.resent_consumed() == []


async def test_a_request_in_adks_hand_at_the_go_away_is_answered_before_the_move(
    make_agent: AgentFactory,
) -> None:
    # ADK's sender holds "two" (writing it to the session) when the goAway arrives, at what
    # would otherwise be a safe point. The move waits until "two" is answered.
    service = SlowUserEvents("two", delay=0.5)
    async with FakeLiveServer(chunk_delay=0.05) as server:
        agent = make_agent(server, policy=ResumePolicy(go_away_margin=0.5))
        async with await LiveDriver.start(agent, session_service=service) as live:
            assert await live.say("one") == "echo: one"
            mark = live.send_text("two")
            await asyncio.wait_for(service.entered.wait(), 5)
            assert server.go_away_now(3.0) == [1]
            assert await live.answer_after(mark, timeout=10) == "echo: two"
            await server.wait_for_connections(2, timeout=5)
            old, new = server.connections[:2]
            await server.wait_for(lambda: old.finished, 5, what="the old connection")
            assert await live.say("recall") == "you said: one | two"
            await live.close()
        assert old.user_turns == ["one", "two"] and old.ended_by == "client"
        assert new.resumed and "two" not in new.user_turns
        assert server.user_turns_answered() == ["one", "two", "recall"]
        assert _interrupted(live) == []


async def test_a_handle_that_crosses_the_next_turn_does_not_move_the_session_before_its_answer(
    make_agent: AgentFactory,
) -> None:
    # The goAway lands in the answer to "one", so the move waits for a handle. That handle
    # arrives only after the user sent "two" (it crosses it on the wire) and does not hold
    # "two": moving then would cut the answer to "two" and ask it again.
    async with FakeLiveServer(
        chunk_delay=0.1, handle_schedule=HandleSchedule(turn_handle_late=True)
    ) as server:
        agent = make_agent(server, policy=ResumePolicy(go_away_margin=0.2))
        async with await LiveDriver.start(agent) as live:
            mark = live.send_text("one")
            await live.wait_for_event(lambda e: bool(e.partial), after=mark, timeout=10)
            # (time enough for both answers on a loaded machine: at the server's deadline the
            # move would be forced, which is another test's matter)
            assert server.go_away_now(6.0) == [1]
            assert await live.answer_after(mark, timeout=10) == "echo: one"
            mark = live.send_text("two")
            assert await live.answer_after(mark, timeout=10) == "echo: two"
            answered_at = asyncio.get_running_loop().time()
            await server.wait_for_connections(2, timeout=8)  # at our deadline, at the latest
            assert await live.say("recall") == "you said: one | two"
            await live.close()
        old = server.connections[0]
        new = next(c for c in server.connections[1:] if c.setup is not None)
        assert old.user_turns == ["one", "two"] and old.ended_by == "client"
        assert new.resumed and new.answered_user_turns == ["recall"]
        # The move did not start while "two" waited for its answer: the next connection's
        # setup went after it (a socket may have been dialed ahead, set up by nobody).
        assert new.first_sent_at is not None and new.first_sent_at > answered_at - 0.05
        assert server.user_turns_answered() == ["one", "two", "recall"]
        assert _interrupted(live) == []


# ---- a request in ADK's hand when the socket drops ---------------------------------------------


@pytest.mark.parametrize("verdict", ["blocked", "allowed"])
async def test_a_turn_being_screened_at_a_drop_is_screened_once_and_blocked_content_never_sent(
    make_agent: AgentFactory, verdict: str
) -> None:
    if not adk_screens_live_content():
        pytest.skip("this google-adk release does not screen live content in its send step")
    entered = asyncio.Event()

    async def screen(callback_context: Any, llm_request: Any) -> LlmResponse | None:
        text = "".join(p.text or "" for c in llm_request.contents for p in c.parts or [])
        if "screen me" not in text:
            return None
        entered.set()
        await asyncio.sleep(1.5)  # longer than close_timeout
        if verdict == "blocked":
            return LlmResponse(
                content=types.Content(role="model", parts=[types.Part(text="not allowed")])
            )
        return None

    async with FakeLiveServer() as server:
        agent = make_agent(server, policy=ResumePolicy(), before_model_callback=screen)
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one") == "echo: one"
            mark = live.send_text("screen me please")
            await asyncio.wait_for(entered.wait(), 5)
            await server.close_open(1011)  # while the callback screens the turn
            expected = "not allowed" if verdict == "blocked" else "echo: screen me please"
            assert await live.answer_after(mark, timeout=10) == expected
            assert await live.say("two") == "echo: two"
            await live.close()
    sent = [str(m) for c in server.connections for m in c.client_messages]
    if verdict == "blocked":
        assert not any("screen me" in m for m in sent), "blocked content reached the model"
        assert server.user_turns_answered() == ["one", "two"]
    else:
        assert server.user_turns_answered() == ["one", "screen me please", "two"]
        assert sum("screen me" in m for m in sent) == 1, "sent once, after the screening"


async def test_a_request_in_hand_at_a_dead_handle_reaches_the_fresh_session_once(
    make_agent: AgentFactory,
) -> None:
    # ADK's sender writes "two" to a slow session when the socket drops, for longer than
    # close_timeout; the handle is then refused: the fresh session gets the conversation as
    # history, "two" included, and must not get "two" a second time as a turn.
    service = SlowUserEvents("two", delay=1.5)
    async with FakeLiveServer() as server:
        server.script(Fault.refuse_resume(), connection=2)
        agent = make_agent(server)
        async with await LiveDriver.start(agent, session_service=service) as live:
            assert await live.say("one") == "echo: one"
            mark = live.send_text("two")
            await asyncio.wait_for(service.entered.wait(), 5)
            await server.close_open(1011)
            assert await live.answer_after(mark, timeout=10) == "echo: two"
            assert await live.say("recall") == "you said: one | two"
            await live.close()
        session = await service.get_session(
            app_name=live.session.app_name, user_id=live.session.user_id, session_id=live.session.id
        )
    fresh = server.connections[2]
    assert fresh.resume_handle is None, "a fresh session"
    assert [t.text for t in fresh.heard].count("two") == 1, fresh.heard
    assert server.user_turns_answered().count("two") == 1
    assert server.duplicate_history_sends() == 0
    assert _user_texts(session).count("two") == 1


# ---- goAway while a blocking tool runs ---------------------------------------------------------


async def test_a_go_away_during_a_blocking_tool_moves_before_the_servers_deadline(
    make_agent: AgentFactory,
) -> None:
    runs: list[str] = []

    async def slow_lookup(item: str) -> dict[str, str]:
        """Look an item up (takes a second)."""
        runs.append(item)
        await asyncio.sleep(1.0)
        return {"item": item, "found": "yes"}

    async with FakeLiveServer() as server:
        agent = make_agent(server, tools=[slow_lookup], policy=ResumePolicy(go_away_margin=0.3))
        async with await LiveDriver.start(agent) as live:
            mark = live.send_text('call slow_lookup {"item": "x"}')
            await live.wait_for_event(lambda e: bool(e.get_function_calls()), after=mark)
            await asyncio.sleep(0.1)  # the tool runs inside ADK's receive step now
            assert server.go_away_now(0.7) == [1]  # our deadline 0.4 s from now
            answer = await live.answer_after(mark, timeout=15)
            assert answer == 'slow_lookup returned {"found":"yes","item":"x"}'
            assert await live.say("after") == "echo: after"
            await live.close()
    old = server.connections[0]
    assert old.ended_by == "client", f"the server's deadline closed it: {old.ended_by}"
    assert runs == ["x"], "the tool ran again"
    assert all(not c.unknown_tool_response_ids for c in server.connections)


# ---- sockets opened ahead ----------------------------------------------------------------------


async def test_a_socket_opened_ahead_is_closed_before_an_agent_transfer(
    make_agent: AgentFactory,
) -> None:
    # A goAway arrives while the model's transfer call is handled (not a safe point: the
    # socket for the next connection is opened ahead); then the session moves to the child
    # agent, which starts its own session: that socket must not stay open, set up by nobody.
    async with FakeLiveServer(handle_schedule=HandleSchedule(on_turn_complete=False)) as server:
        helper = make_agent(server, name="helper", instruction="You help.")
        root = make_agent(server, name="root", sub_agents=[helper])
        async with await LiveDriver.start(root) as live:
            mark = live.send_text('call transfer_to_agent {"agent_name": "helper"}')
            await live.wait_for_event(lambda e: bool(e.get_function_calls()), after=mark)
            assert server.go_away_now(20.0) == [1]
            await live.wait_for_event(
                lambda e: e.author == "helper" and e.turn_complete, after=mark, timeout=10
            )
            assert await live.say("hi helper") == "echo: hi helper"
            dialed = [c for c in server.connections if c.setup is None]
            assert dialed, "a socket was opened ahead on the goAway"
            await server.wait_for(
                lambda: all(c.finished for c in dialed), 3, what="the socket opened ahead closed"
            )
            assert not live.ended
            await live.close()


async def test_a_socket_opened_ahead_and_never_taken_is_closed_at_its_maximum_age(
    make_agent: AgentFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(early_dial, "MAX_AGE", 0.5)
    stats: list[RunStats] = []
    remove = adk_live_resume.on_run_end(stats.append)
    try:
        async with FakeLiveServer(chunk_delay=0.25) as server:
            agent = make_agent(server, policy=ResumePolicy(go_away_margin=0.2))
            async with await LiveDriver.start(agent) as live:
                text = " ".join(["a long answer"] * 8)  # streams for about 2 s
                mark = live.send_text(text)
                await live.wait_for_event(lambda e: bool(e.partial), after=mark, timeout=10)
                assert server.go_away_now(10.0) == [1]
                await server.wait_for(
                    lambda: any(c.setup is None for c in server.connections), 3, what="dialed"
                )
                dialed = next(c for c in server.connections if c.setup is None)
                await server.wait_for(lambda: dialed.finished, 2, what="closed at MAX_AGE")
                assert not server.connections[0].finished, "while the answer still streams"
                assert await live.answer_after(mark, timeout=15) == f"echo: {text}"
                assert await live.say("after") == "echo: after"
                await live.close()
    finally:
        remove()
    assert len(stats) == 1 and stats[0].sockets_dialed_early == 1
    assert stats[0].early_sockets_used == 0


# ---- content ADK's screening blocked --------------------------------------------------------


@pytest.mark.parametrize("then", ["dead handle", "transfer"])
async def test_a_blocked_turn_stays_out_of_every_history_sent_later(
    make_agent: AgentFactory, then: str
) -> None:
    # ADK writes the typed turn to its session before it screens it; a turn the callback
    # blocks stays there. A fresh session rebuilt from the ADK session (a dead handle, or the
    # child of a transfer) must not get it as history.
    if not adk_screens_live_content():
        pytest.skip("this google-adk release does not screen live content in its send step")

    async def screen(callback_context: Any, llm_request: Any) -> LlmResponse | None:
        text = "".join(p.text or "" for c in llm_request.contents for p in c.parts or [])
        if "forbidden" in text:
            return LlmResponse(
                content=types.Content(role="model", parts=[types.Part(text="not allowed")])
            )
        return None

    async with FakeLiveServer() as server:
        server.script(Fault.refuse_resume(), connection=2)
        make_agent(server)  # installs the patch for the "install" entry point
        cls = LlmAgent if make_agent.entry == "install" else ResumableLlmAgent
        helper = cls(name="helper", model=server.gemini(), before_model_callback=screen)
        agent = cls(
            name="assistant",
            model=server.gemini(),
            before_model_callback=screen,
            sub_agents=[helper],
        )
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one") == "echo: one"
            assert await live.say("a forbidden thing") == "not allowed"
            if then == "dead handle":
                await server.close_open(1011)  # the resume is refused: a fresh session
            else:
                mark = live.send_text('call transfer_to_agent {"agent_name": "helper"}')
                await live.wait_for_event(
                    lambda e: e.author == "helper" and bool(e.turn_complete), after=mark
                )
            assert await live.say("two") == "echo: two"
            await live.close()
    sent = [str(m) for c in server.connections for m in c.client_messages]
    assert not [m for m in sent if "forbidden" in m], "blocked content reached the model"
    assert any("one" in t.text for c in server.connections[1:] for t in c.heard), "history"


# ---- a fresh session's history -----------------------------------------------------------------


@pytest.mark.parametrize("model", ["gemini-live-fake", "gemini-3.1-flash-live-preview"])
async def test_a_fresh_sessions_history_is_never_replayed_after_a_later_drop(
    make_agent: AgentFactory, model: str
) -> None:
    # The handle is refused: a fresh session gets the conversation as history. Its next
    # handle comes before any model output (nothing told the Gemini API rule that the history
    # was taken in), then the socket drops: the resume must not send the history again
    # (Gemini 3.x refuses client content then; 2.x would hear it twice).
    if model.startswith("gemini-3") and not adk_compat.speaks_gemini_3_live(model):
        pytest.skip("this google-adk release does not speak the Gemini 3.x Live dialect")
    async with FakeLiveServer(handle_schedule=HandleSchedule(on_turn_complete=False)) as server:
        server.script(Fault.refuse_resume(), connection=2)
        make_agent(server)  # installs the patch for the "install" entry point
        cls = LlmAgent if make_agent.entry == "install" else ResumableLlmAgent
        agent = cls(name="assistant", model=server.gemini(model))
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one") == "echo: one"
            assert (await server.issue_handles_now())[1] is not None
            await server.close_open(1011)  # the resume is refused: a fresh session
            await server.wait_for_connections(3)
            await server.wait_for(lambda: server.connections[2].history_sends == 1, 5)
            assert (await server.issue_handles_now())[3] is not None
            await asyncio.sleep(0.1)  # the handle reaches the client
            await server.close_open(1011)
            assert await live.say("two") == "echo: two"
            assert await live.say("recall") == "you said: one | two"
            await live.close()
    assert server.history_sends() == 1 and server.duplicate_history_sends() == 0
    assert server.rejected_client_content() == []
    assert server.connections[3].resumed
