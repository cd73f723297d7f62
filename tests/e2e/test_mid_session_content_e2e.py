"""Gemini 3.1 Live and conversation a handle lacks, whichever way the service answers
mid-session ``clientContent``.

The field is split (``gemini-live-protocol.md``): 3.1 closed the connection with 1007 on
mid-session ``clientContent`` in reports of March-May 2026; its model page, LiveKit PR 7289
and a 3.1 recording say it takes it now. The fake takes it by default and refuses it with
``WireShapes(refuse_3_1_mid_session_content=True)``. The loop keeps the strict side for 3.1
(:mod:`adk_live_resume.rules.model_families`): what the handle lacks goes to one fresh session as
its history, never as mid-session content, so the conversation survives a drop and a goAway
move with the switch in either position. Real ``Runner.run_live`` and google-genai against
the fake over TLS, both entry points; the Gemini API dialect only (3.1 is not served on
Vertex AI).
"""

from __future__ import annotations

import pytest

from adk_live_resume import ResumePolicy
from adk_live_resume.compat import adk_compat
from adk_live_resume.testing import FakeLiveServer, HandleSchedule, WireShapes
from adk_live_resume.testing.driver import LiveDriver

from ..conftest import AgentFactory

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]

GEMINI_3_1 = "gemini-3.1-flash-live-preview"


@pytest.mark.parametrize("refuses", [False, True], ids=["takes-content", "refuses-content"])
@pytest.mark.parametrize("end", ["drop", "go_away"])
async def test_what_the_handle_lacks_reaches_a_3_1_session_whether_it_takes_content_or_not(
    make_agent: AgentFactory, refuses: bool, end: str
) -> None:
    if not adk_compat.speaks_gemini_3_live(GEMINI_3_1):
        pytest.skip("this google-adk release sends clientContent turns to every model")
    server = FakeLiveServer(
        handle_schedule=HandleSchedule(on_turn_complete=False),
        wire_shapes=WireShapes(refuse_3_1_mid_session_content=refuses),
    )
    async with server:
        agent = make_agent(server, model=GEMINI_3_1, policy=ResumePolicy(go_away_margin=0.05))
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one") == "echo: one"
            issued = await server.issue_handles_now()
            assert issued[1] is not None and issued[1].turns == 2  # "one" and its answer
            assert await live.say("two") == "echo: two"  # no handle holds this exchange
            if end == "drop":
                await server.close_open(1011)
            else:
                assert server.go_away_now(0.5) == [1]
            await server.wait_for_connections(2)
            assert await live.say("recall") == "you said: one | two"
            await live.close()
    assert len(server.connections) == 2
    fresh = server.connections[1]
    assert fresh.resume_handle is None, "a fresh session, not a resume"
    assert [t.text for t in fresh.heard if t.how == "history"] == ["one", "two"]
    assert server.rejected_client_content() == []  # nothing was sent that 3.1 may refuse
    assert server.duplicate_history_sends() == 0
    assert server.user_turns_answered() == ["one", "two", "recall"]
