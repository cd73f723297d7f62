"""Calls the server cancels and identical calls in one turn, end to end: real
``Runner.run_live``, real google-genai, real TLS websockets, the fake server. Both entry
points.

Gemini 3.8 Live (Vertex AI migration guide 2.5 -> 3.8; notes, "Field facts that contradict
or extend the above"):

* a BLOCKING call in progress is cancelled by the server (``toolCallCancellation``) when new
  input arrives. ADK runs a blocking tool inside its receive step and reads the cancellation
  only after the tool ended; the loop sees it as it arrives, so the cancelled call's
  response is never sent (the model moved on), told later, or given to a repeat;
* the model may issue 2-5 identical calls in one turn when its tool returns empty results:
  separate calls, each runs its tool; only a repeat across a resume is collapsed.
"""

from __future__ import annotations

import asyncio
import json
from importlib.metadata import version
from typing import Any

import pytest
from google.adk.sessions import InMemorySessionService
from google.adk.tools.function_tool import FunctionTool
from google.genai import types

from adk_live_resume.testing import FakeLiveServer, Fault, WireShapes
from adk_live_resume.testing.driver import LiveDriver
from adk_live_resume.testing.handles import HandleSchedule

from ..conftest import AgentFactory
from ..helpers import answer_like, answers
from .test_late_results_e2e import agent_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]

#: google-genai 1.x refuses a declaration's ``behavior`` for Vertex AI (a ``ValueError`` at
#: connect): a BLOCKING declaration reaches the Vertex dialect from 2.x on.
VERTEX_BEHAVIOR = pytest.mark.skipif(
    int(version("google-genai").split(".")[0]) < 2,
    reason="google-genai 1.x refuses a declaration's behavior for Vertex AI",
)


class _Blocking(FunctionTool):
    """A tool whose declaration says ``behavior: BLOCKING`` (Gemini 3.8 Live calls functions
    NON_BLOCKING unless declared so)."""

    def _get_declaration(self) -> Any:
        declaration = super()._get_declaration()
        if declaration is not None:
            declaration.behavior = types.Behavior.BLOCKING
        return declaration


@pytest.mark.parametrize(
    ("model", "vertex"),
    [
        ("gemini-live-fake", False),
        ("gemini-3.8-live", False),
        pytest.param("gemini-3.8-live", True, marks=VERTEX_BEHAVIOR, id="3.8-vertex"),
    ],
)
async def test_a_blocking_call_the_server_cancels_gets_no_response(
    make_agent: AgentFactory, model: str, vertex: bool
) -> None:
    runs: list[str] = []
    started = asyncio.Event()
    ended = asyncio.Event()

    async def lookup(what: str) -> dict[str, Any]:
        """Look something up (slowly)."""
        runs.append(what)
        started.set()
        await asyncio.sleep(1.5)
        ended.set()
        return {"what": what, "found": True}

    async with asyncio.timeout(40), FakeLiveServer() as server:
        agent = agent_for(make_agent, server, model, vertex, [_Blocking(lookup)])
        async with await LiveDriver.start(agent) as live:
            mark = live.send_text('call lookup {"what": "order"}')
            await asyncio.wait_for(started.wait(), 10)
            hello = live.send_text("hello")
            first = server.connections[0]
            await server.wait_for(lambda: first.cancelled_tool_ids, 5, what="a cancellation")
            assert await answer_like(live, hello, "echo: hello", timeout=15) == "echo: hello"
            await asyncio.wait_for(ended.wait(), 10)
            await asyncio.sleep(0.5)  # the tool's response would go now
            await live.close()
        [call] = first.tool_calls
        assert runs == ["order"], "the tool ran once"
        assert first.cancelled_tool_ids == [call.id]
        assert first.tool_responses == [], "no response to a cancelled call"
        assert not first.stale_tool_response_ids and not first.unknown_tool_response_ids
        assert not any(a.startswith("lookup returned") for a in answers(live, mark))
        assert not first.errors


class _SlowModelEvents(InMemorySessionService):  # type: ignore[misc]
    """A session service far away: each event of the agent takes ``delay`` seconds to write,
    and ADK's reading of the connection waits for every write."""

    def __init__(self, delay: float) -> None:
        super().__init__()
        self.delay = delay

    async def append_event(self, session: Any, event: Any) -> Any:
        if event.author != "user":
            await asyncio.sleep(self.delay)
        return await super().append_event(session, event)


@pytest.mark.parametrize("model", ["gemini-live-fake", "gemini-3.8-live"])
async def test_a_call_cancelled_before_adk_read_it_is_never_run(
    make_agent: AgentFactory, model: str
) -> None:
    # ADK's reading is behind (each model event takes 0.8 s to store): the call and its
    # cancellation both arrive before ADK reads the call. The cancellation is kept from its
    # frame on, so ADK never gets the call: its tool does not run, and nothing is sent.
    runs: list[str] = []

    async def lookup(what: str) -> dict[str, Any]:
        """Look something up."""
        runs.append(what)
        return {"what": what, "found": True}

    async with asyncio.timeout(50), FakeLiveServer() as server:
        agent = agent_for(make_agent, server, model, False, [_Blocking(lookup)])
        service = _SlowModelEvents(delay=0.8)
        async with await LiveDriver.start(agent, session_service=service) as live:
            live.send_text("one")
            await server.wait_for(lambda: bool(server.connections), 10, what="a connection")
            first = server.connections[0]
            await server.wait_for(lambda: first.answers == ["echo: one"], 10, what="an answer")
            mark = live.send_text('call lookup {"what": "order"}')
            await server.wait_for(lambda: first.tool_calls, 10, what="the call")
            hello = live.send_text("hello")
            await server.wait_for(lambda: first.cancelled_tool_ids, 10, what="a cancellation")
            assert await answer_like(live, hello, "echo: hello", timeout=30) == "echo: hello"
            await asyncio.sleep(0.5)  # a response would go now
            await live.close()
        [call] = first.tool_calls
        assert first.cancelled_tool_ids == [call.id]
        assert runs == [], "the tool of a call cancelled before ADK read it never ran"
        assert first.tool_responses == [], "no response to a cancelled call"
        assert not any(a.startswith("lookup returned") for a in answers(live, mark))
        assert not first.errors


@pytest.mark.parametrize(
    "vertex",
    [pytest.param(False, id="gemini"), pytest.param(True, marks=VERTEX_BEHAVIOR, id="vertex")],
)
async def test_identical_calls_in_one_turn_each_run(make_agent: AgentFactory, vertex: bool) -> None:
    results = iter([{}, {}, {"n": 3}])
    runs: list[str] = []

    def stock(item: str) -> dict[str, Any]:
        """Look up the stock of an item (empty while the warehouse is counting)."""
        runs.append(item)
        return next(results)

    async with asyncio.timeout(40), FakeLiveServer() as server:
        agent = agent_for(make_agent, server, "gemini-3.8-live", vertex, [_Blocking(stock)])
        async with await LiveDriver.start(agent) as live:
            mark = live.send_text('call stock {"item": "pen"}')
            answer = await answer_like(live, mark, "stock returned", timeout=15)
            await live.close()
        [record] = server.connections
        assert runs == ["pen"] * 3, "three identical calls: the tool ran for each"
        assert [(c.name, c.args) for c in record.tool_calls] == [("stock", {"item": "pen"})] * 3
        assert len({c.id for c in record.tool_calls}) == 3
        assert record.accepted_tool_response_ids == [c.id for c in record.tool_calls]
        assert answer == 'stock returned {}; stock returned {}; stock returned {"n":3}'


async def test_identical_calls_cut_by_a_drop_on_gemini_3_8_collapse_only_across_the_resume(
    make_agent: AgentFactory,
) -> None:
    # Two identical calls in one turn (empty result, then a count), the socket cut before
    # the answer: the resumed session's model issues both anew; each repeat is answered
    # with its earlier call's result, in issue order, and the tool ran twice in all.
    results = iter([{}, {"n": 2}])
    runs: list[str] = []

    def stock(item: str) -> dict[str, Any]:
        """Look up the stock of an item (empty while the warehouse is counting)."""
        runs.append(item)
        return next(results)

    # (no handle after the tool responses, as recorded on 3.x: one would cover the calls)
    server = FakeLiveServer(
        handle_schedule=HandleSchedule(on_turn_complete=False, idle_interval=0.05),
        wire_shapes=WireShapes(handle_after_tool_response=False),
    )
    async with asyncio.timeout(40), server:
        server.script(Fault.close(1011, "cut", mid_turn=True), connection=1)
        agent = agent_for(make_agent, server, "gemini-3.8-live", False, [_Blocking(stock)])
        async with await LiveDriver.start(agent) as live:
            await server.wait_for(lambda: bool(server.handles_issued()), 5, what="a handle")
            mark = live.send_text('call stock {"item": "pen"}')
            await server.wait_for_connections(2)
            answer = await answer_like(live, mark, "stock returned", timeout=20)
            await live.close()
        first, second = server.connections
        assert first.ended_by == "fault" and second.resumed
        assert len(first.tool_calls) == 2 and len(second.tool_calls) == 2
        assert runs == ["pen", "pen"], "each call ran once; the repeats did not run it again"
        assert [server.tool_call(c.id).responses for c in second.tool_calls] == [[{}], [{"n": 2}]]
        assert answer == 'stock returned {}; stock returned {"n":2}'
        assert json.dumps(second.answers).count("stock returned {}") == 1
