"""The fault proxy under the real ``Runner.run_live`` (ADK with the patch installed), with
the fake as its upstream: each fault the proxy injects, in both dialects, is lived through
without replaying history, and a refused resume ends in a fresh session, not a hang."""

from __future__ import annotations

import pytest
from google.adk.agents import LlmAgent

import adk_live_resume
from adk_live_resume.fault_proxy.proxy import FaultProxy
from adk_live_resume.testing import FakeLiveServer, LiveDriver

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(90)]


async def _inject(proxy: FaultProxy, fault: str) -> None:
    if fault == "go_away":
        # Time enough to move before the proxy's deadline close even on a loaded machine
        # (with 0.5 s, a move whose next connection took longer ended by the deadline).
        proxy.go_away(5.0)
    elif fault == "close_1011":
        proxy.close(1011, "injected")
    elif fault == "abort":
        proxy.abort()
    elif fault == "held_pongs_then_abort":  # a keepalive that would fail, then the drop
        proxy.hold_pongs()
        proxy.abort()
        proxy.release_pongs()
    else:
        raise AssertionError(fault)


@pytest.mark.parametrize("vertex", [False, True], ids=["gemini-api", "vertex"])
@pytest.mark.parametrize("fault", ["go_away", "close_1011", "abort", "held_pongs_then_abort"])
async def test_adk_lives_through_each_fault_without_replaying_history(
    fault: str, vertex: bool
) -> None:
    adk_live_resume.install()
    async with FakeLiveServer() as server, FaultProxy(server) as proxy:
        agent = LlmAgent(name="assistant", model=proxy.gemini(vertex=vertex))
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one") == "echo: one"
            await server.wait_for(lambda: bool(server.handles_issued()), 5, what="a handle")
            await _inject(proxy, fault)
            await server.wait_for_connections(2)
            assert await live.say("two") == "echo: two"
            assert await live.say("recall") == "you said: one | two"
            assert await live.close() is None
        assert server.connections[1].resumed
        assert server.history_sends() == 0
        assert proxy.connections[1].resumed
        # on a goAway the loop moves on its own before the deadline: the client closes
        ended = {"go_away": "client", "close_1011": "close"}.get(fault, "abort")
        assert proxy.connections[0].ended_by == ended


async def test_adk_after_a_refused_resume_starts_afresh_and_keeps_going() -> None:
    adk_live_resume.install()
    async with FakeLiveServer() as server, FaultProxy(server) as proxy:
        agent = LlmAgent(name="assistant", model=proxy.gemini())
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one") == "echo: one"
            await server.wait_for(lambda: bool(server.handles_issued()), 5, what="a handle")
            proxy.refuse_resumes(1)
            proxy.abort()
            await server.wait_for(lambda: len(proxy.connections) >= 3, 20, what="a fresh one")
            assert await live.say("two") == "echo: two"
            assert await live.close() is None
        refused = [c for c in proxy.connections if c.ended_by == "refused"]
        assert len(refused) == 1
        assert refused[0].close_code == 1008
