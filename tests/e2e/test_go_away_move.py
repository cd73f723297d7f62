"""The goAway move (the next connection opened ahead), end to end: real ``Runner.run_live``,
real google-genai, real TLS websockets on 127.0.0.1, the fake Gemini Live server.

On goAway the loop opens the next connection (connect + setup with the handle) while the old
one is still open, switches over, then closes the old one in the background. The fake's own
timestamps prove the order: the new connection's ``setupComplete`` (``first_sent_at``) comes
before the old connection ends (``ended_at``, when the fake saw the client's close).
After a drop, the first attempt starts before the dead connection is taken down.
"""

from __future__ import annotations

import asyncio

import pytest

import adk_live_resume
from adk_live_resume import ReconnectInfo, ResumePolicy
from adk_live_resume.testing import FakeLiveServer, Fault
from adk_live_resume.testing.driver import LiveDriver
from adk_live_resume.testing.records import ConnectionRecord

from ..conftest import AgentFactory, end_cleanly, our_tasks
from ..helpers import go_away_server

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]


def _made_before_broken(old: ConnectionRecord, new: ConnectionRecord) -> None:
    assert old.go_away_sent and old.ended_by == "client", old
    assert new.resumed and new.first_sent_at is not None and old.ended_at is not None
    assert new.first_sent_at < old.ended_at, "the new connection must be set up first"


async def test_go_away_between_turns_opens_the_next_connection_before_closing_the_old(
    make_agent: AgentFactory,
) -> None:
    reconnects: list[ReconnectInfo] = []
    remove = adk_live_resume.on_reconnect(reconnects.append)
    try:
        async with go_away_server() as server:
            agent = make_agent(server, policy=ResumePolicy(go_away_margin=0.05))
            async with await LiveDriver.start(agent) as live:
                assert await live.say("one") == "echo: one"
                await server.wait_for_connections(2)
                old, new = server.connections
                await server.wait_for(lambda: old.finished, 5, what="the old connection")
                assert await live.say("two") == "echo: two"
                assert await live.say("recall") == "you said: one | two"
                await live.close()
            _made_before_broken(old, new)
            assert old.handles_issued and new.resume_handle == old.handles_issued[-1]
            # nothing cut, nothing said twice, nothing sent twice
            assert server.user_turns_answered()[:3] == ["one", "two", "recall"]
            assert old.user_turns == ["one"] and new.user_turns[:2] == ["two", "recall"]
            assert server.resent_consumed() == [] and server.history_sends() == 0
    finally:
        remove()
    assert reconnects and reconnects[0].reason == "go_away" and reconnects[0].state_restored


async def test_go_away_mid_answer_finishes_the_answer_then_makes_before_it_breaks(
    make_agent: AgentFactory,
) -> None:
    # goAway at 0.4 s, its deadline at 1.6 s: the move after the answer has time to go first
    # on a loaded machine (the answer's end was 0.2 s before the deadline)
    async with go_away_server(lifetime=160, lead=120, chunk_delay=0.2) as server:
        agent = make_agent(server, policy=ResumePolicy(go_away_margin=0.05))
        async with await LiveDriver.start(agent) as live:
            # the answer streams for ~0.8 s: the goAway (at 0.4 s) lands in it
            assert await live.say("a long answer please") == "echo: a long answer please"
            await server.wait_for_connections(2)
            old, new = server.connections[:2]
            await server.wait_for(lambda: old.finished, 5, what="the old connection")
            assert await live.say("after") == "echo: after"
            await live.close()
        _made_before_broken(old, new)
        assert old.answered_user_turns == ["a long answer please"], "the answer was cut"
        assert "a long answer please" not in new.user_turns, "the turn was sent twice"
        assert new.user_turns[:1] == ["after"]
        assert server.resent_consumed() == []


async def test_a_resume_refused_while_the_old_socket_is_open_falls_back_to_close_first(
    make_agent: AgentFactory,
) -> None:
    # Reported for the real service: a resume is refused with 1011 while the old socket of
    # the session is open. The run closes the old one, resumes, and closes first from then on.
    async with go_away_server() as server:
        server.script(Fault.refuse_resume(code=1011), connection=2)
        agent = make_agent(server, policy=ResumePolicy(go_away_margin=0.05))
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one") == "echo: one"
            await server.wait_for_connections(4, timeout=10)  # refused, resumed, goAway again
            assert await live.say("two") == "echo: two"
            await live.close()
        first, refused, resumed, fourth = server.connections[:4]
        assert refused.ended_by == "refused" and refused.close_code == 1011
        assert first.ended_at is not None and refused.accepted_at < first.ended_at
        assert first.ended_at is not None and resumed.accepted_at > first.ended_at
        assert resumed.resumed and fourth.resumed
        assert resumed.ended_at is not None and fourth.accepted_at > resumed.ended_at
        assert server.user_turns_answered()[:2] == ["one", "two"]


async def test_a_next_connection_slower_than_the_margin_closes_the_old_one_at_the_deadline(
    make_agent: AgentFactory,
) -> None:
    # goAway at 0.4 s, our deadline 0.3 s later (timeLeft 0.6 s - margin 0.3 s), the new
    # connection's setup takes 0.45 s: the old socket is closed at our deadline, not the server's.
    async with go_away_server() as server:
        server.script(Fault.setup_delay(45), connection=2)
        agent = make_agent(server, policy=ResumePolicy(go_away_margin=0.3))
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one") == "echo: one"
            await server.wait_for_connections(2, timeout=5)
            old, new = server.connections[:2]
            await server.wait_for(lambda: new.first_sent_at is not None, 5, what="setup")
            assert await live.say("two") == "echo: two"
            await live.close()
        assert old.ended_by == "client" and old.ended_at is not None
        assert new.accepted_at < old.ended_at, "the next connection was opened first"
        assert new.first_sent_at is not None and old.ended_at < new.first_sent_at
        assert new.resumed and server.user_turns_answered()[:2] == ["one", "two"]


@pytest.mark.parametrize("ending", ["close", "cancel"])
async def test_closing_or_cancelling_while_the_next_connection_opens_ends_cleanly(
    make_agent: AgentFactory, ending: str
) -> None:
    async with go_away_server(lifetime=200) as server:
        server.script(Fault.setup_delay(50), connection=2)  # 0.5 s real: the overlap lasts
        agent = make_agent(server, policy=ResumePolicy(go_away_margin=0.05))
        live = await LiveDriver.start(agent)
        assert await live.say("one") == "echo: one"
        await server.wait_for_connections(2, timeout=5)
        old, opening = server.connections
        assert not old.finished and opening.setup is not None
        await end_cleanly(live, server, ending)
        assert len(server.connections) == 2
        assert old.ended_by == "client" and opening.ended_by == "client"


async def test_after_a_drop_the_next_connection_opens_before_the_old_one_is_taken_down(
    make_agent: AgentFactory,
) -> None:
    # The first attempt after a retryable drop starts while ADK's receive step unwinds; the
    # old connection's teardown (its send task stopped, its socket watch) waits for it.
    async with FakeLiveServer() as server:
        agent = make_agent(server)
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one") == "echo: one"
            old_sender = next(t for t in our_tasks() if t.get_name() == "adk_live_resume send #1")
            loop = asyncio.get_running_loop()
            sender_ended: list[float] = []
            old_sender.add_done_callback(lambda _: sender_ended.append(loop.time()))
            await server.close_open(1011)
            await server.wait_for_connections(2)
            assert await live.say("two") == "echo: two"
            # Both times are the shared event loop's clock: the order, not a duration.
            new = server.connections[1]
            assert sender_ended and new.first_sent_at is not None
            assert new.first_sent_at < sender_ended[0], (
                "the old connection was taken down before the new one was set up"
            )
            await live.close()
        assert old_sender.done() and server.connections[1].resumed
        assert server.user_turns_answered()[:2] == ["one", "two"]


async def test_where_the_server_refuses_a_resume_beside_the_open_socket_goaway_closes_first(
    make_agent: AgentFactory,
) -> None:
    # A service that refuses to resume a session whose old socket is still open (1011): the
    # connection opened ahead fails, and from then on a goAway move closes the old socket
    # first. Such a move is still a planned move (reason "go_away"), not a drop.
    reconnects: list[ReconnectInfo] = []
    remove = adk_live_resume.on_reconnect(reconnects.append)
    try:
        async with FakeLiveServer(
            time_scale=0.01, connection_lifetime=150, go_away_lead=60, refuse_resume_while_open=True
        ) as server:
            agent = make_agent(server, policy=ResumePolicy(go_away_margin=0.05))
            async with await LiveDriver.start(agent) as live:
                assert await live.say("one") == "echo: one"
                await server.wait_for(
                    lambda: any(c.ended_by == "refused" for c in server.connections),
                    10,
                    what="a refused connection opened ahead",
                )
                await server.wait_for(
                    lambda: any(info.reason == "go_away" for info in reconnects),
                    10,
                    what="a move that closed the old socket first",
                )
                assert await live.say("recall") == "you said: one"
                await live.close()
            assert server.user_turns_answered()[:2] == ["one", "recall"]
    finally:
        remove()
    # (the move whose connection opened ahead was refused is one recovery: a "go_away", its
    # next connection the first one set up after the refused one)
    assert any(info.reason == "go_away" for info in reconnects)
    old = server.connections[0]
    new = next(c for c in server.connections[1:] if c.ended_by != "refused")
    assert new.resumed and old.ended_at is not None and new.first_sent_at is not None
    assert old.ended_at <= new.first_sent_at, "the old socket closed first"
