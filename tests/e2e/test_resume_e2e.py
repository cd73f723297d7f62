"""The resumable loop end to end: real ``Runner.run_live``, real google-genai, real TLS
websockets on 127.0.0.1, our fake Gemini Live server on the other side.

Every scenario runs twice, once per entry point (``install()`` and ``ResumableLlmAgent``).
"""

from __future__ import annotations

import asyncio
import logging

import pytest

import adk_live_resume
from adk_live_resume import (
    ReconnectFailedError,
    ReconnectInfo,
    ResumePolicy,
    SessionNotResumableError,
)
from adk_live_resume.testing import FakeLiveServer, Fault
from adk_live_resume.testing.driver import LiveDriver

from ..conftest import AgentFactory, our_tasks

pytestmark = [pytest.mark.core, pytest.mark.e2e, pytest.mark.timeout(60)]


def _resumption_updates(server: FakeLiveServer, connection: int) -> list[dict[str, object]]:
    record = server.connections[connection - 1]
    return [
        m["sessionResumptionUpdate"]
        for m in record.server_messages
        if "sessionResumptionUpdate" in m
    ]


@pytest.mark.parametrize("code", [1000, 1006, 1011])
async def test_drop_after_a_handle_resumes_and_the_next_turn_is_answered(
    make_agent: AgentFactory, code: int
) -> None:
    reconnects: list[ReconnectInfo] = []
    remove = adk_live_resume.on_reconnect(reconnects.append)
    try:
        async with FakeLiveServer() as server:
            agent = make_agent(server)
            history = [("user", "my name is Ada"), ("model", "hello Ada")]
            async with await LiveDriver.start(agent, history=history) as live:
                assert await live.say("first") == "echo: first"
                await server.close_open(code)
                await server.wait_for_connections(2)
                assert await live.say("second") == "echo: second"
                assert await live.say("recall") == "you said: my name is Ada | first | second"
                assert await live.close() is None
            first, second = server.connections
            assert (first.ended_by, first.close_code) == ("fault", code)
            assert second.resume_handle == first.handles_issued[-1] and second.resumed
            assert server.history_sends() == 1 and first.history_sends == 1
            assert server.duplicate_history_sends() == 0
            assert server.user_turns_answered() == ["first", "second", "recall"]
    finally:
        remove()
    assert [(r.reason, r.attempt, r.state_restored) for r in reconnects] == [("drop", 1, True)]
    assert str(code) in reconnects[0].cause and reconnects[0].gap_ms >= 0


async def test_resumed_setup_drops_history_config_and_never_sets_transparent(
    make_agent: AgentFactory,
) -> None:
    from google.genai import types

    if "history_config" not in types.LiveConnectConfig.model_fields:
        pytest.skip("this google-genai has no history_config (the oldest google-adk allows)")
    async with FakeLiveServer() as server:
        agent = make_agent(server)
        async with await LiveDriver.start(
            agent, history=[("user", "earlier"), ("model", "ok")]
        ) as live:
            assert await live.say("one") == "echo: one"
            await server.restart()
            await server.wait_for_connections(2)
            assert await live.say("two") == "echo: two"
            await live.close()
        first, second = server.connections
        assert first.setup is not None and second.setup is not None
        assert "historyConfig" in first.setup or "history_config" in first.setup
        assert "historyConfig" not in second.setup and "history_config" not in second.setup
        for record in (first, second):
            assert not record.transparent  # Gemini API backend: the SDK would raise
    # the caller's RunConfig was not touched
    assert live.run_config.session_resumption.handle is None


async def test_go_away_mid_turn_finishes_the_turn_then_resumes_before_the_deadline(
    make_agent: AgentFactory,
) -> None:
    reconnects: list[ReconnectInfo] = []
    remove = adk_live_resume.on_reconnect(reconnects.append)
    # 100 service seconds at 0.01 -> the connection lives 1.0 s real; goAway 0.6 s before.
    server = FakeLiveServer(
        time_scale=0.01, connection_lifetime=100, go_away_lead=60, chunk_delay=0.2
    )
    try:
        async with server:
            agent = make_agent(server, policy=ResumePolicy(go_away_margin=0.05))
            async with await LiveDriver.start(agent) as live:
                assert await live.say("a long answer please") == "echo: a long answer please"
                await server.wait_for_connections(2)
                assert await live.say("after") == "echo: after"
                await live.close()
            first = server.connections[0]
            assert first.go_away_sent
            assert first.ended_by == "client", "we must close before the server's deadline"
            assert server.connections[1].resumed
            assert server.user_turns_answered()[:2] == ["a long answer please", "after"]
            assert server.history_sends() == 0
    finally:
        remove()
    assert reconnects and reconnects[0].reason == "go_away" and reconnects[0].state_restored


async def test_go_away_with_a_silent_server_reconnects_on_the_independent_timer(
    make_agent: AgentFactory,
) -> None:
    # A turn that outlasts the connection: the safe point never comes, the timer must fire.
    server = FakeLiveServer(
        time_scale=0.01, connection_lifetime=100, go_away_lead=60, chunk_delay=0.5
    )
    async with server:
        agent = make_agent(server, policy=ResumePolicy(go_away_margin=0.2))
        async with await LiveDriver.start(agent) as live:
            live.send_text("slow")
            await server.wait_for_connections(2, timeout=5)
            first = server.connections[0]
            await server.wait_for(lambda: first.finished, 5)
            assert first.go_away_sent and first.ended_by == "client"
            await live.close()


async def test_resumable_false_update_keeps_the_earlier_handle(make_agent: AgentFactory) -> None:
    async with FakeLiveServer(chunk_delay=0.2) as server:
        agent = make_agent(server)
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one") == "echo: one"
            good = server.connections[0].handles_issued[-1]
            mark = live.send_text("two")  # generating: resumable=false, no handle
            await server.wait_for(
                lambda: _resumption_updates(server, 1)[-1].get("resumable") is False, 5
            )
            await server.close_open(1011)
            await server.wait_for_connections(2)
            # the cut answer is closed, then "two" (replayed) is answered on the new connection
            cut = await live.wait_for_event(lambda e: e.interrupted, after=mark)
            assert await live.answer_after(live.events.index(cut) + 1) == "echo: two"
            assert await live.say("three") == "echo: three"
            await live.close()
        assert server.connections[1].resume_handle == good and server.connections[1].resumed


async def test_a_server_that_closes_every_resume_is_left_for_a_fresh_start_that_works(
    make_agent: AgentFactory,
) -> None:
    """Every resumed connection is set up and closed at once with 1011 (``flap`` closes
    resumes only). This run used to try the handle ``max_attempts`` times and end with
    ``ReconnectFailedError`` ("4 connection attempts failed"), the conversation lost,
    although a fresh session would have worked: the field's poisoned handle (forum threads
    175234, 178035). Two resumes in a row closed the same way before any answer now leave
    the handle for one fresh start, which saves the conversation; a server that closes
    every connection, fresh ones too, ends the run with ``PoisonedSessionError``
    (tests/e2e/test_failure_classes_e2e.py), and one that fails otherwise still ends after
    ``max_attempts`` (tests/unit/observe/test_observe.py)."""
    async with FakeLiveServer() as server:
        agent = make_agent(server, policy=ResumePolicy(max_attempts=4))
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one") == "echo: one"
            server.flap(1011)
            await server.close_open(1011)
            assert await live.say("what did I say first?", timeout=20) == "you first said: one"
            assert await live.close() is None
        first, *flapped, fresh = server.connections
        assert [(c.resumed, c.ended_by) for c in flapped] == [(True, "flap")] * 2
        assert not fresh.resumed and fresh.history_sends == 1 and first.ended_by == "fault"


async def test_flapping_server_that_speaks_before_dropping_hits_the_rate_cap(
    make_agent: AgentFactory,
) -> None:
    # Each resumed connection starts answering (so it proves healthy and the attempt counter
    # resets), then drops mid-turn. Only the per-minute cap can stop this loop.
    async with FakeLiveServer(chunk_delay=0.05) as server:
        agent = make_agent(server, policy=ResumePolicy(max_reconnects_per_minute=5))
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one") == "echo: one"
            for _ in range(10):
                server.script(Fault.close(1011, mid_turn=True))
            await server.close_open(1011)
            n = 0
            while not live.ended and n < 200:  # a user who keeps talking
                live.send_text(f"t{n}")
                n += 1
                await asyncio.sleep(0.03)
            error = await live.wait_ended(timeout=20)
        assert isinstance(error, ReconnectFailedError), error
        assert "more than 5 reconnects within 60 s" in str(error)
        assert len(server.connections) == 1 + 5


async def test_refused_handle_starts_a_fresh_session_with_the_conversation_once(
    make_agent: AgentFactory,
) -> None:
    reconnects: list[ReconnectInfo] = []
    remove = adk_live_resume.on_reconnect(reconnects.append)
    try:
        async with FakeLiveServer() as server:
            agent = make_agent(server)
            async with await LiveDriver.start(agent) as live:
                assert await live.say("one") == "echo: one"
                server.script(Fault.refuse_resume(), connection=2)
                await server.close_open(1011)
                await server.wait_for_connections(3)
                assert await live.say("what did I say first?") == "you first said: one"
                await live.close()
            refused, fresh = server.connections[1], server.connections[2]
            assert (refused.ended_by, refused.close_code) == ("refused", 1008)
            assert fresh.resume_handle is None and fresh.history_sends == 1
            assert server.duplicate_history_sends() == 0 and len(server.connections) == 3
    finally:
        remove()
    assert [(r.reason, r.state_restored) for r in reconnects] == [("restart", False)]


async def test_refused_handle_with_fresh_start_disabled_ends_with_a_clear_error_and_no_loop(
    make_agent: AgentFactory,
) -> None:
    async with FakeLiveServer() as server:
        agent = make_agent(server, policy=ResumePolicy(fresh_start_when_handle_dead=False))
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one") == "echo: one"
            server.script(Fault.refuse_resume(), connection=2)
            await server.close_open(1011)
            error = await live.wait_ended(timeout=10)
        assert isinstance(error, SessionNotResumableError), error
        assert error.code == 1008 and "while resuming with a handle" in str(error)
        assert len(server.connections) == 2


async def test_queue_close_ends_the_run_promptly_without_reconnecting(
    make_agent: AgentFactory,
) -> None:
    async with FakeLiveServer() as server:
        agent = make_agent(server)
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one") == "echo: one"
            loop = asyncio.get_running_loop()
            started = loop.time()
            assert await live.close(timeout=5) is None
            assert loop.time() - started < 2.0
        await asyncio.sleep(0.2)
        assert len(server.connections) == 1 and server.connections[0].ended_by == "client"


async def test_cancel_ends_within_a_second_and_leaves_no_task(make_agent: AgentFactory) -> None:
    async with FakeLiveServer() as server:
        agent = make_agent(server)
        live = await LiveDriver.start(agent)
        assert await live.say("one") == "echo: one"
        assert our_tasks(), "the send task should be running"
        assert await live.cancel() < 1.0
        await asyncio.sleep(0)
        assert our_tasks() == []


async def test_cancel_during_a_reconnect_backoff_ends_within_a_second(
    make_agent: AgentFactory,
) -> None:
    adk_live_resume.set_testing(False)  # real waits: the loop must be asleep in backoff
    async with FakeLiveServer() as server:
        policy = ResumePolicy(initial_wait=30, max_wait=30, jitter=False, outage_timeout=300)
        agent = make_agent(server, policy=policy)
        live = await LiveDriver.start(agent)
        assert await live.say("one") == "echo: one"
        server.flap(1011)
        await server.close_open(1011)
        await server.wait_for_connections(2)  # attempt 1 (immediate) flapped; now waiting 30 s
        await asyncio.sleep(0.2)
        assert not live.ended
        assert await live.cancel() < 1.0
        assert our_tasks() == []


async def test_five_reconnects_history_sent_once_and_the_first_turn_remembered(
    make_agent: AgentFactory,
) -> None:
    async with FakeLiveServer() as server:
        agent = make_agent(server)
        history = [("user", "my name is Ada"), ("model", "noted")]
        async with await LiveDriver.start(agent, history=history) as live:
            for n, code in enumerate([1000, 1006, 1011, 1001, 1012], start=1):
                assert await live.say(f"turn {n}") == f"echo: turn {n}"
                if code == 1006:
                    await server.restart()
                else:
                    await server.close_open(code)
                await server.wait_for_connections(n + 1)
            assert await live.say("what did I say first?") == "you first said: my name is Ada"
            assert await live.say("how many turns?") == "7"
            await live.close()
        assert len(server.connections) == 6
        assert server.history_sends() == 1 and server.duplicate_history_sends() == 0
        assert all(c.resumed for c in server.connections[1:])


async def test_tool_call_works_across_a_reconnect(make_agent: AgentFactory) -> None:
    calls: list[str] = []

    def get_weather(city: str) -> dict[str, str]:
        """Return the weather for a city."""
        calls.append(city)
        return {"city": city, "sky": "clear"}

    async with FakeLiveServer() as server:
        agent = make_agent(server, tools=[get_weather])
        async with await LiveDriver.start(agent) as live:
            answer = await live.say('call get_weather {"city": "Paris"}')
            assert answer.startswith("get_weather returned") and "Paris" in answer
            await server.close_open(1011)
            await server.wait_for_connections(2)
            answer = await live.say('call get_weather {"city": "Oslo"}')
            assert "Oslo" in answer and "clear" in answer
            await live.close()
        assert calls == ["Paris", "Oslo"]
        assert [c.name for c in server.tool_calls_issued()] == ["get_weather", "get_weather"]
        assert all(not c.unknown_tool_response_ids for c in server.connections)


async def test_agent_transfer_starts_a_fresh_child_session_that_also_resumes(
    make_agent: AgentFactory,
) -> None:
    async with FakeLiveServer() as server:
        helper = make_agent(server, name="helper", instruction="You help.")
        root = make_agent(server, name="root", sub_agents=[helper])
        async with await LiveDriver.start(root) as live:
            assert await live.say("one") == "echo: one"
            mark = live.send_text('call transfer_to_agent {"agent_name": "helper"}')
            await server.wait_for_connections(2)
            # ADK seeds the child with the conversation ending in a user turn: let it answer.
            await live.wait_for_event(
                lambda e: e.author == "helper" and e.turn_complete, after=mark, timeout=10
            )
            answer = await live.say("hi helper")
            assert answer == "echo: hi helper"
            assert live.events[-1].author == "helper"
            child = server.connections[1]
            assert child.resume_handle is None and not child.resumed
            await server.close_open(1011)
            await server.wait_for_connections(3)
            assert await live.say("still there?") == "echo: still there?"
            assert live.events[-1].author == "helper"
            await live.close()
        assert server.connections[2].resumed
        assert server.connections[2].resume_handle in server.connections[1].handles_issued
        assert server.connections[0].ended_by == "client"


async def test_no_resumption_handle_is_ever_logged_whole(
    make_agent: AgentFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with FakeLiveServer() as server:
        agent = make_agent(server)
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one") == "echo: one"
            await server.close_open(1011)
            await server.wait_for_connections(2)
            assert await live.say("two") == "echo: two"
            await live.close()
        handles = server.handles_issued()
    assert len(handles) >= 2
    logged = caplog.text
    leaked = [h[:6] for h in handles if h in logged]
    assert leaked == [], f"handles logged whole (prefixes): {leaked}"
    assert "reconnected: reason=drop" in logged


async def test_a_setup_that_never_completes_is_retried_after_connect_timeout(
    make_agent: AgentFactory,
) -> None:
    async with FakeLiveServer() as server:
        agent = make_agent(server, policy=ResumePolicy(connect_timeout=0.5))
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one") == "echo: one"
            server.script(Fault.no_setup_complete(), connection=2)
            await server.close_open(1011)
            await server.wait_for_connections(3, timeout=10)
            assert await live.say("two") == "echo: two"
            await live.close()
        assert server.connections[2].resumed
        assert server.connections[1].ended_by == "client"


@pytest.mark.parametrize("code", [1007, 1008])
async def test_1007_and_1008_mid_session_are_not_retried(
    make_agent: AgentFactory, code: int
) -> None:
    async with FakeLiveServer() as server:
        agent = make_agent(server)
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one") == "echo: one"
            await server.close_open(code, "Request contains an invalid argument.")
            error = await live.wait_ended(timeout=10)
        assert isinstance(error, SessionNotResumableError) and error.code == code
        assert "invalid argument" in str(error) and len(server.connections) == 1
        assert "while resuming" not in str(error)


async def test_a_new_run_resumes_from_a_handle_the_caller_stored(make_agent: AgentFactory) -> None:
    from google.adk.agents.run_config import RunConfig
    from google.genai import types

    async with FakeLiveServer() as server:
        agent = make_agent(server)
        async with await LiveDriver.start(agent) as live:
            assert await live.say("remember me") == "echo: remember me"
            await live.close()
        stored = server.handles_issued()[-1]
        config = RunConfig(
            response_modalities=[types.Modality.TEXT],
            session_resumption=types.SessionResumptionConfig(handle=stored),
        )
        async with await LiveDriver.start(agent, run_config=config) as live:
            assert await live.say("what did I say first?") == "you first said: remember me"
            await live.close()
        second = server.connections[1]
        assert second.resume_handle == stored and second.resumed and second.history_sends == 0
        assert config.session_resumption is not None
        assert config.session_resumption.handle == stored  # the caller's config is untouched


async def test_after_a_transfer_the_childs_turns_reach_its_fresh_history(
    make_agent: AgentFactory,
) -> None:
    """The parent's queue guard stayed around the child's, saw each
    request the child's sender took as taken and never sent (as withheld by screening), and
    every later fresh history of the child lacked the user's turns: after a dead handle the
    child forgot them, and a turn it had not answered yet was never answered."""
    async with FakeLiveServer() as server:
        helper = make_agent(server, name="helper", instruction="You help.")
        root = make_agent(server, name="root", sub_agents=[helper])
        async with await LiveDriver.start(root) as live:
            mark = live.send_text('call transfer_to_agent {"agent_name": "helper"}')
            await live.wait_for_event(
                lambda e: e.author == "helper" and e.turn_complete, after=mark, timeout=10
            )
            assert await live.say("hi helper") == "echo: hi helper"
            seen = len(server.connections)
            server.script(Fault.refuse_resume(), connection=seen + 1)
            await server.close_open(1011)
            recall = await live.say("recall", timeout=20)
            await live.close()
        fresh = server.connections[-1]
        assert fresh.resume_handle is None and fresh.history_sends
        assert "hi helper" in [t.text for t in fresh.heard if t.how == "history"]
        assert recall.startswith("you said:") and "hi helper" in recall.split(" | "), recall
