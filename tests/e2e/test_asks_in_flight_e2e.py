"""A typed turn in flight when the answer to the turn before it begins (Gemini API).

The server reads client messages in the order sent and answers each ask in a generation of its
own. When a typed turn goes out while the answer to the turn before it has not begun, that
answer (and the handle after it) may come from a server that has not read the new turn yet; if
the connection is lost before it does, the turn goes again on the next one, once: a generation
answers the oldest ask waiting (``resolved_turns.waiting_asks``), so the answer to the first
turn does not count for the second.
"""

from __future__ import annotations

import asyncio

import pytest

from adk_live_resume.testing import FakeLiveServer, LatencyRelay
from adk_live_resume.testing.driver import LiveDriver

from ..conftest import AgentFactory
from .test_late_results_e2e import agent_for


@pytest.mark.e2e
@pytest.mark.timeout(60)
@pytest.mark.parametrize("make_agent", ["install"], indirect=True)  # (the outbox's rule)
async def test_a_turn_sent_before_the_answer_to_the_last_began_survives_a_drop(
    make_agent: AgentFactory,
) -> None:
    async with asyncio.timeout(55):
        async with (
            FakeLiveServer(chunk_delay=0.02) as server,
            LatencyRelay(server, one_way=1.0) as relay,
        ):
            agent = agent_for(make_agent, relay, "gemini-live-fake", False, [])
            async with await LiveDriver.start(agent) as live:
                assert await live.say("first", timeout=15) == "echo: first"
                first = server.connections[0]
                handles = len(first.handles_issued)
                live.send_text("question one")
                # (one way later: "question one" reaches the server, which answers it at once
                # and issues a handle; "question two" is a second behind it on the wire, and
                # the answer to "question one" reaches the client a second after that)
                await asyncio.sleep(1.0)
                mark = live.send_text("question two")
                await server.wait_for(
                    lambda: len(first.handles_issued) > handles, 5, what="a handle after one"
                )
                # The premise, which a loaded machine can spoil by a second: the answer to
                # "question one" had not reached the client when "question two" went out, and
                # the server has not read "question two" when the connection goes.
                if any(
                    "echo: question one" in str(getattr(e, "content", ""))
                    for e in live.events[:mark]
                ):
                    pytest.skip("the answer to the first question came before the second went")
                if "question two" in first.user_turns:
                    pytest.skip("the server read the second question before the close")
                await server.close_open(1011)
                await live.wait_for_event(
                    lambda e: "echo: question two" in str(getattr(e, "content", "")),
                    after=mark,
                    timeout=15,
                )
                await live.close()
    assert server.user_turns_answered().count("question two") == 1
