"""Tool results that outlive their connection on a model that takes no content mid-session.

Gemini 3.1 Live knows no earlier connection's call id, and the loop sends it no
``clientContent`` mid-session (:mod:`adk_live_resume.model_families`): such results reach the
model through a fresh session whose rebuilt history holds them. The run decides so on the
resumed connection, which stays open until the move; a handle that connection issues after
the decision holds none of the results, and must not be resumed. Real ``Runner.run_live`` and
google-genai against the fake over TLS, both entry points; the Gemini API dialect only (3.1 is
not served on Vertex AI).
"""

from __future__ import annotations

import asyncio

import pytest

from adk_live_resume.compat import adk_compat
from adk_live_resume.testing import FakeLiveServer, Fault
from adk_live_resume.testing.driver import LiveDriver

from ..conftest import AgentFactory
from ..helpers import late_results_told

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]

GEMINI_3_1 = "gemini-3.1-flash-live-preview"
REQUEST = 'call lookup {"item": "x"}'
RESULT = {"item": "x", "found": "yes"}
LOOKED_UP = 'lookup returned {"found":"yes","item":"x"}'


async def test_a_handle_issued_after_the_run_chose_a_fresh_session_is_not_resumed(
    make_agent: AgentFactory,
) -> None:
    if not adk_compat.speaks_gemini_3_live(GEMINI_3_1):
        pytest.skip("this google-adk release sends clientContent turns to every model")
    runs: list[str] = []

    def lookup(item: str) -> dict[str, str]:
        """Look an item up."""
        runs.append(item)
        return {"item": item, "found": "yes"}

    async with asyncio.timeout(45), FakeLiveServer(chunk_delay=0.2) as server:
        agent = make_agent(server, tools=[lookup], model=GEMINI_3_1)
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one") == "echo: one"
            first = server.connections[0]
            # The socket closes right after the tool's response and the handle that follows
            # it, before the answer: the resumed connection is told of the result late and
            # the run chooses a fresh session while it restores that connection, before ADK
            # reads anything of it. That connection issues a handle right after its setup,
            # so ADK reads it only after the choice, whatever the timing.
            server.script(
                Fault.close(1011, after_client_messages=len(first.client_messages) + 2),
                connection=1,
            )
            server.script(Fault.issue_handle(), connection=2)
            mark = live.send_text(REQUEST)
            assert await live.answer_after(mark, timeout=10) == LOOKED_UP
            assert await live.say("recall") == f"you said: one | {REQUEST}"
            await live.close()
    first, second, fresh = server.connections
    assert first.handle_issues[-1].point == "after_tool_response"
    assert second.resumed and second.resume_handle == first.handles_issued[-1]
    assert len(second.handles_issued) == 1, "the resumed connection issued its handle"
    assert fresh.resume_handle is None, "a fresh session, not a resume of the left one"
    assert late_results_told(fresh) == [("lookup", {"item": "x"}, RESULT)], "in its history"
    assert runs == ["x"], "the tool ran once"
    said = [answer for record in server.connections for answer in record.answers]
    assert said.count(LOOKED_UP) == 1, said
    assert server.user_turns_answered().count(REQUEST) == 1, "nothing asked twice"
    assert server.duplicate_history_sends() == 0
    for record in server.connections:
        assert not record.unknown_tool_response_ids and not record.stale_tool_response_ids
        assert not record.errors
