"""A BLOCKING tool call's result that outlives its connection, end to end.

Real ``Runner.run_live``, real google-genai, real TLS websockets on 127.0.0.1, the fake
server on the Gemini 2.5 native-audio and 3.1 Live families (:mod:`adk_live_resume.testing.
families`), whose model waits for a blocking call's response before it answers. The socket
drops while the tool still runs; its result comes after the drop, and the fake takes no
``toolResponse`` under an earlier connection's id (the field's way, Pipecat PR 5497, Strands
PR 4244, voiceclaw PR 53). The tool runs once, and the model tells its result exactly once:
never dropped, never twice. Both entry points; the Gemini API and Vertex AI dialects on 2.5
(Gemini 3.1 Live is served on the Gemini API only: notes, "Model names that exist").

The tool is run by ADK in its receive step (ADK's way for a blocking declaration: the next
connection is set up once the tool ended) or, on Gemini 3.1, in the background (ADK declares
it NON_BLOCKING; a 3.1 model ignores that and waits for the response all the same), so its
result arrives while the next connection already serves.
"""

from __future__ import annotations

import asyncio

import pytest

from adk_live_resume.testing import FakeLiveServer
from adk_live_resume.testing.driver import LiveDriver

from ..conftest import AgentFactory
from ..helpers import SlowTool, end_once_away, late_results_told, slow_lookup_tool, told_once
from .test_late_results_e2e import agent_for, clean
from .test_tool_calls_e2e import needs_background_tools

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]

NATIVE_AUDIO = "gemini-live-2.5-flash-native-audio"
GEMINI_3_1 = "gemini-3.1-flash-live-preview"
REQUEST = 'call slow_lookup {"item": "x"}'
RESULT = {"item": "x", "found": "yes"}
LOOKED_UP = 'slow_lookup returned {"found":"yes","item":"x"}'


@pytest.mark.parametrize(
    ("model", "vertex", "kind"),
    [
        pytest.param(NATIVE_AUDIO, False, "receive-step", id="2.5-gemini-api"),
        pytest.param(NATIVE_AUDIO, True, "receive-step", id="2.5-vertex-ai"),
        pytest.param(GEMINI_3_1, False, "receive-step", id="3.1-gemini-api"),
        pytest.param(
            GEMINI_3_1, False, "background", id="3.1-background", marks=needs_background_tools
        ),
    ],
)
async def test_a_blocking_call_still_running_when_the_socket_drops_is_told_once(
    make_agent: AgentFactory, model: str, vertex: bool, kind: str
) -> None:
    lookup = SlowTool(gated=True)
    async with asyncio.timeout(45), FakeLiveServer() as server:
        agent = agent_for(make_agent, server, model, vertex, [slow_lookup_tool(lookup, kind)])
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one") == "echo: one"
            mark = live.send_text(REQUEST)
            await asyncio.wait_for(lookup.started.wait(), 10)
            first = server.connections[0]
            await server.close_open(1011, "Internal error")
            await end_once_away(server, lookup, kind)
            await told_once(live, mark, LOOKED_UP, timeout=20, quiet=0.5)
            assert await live.say("recall") == f"you said: one | {REQUEST}"
            await live.close()
    assert lookup.runs == ["x"], "the tool ran once"
    assert [call.non_blocking for call in first.tool_calls] == [False], "a blocking call"
    assert first.tool_responses == [], "the drop came before the result"
    said = [answer for record in server.connections for answer in record.answers]
    assert said.count(LOOKED_UP) == 1, said
    second = server.connections[1]
    assert second.resumed and second.resume_handle == first.handles_issued[-1]
    # the handle (issued before the request) holds no call: the request is asked again, and
    # the model's repeat of the call gets the result; nothing is told as content besides
    assert second.user_turns == [REQUEST, "recall"]
    [repeat] = second.tool_calls
    assert server.tool_call(repeat.id).responses == [RESULT]
    assert late_results_told(second) == []
    clean(server.connections)
