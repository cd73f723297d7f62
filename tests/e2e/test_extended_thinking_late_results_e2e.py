"""A tool result that outlives its connection on the extended-thinking model, end to end.

Real ``Runner.run_live``, real google-genai, real TLS websockets on 127.0.0.1, the fake's
extended-thinking family (:mod:`adk_live_resume.testing.families`): every call is async (the
model says it started, its ``turnComplete`` saying ``IN_PROGRESS``), and the task is
``IDLE`` only once the result is told. The session leaves its connection while the tool
still runs: a goAway whose deadline comes before the tool ends (the move cannot wait for
``IDLE``), or a dropped socket. The tool's result comes after the next connection is up; the
fake takes no ``toolResponse`` under an earlier connection's id (the field's way, Pipecat PR
5497, Strands PR 4244, voiceclaw PR 53). Whatever the way the result reaches the resumed
session, the tool runs once and the model tells its result exactly once. Both entry points,
both dialects, the tool run by ADK in its receive step or in the background (NON_BLOCKING).
"""

from __future__ import annotations

import asyncio

import pytest

from adk_live_resume import ResumePolicy
from adk_live_resume.testing import FakeLiveServer
from adk_live_resume.testing.driver import LiveDriver

from ..conftest import AgentFactory
from ..helpers import SlowTool, end_once_away, late_results_told, slow_lookup_tool, told_once
from .test_late_results_e2e import agent_for, clean
from .test_tool_calls_e2e import needs_background_tools

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]

MODEL = "gemini-3.8-live-extended-thinking"
POLICY = ResumePolicy(go_away_margin=0.05)
REQUEST = 'call slow_lookup {"item": "x"}'
RESULT = {"item": "x", "found": "yes"}
LOOKED_UP = 'slow_lookup returned {"found":"yes","item":"x"}'

#: ADK declares Python functions with ``parametersJsonSchema``, which extended thinking refuses
#: at setup (1007; :mod:`adk_live_resume.testing.setup_rules`): these tests turn the fake's
#: setup rules off to reach the behaviour they check.
SETUP = {"setup_rules": False}


KINDS = pytest.mark.parametrize(
    "kind", ["receive-step", pytest.param("background", marks=needs_background_tools)]
)
DIALECTS = pytest.mark.parametrize("vertex", [False, True], ids=["gemini-api", "vertex-ai"])


@KINDS
@DIALECTS
@pytest.mark.parametrize("how", ["move", "drop"])
async def test_an_async_tool_still_running_when_the_session_leaves_is_told_once(
    make_agent: AgentFactory, kind: str, vertex: bool, how: str
) -> None:
    lookup = SlowTool(gated=True)
    async with asyncio.timeout(45), FakeLiveServer(**SETUP) as server:
        tools = [slow_lookup_tool(lookup, kind)]
        agent = agent_for(make_agent, server, MODEL, vertex, tools, policy=POLICY)
        async with await LiveDriver.start(agent) as live:
            mark = live.send_text(REQUEST)
            await asyncio.wait_for(lookup.started.wait(), 10)
            first = server.connections[0]
            # (ADK reads on only once a tool it runs in its receive step ends: the server's
            # record says the model told the start)
            await server.wait_for(lambda: first.answers != [], 10, what="the start told")
            if how == "move":
                # the deadline (0.6 s) comes long before the tool ends: the move cannot wait
                # for IDLE, which only the telling of the result brings
                assert server.go_away_now(0.6) == [1]
            else:
                await server.close_open(1011, "Internal error")
            await end_once_away(server, lookup, kind)
            await told_once(live, mark, LOOKED_UP, timeout=15, quiet=0.5)
            await live.close()
    assert lookup.runs == ["x"], "the tool ran once"
    assert first.answers == ["slow_lookup started"], "the first connection told nothing"
    said = [answer for record in server.connections for answer in record.answers]
    assert said.count(LOOKED_UP) == 1, said
    second = server.connections[1]
    assert second.resumed and second.resume_handle == first.handles_issued[-1]
    if vertex:
        # the handle's index holds the request: no repeat; the result is told as content
        # naming the call, its arguments and its result
        assert second.user_turns == [] and second.tool_calls == []
        assert late_results_told(second) == [("slow_lookup", {"item": "x"}, RESULT)]
    else:
        # a handle issued while the model works holds no request: it is asked again, and the
        # model's repeat of the call is answered with the result, the tool not run again
        assert second.user_turns == [REQUEST]
        [repeat] = second.tool_calls
        assert server.tool_call(repeat.id).responses == [RESULT]
        assert late_results_told(second) == []
    if how == "move":
        # (the loop closes it at the deadline, or, on a loop made slow by a loaded machine,
        # the server's deadline close comes first: a move either way, the same guarantees)
        assert first.go_away_sent and first.ended_by in ("client", "deadline")
    clean(server.connections)
