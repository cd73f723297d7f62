"""The user's own repeats after a resume are new input; a replay's resend is not.

Real ``Runner.run_live`` and google-genai against the fake server over TLS, Vertex AI
``transparent`` (the index says exactly what a handle's state consumed), both entry points.
The fake names a consumed copy a resend only while the resumed connection's replay lasts
(:class:`~adk_live_resume.testing.handle_issuing.ConsumedLedger`): the same words typed again
after it are answered again and not named, and the loop's replay never sends what the state
holds.
"""

from __future__ import annotations

import asyncio

import pytest

from adk_live_resume.testing import FakeLiveServer, Fault
from adk_live_resume.testing.driver import LiveDriver

from ..conftest import AgentFactory

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]


def _vertex_agent(make_agent: AgentFactory, server: FakeLiveServer) -> object:
    from google.adk.agents import LlmAgent

    from adk_live_resume import ResumableLlmAgent

    make_agent(server)  # installs the patch for the "install" entry point
    cls = LlmAgent if make_agent.entry == "install" else ResumableLlmAgent  # type: ignore[attr-defined]
    return cls(name="assistant", model=server.gemini(vertex=True))


async def test_words_typed_again_after_a_resume_are_answered_again_and_nothing_is_resent(
    make_agent: AgentFactory,
) -> None:
    """The handle's state consumed "yes"; "two" is cut with its connection and replayed;
    then the user types "yes" again: a new turn, answered, not a resend."""
    async with asyncio.timeout(40), FakeLiveServer(chunk_delay=0.05) as server:
        agent = _vertex_agent(make_agent, server)
        async with await LiveDriver.start(agent) as live:
            assert await live.say("yes") == "echo: yes"
            server.script(Fault.close(1011, mid_turn=True), connection=1)
            mark = live.send_text("two")
            cut = await live.wait_for_event(lambda e: e.interrupted, after=mark, timeout=10)
            assert await live.answer_after(live.events.index(cut) + 1) == "echo: two"
            again = await live.say("yes")
            recall = await live.say("recall")
            await live.close()
        first, second = server.connections[:2]
        assert first.transparent and second.resumed and first.handles_issued
        # (first: a double send shows here, before it shows as an answer given twice)
        assert server.resent_consumed() == []
        assert (again, recall) == ("echo: yes", "you said: yes | two | yes")
        assert second.user_turns[:3] == ["two", "yes", "recall"]
        assert server.user_turns_answered().count("yes") == 2
