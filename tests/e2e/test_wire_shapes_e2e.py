"""The recorded wire shapes end to end: real ``Runner.run_live``, real google-genai, real TLS
websockets on 127.0.0.1, the fake Gemini Live server with its default (recorded) shapes; both
entry points.

The service sends an empty ``sessionResumptionUpdate {}`` every 0.5-1 s (a recorded run,
see :mod:`adk_live_resume.testing.wire_shapes`). Such an update is neither a handle nor a
"not resumable": a goAway between turns still moves at once, at the safe point the last
handle made, instead of waiting for its deadline.

A 3.x model sends a handle right after the client's ``toolResponse``, before its answer: a
drop right then resumes from it and the answer still comes, once, without the tool run again
(on Gemini 3.1, from a fresh session: see the test).
"""

from __future__ import annotations

import asyncio

import pytest

from adk_live_resume import ResumePolicy
from adk_live_resume.testing import FakeLiveServer, Fault, WireShapes
from adk_live_resume.testing.driver import LiveDriver

from ..conftest import AgentFactory

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


async def test_a_drop_after_the_handle_that_follows_a_tool_response_still_gets_the_answer(
    make_agent: AgentFactory,
) -> None:
    runs: list[str] = []

    def lookup(item: str) -> dict[str, str]:
        """Look an item up."""
        runs.append(item)
        return {"item": item, "found": "yes"}

    async with FakeLiveServer(chunk_delay=0.2) as server:
        agent = make_agent(server, tools=[lookup], model="gemini-3.1-flash-live-preview")
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one") == "echo: one"
            first = server.connections[0]
            # the typed turn, then the tool's response: the socket closes right after the
            # response and the handle that follows it, before the answer's first chunk
            server.script(
                Fault.close(1011, after_client_messages=len(first.client_messages) + 2),
                connection=1,
            )
            mark = live.send_text('call lookup {"item": "x"}')
            answer = await live.answer_after(mark, timeout=20)
            assert answer == 'lookup returned {"found":"yes","item":"x"}'
            await live.close()
    assert first.handle_issues[-1].point == "after_tool_response"
    assert not any("lookup returned" in a for a in first.answers), "the drop came first"
    second, last = server.connections[1], server.connections[-1]
    assert second.resumed and second.resume_handle == first.handles_issued[-1]
    if len(server.connections) > 2:
        # Gemini 3.1 knows no earlier connection's call id and takes no content in
        # mid-session (the loop's strict side): the resumed session hands over to a fresh
        # one whose rebuilt history holds the call and its result (google-adk 2.x; 1.x does
        # not speak 3.x's dialect and sends the result as content to the resumed session)
        assert last.resume_handle is None and len(server.connections) == 3
    assert runs == ["x"], "the tool ran again"
    assert [a for c in server.connections for a in c.answers].count(answer) == 1
    assert all(not c.resent_consumed for c in server.connections)
