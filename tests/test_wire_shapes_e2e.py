"""The recorded wire shapes end to end: real ``Runner.run_live``, real google-genai, real TLS
websockets on 127.0.0.1, the fake Gemini Live server with its default (recorded) shapes; both
entry points.

The service sends an empty ``sessionResumptionUpdate {}`` every 0.5-1 s (a recorded run,
see :mod:`adk_live_resume.testing.wire_shapes`). Such an update is neither a handle nor a
"not resumable": a goAway between turns still moves at once, at the safe point the last
handle made, instead of waiting for its deadline.
"""

from __future__ import annotations

import asyncio

import pytest

from adk_live_resume import ResumePolicy
from adk_live_resume.testing import FakeLiveServer, WireShapes
from adk_live_resume.testing.driver import LiveDriver

from .conftest import AgentFactory

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]


async def test_empty_updates_between_turns_leave_the_safe_point_to_the_last_handle(
    make_agent: AgentFactory,
) -> None:
    async with FakeLiveServer() as server:
        agent = make_agent(server, policy=ResumePolicy(go_away_margin=0.05))
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one") == "echo: one"
            first = server.connections[0]
            quiet = len(first.server_messages)
            await server.wait_for(
                lambda: {"sessionResumptionUpdate": {}} in first.server_messages[quiet:], 5
            )
            loop = asyncio.get_running_loop()
            warned = loop.time()
            assert server.go_away_now(8.0) == [1]
            # at the safe point the move is at once; waiting for the deadline takes 7.95 s
            await server.wait_for_connections(2, timeout=3)
            await server.wait_for(lambda: first.finished, 3, what="the old connection")
            assert loop.time() - warned < 3
            assert await live.say("two") == "echo: two"
            await live.close()
        second = server.connections[1]
        assert first.ended_by == "client" and second.resumed
        assert second.resume_handle == first.handles_issued[-1]
        assert server.user_turns_answered()[:2] == ["one", "two"]


async def test_without_empty_updates_the_same_move_is_at_once_too(
    make_agent: AgentFactory,
) -> None:
    """The control: the same timeline on a fake that sends no empty updates."""
    async with FakeLiveServer(wire_shapes=WireShapes(empty_updates=None)) as server:
        agent = make_agent(server, policy=ResumePolicy(go_away_margin=0.05))
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one") == "echo: one"
            await asyncio.sleep(1.1)
            assert server.go_away_now(8.0) == [1]
            await server.wait_for_connections(2, timeout=3)
            assert await live.say("two") == "echo: two"
            await live.close()
