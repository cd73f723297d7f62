"""An opening ahead that fails for now: the old connection serves on, make-before-break stays.

Real ``Runner.run_live``, real google-genai, real TLS websockets on 127.0.0.1, the fake Gemini
Live server. On goAway the loop opens the next connection while the old one serves. When that
opening fails in a way a later try may not (HTTP 429 with ``Retry-After``, a 5xx, a connect
that times out) and the old connection's deadline is still ahead, the old connection takes the
user's sends again (a request held for the next connection first) and the move is tried
again after the wait; only a server that refuses a resume beside the open socket
(``tests/e2e/test_go_away_move.py``) makes later moves close first. Both entry points.
"""

from __future__ import annotations

import asyncio

import pytest

import adk_live_resume
from adk_live_resume import ReconnectInfo, ResumePolicy
from adk_live_resume.testing import FakeLiveServer, Fault
from adk_live_resume.testing.driver import LiveDriver
from adk_live_resume.testing.records import ConnectionRecord

from ..conftest import AgentFactory

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]


def _made_before_broken(old: ConnectionRecord, new: ConnectionRecord) -> None:
    assert old.go_away_sent and old.ended_by == "client", old
    assert new.resumed and new.first_sent_at is not None and old.ended_at is not None
    assert new.first_sent_at < old.ended_at, "the new connection must be set up first"


async def test_a_busy_answer_to_the_opening_ahead_leaves_the_old_connection_serving(
    make_agent: AgentFactory,
) -> None:
    reconnects: list[ReconnectInfo] = []
    remove = adk_live_resume.on_reconnect(reconnects.append)
    try:
        async with asyncio.timeout(40), FakeLiveServer() as server:
            server.script(Fault.refuse_handshake(429, retry_after=1.5), connection=2)
            agent = make_agent(server)
            async with await LiveDriver.start(agent) as live:
                assert await live.say("one") == "echo: one"
                loop = asyncio.get_running_loop()
                refused_at = loop.time()
                assert server.go_away_now(30.0) == [1]  # 25 s before the move's deadline
                await server.wait_for_connections(2)
                assert await live.say("two") == "echo: two"
                answered_in = loop.time() - refused_at
                await server.wait_for_connections(3, timeout=10)  # tried again, after 1.5 s
                assert await live.say("three") == "echo: three"
                assert server.go_away_now(30.0) == [3]
                await server.wait_for_connections(4, timeout=10)
                assert await live.say("four") == "echo: four"
                await live.close()
    finally:
        remove()
    first, busy, third, fourth = server.connections
    assert busy.ended_by == "handshake_refused"
    assert first.user_turns == ["one", "two"], "the old connection served on"
    assert answered_in < 1.5, "answered without waiting for the Retry-After"
    assert third.accepted_at - busy.accepted_at >= 1.4, "the next try waited for Retry-After"
    _made_before_broken(first, third)
    _made_before_broken(third, fourth)  # a later goAway still makes before it breaks
    assert [(r.reason, r.state_restored) for r in reconnects] == [("go_away", True)] * 2
    assert server.user_turns_answered() == ["one", "two", "three", "four"]


async def test_a_request_held_for_a_next_connection_that_timed_out_goes_on_the_old_one(
    make_agent: AgentFactory,
) -> None:
    # The next connection's setup is answered after 5 s: its connect times out after 1 s.
    # The request the user sends meanwhile is held for it, then goes on the old one, once.
    async with asyncio.timeout(40), FakeLiveServer() as server:
        server.script(Fault.setup_delay(5.0), connection=2)
        agent = make_agent(server, policy=ResumePolicy(connect_timeout=1.0))
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one") == "echo: one"
            assert server.go_away_now(30.0) == [1]
            await server.wait_for_connections(2)
            assert await live.say("two", timeout=10) == "echo: two"
            await server.wait_for_connections(3, timeout=10)
            assert await live.say("recall") == "you said: one | two"
            await live.close()
    first, timed_out, third = server.connections
    assert timed_out.setup is not None and not timed_out.user_turns
    assert first.user_turns == ["one", "two"], "held, then sent on the old connection"
    assert third.resumed and third.user_turns == ["recall"]
    assert server.user_turns_answered() == ["one", "two", "recall"]
    assert server.resent_consumed() == [] and server.history_sends() == 0
