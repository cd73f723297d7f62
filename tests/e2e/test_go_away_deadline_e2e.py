"""The goAway's deadline close, end to end: real ``Runner.run_live``, real google-genai, real
TLS websockets on 127.0.0.1, the fake Gemini Live server; both entry points.

The service closes a connection whose client did not leave by its goAway's deadline with 1008
and "Connection aborted because the client failed to close the connection after receiving a
GoAway signal ..." (a recorded run: martin-paladino/glosa ``samples/fixtures/lt_en.jsonl``,
``gemini-live-protocol.md`` "Field facts"). The run moves before its own deadline, so it meets
that close only when it is late (a stalled event loop, a slow machine). The tests compress the
wait: the service's goAway (``timeLeft`` "50s") is followed at once by its deadline close,
while the model's answer is streaming (no safe point, so no move began).
"""

from __future__ import annotations

from typing import Any

import pytest

import adk_live_resume
from adk_live_resume import ReconnectInfo, SessionNotResumableError
from adk_live_resume.testing import GO_AWAY_DEADLINE_REASON, FakeLiveServer, Fault
from adk_live_resume.testing.driver import LiveDriver

from ..conftest import AgentFactory

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]

GO_AWAY = {"goAway": {"timeLeft": "50s"}}


def _late_for_the_deadline(server: FakeLiveServer, *, go_away: bool) -> None:
    """On connection 1, at the first chunk of the next answer: the service's goAway (if
    ``go_away``), then its deadline close."""
    late = Fault.close(1008, GO_AWAY_DEADLINE_REASON, mid_turn=True)
    if go_away:
        server.script(Fault.server_message(GO_AWAY, mid_turn=True), late, connection=1)
    else:
        server.script(late, connection=1)


class _VertexModels:
    """Hands the agent factory the fake's models in the Vertex AI dialect."""

    def __init__(self, server: FakeLiveServer) -> None:
        self._server = server

    def gemini(self, model: str) -> Any:
        return self._server.gemini(model, vertex=True)


@pytest.mark.parametrize("vertex", [False, True], ids=["gemini-api", "vertex"])
async def test_a_1008_after_a_go_away_resumes_like_any_drop(
    make_agent: AgentFactory, vertex: bool
) -> None:
    reconnects: list[ReconnectInfo] = []
    remove = adk_live_resume.on_reconnect(reconnects.append)
    try:
        async with FakeLiveServer(chunk_delay=0.05) as server:
            agent = make_agent(_VertexModels(server) if vertex else server)
            async with await LiveDriver.start(agent) as live:
                assert await live.say("one") == "echo: one"
                _late_for_the_deadline(server, go_away=True)
                mark = live.send_text("two")
                cut = await live.wait_for_event(lambda e: e.interrupted, after=mark, timeout=10)
                assert await live.answer_after(live.events.index(cut) + 1) == "echo: two"
                assert await live.say("recall") == "you said: one | two"
                await live.close()
            first, second = server.connections[:2]
            assert first.close_code == 1008 and first.close_reason == GO_AWAY_DEADLINE_REASON
            assert second.resumed and second.resume_handle == first.handles_issued[-1]
            assert ("aiplatform" in first.path) is vertex
            assert server.history_sends() == 0
    finally:
        remove()
    assert reconnects and reconnects[0].reason == "drop" and reconnects[0].state_restored


async def test_a_1008_without_a_go_away_still_ends_the_run(make_agent: AgentFactory) -> None:
    async with FakeLiveServer(chunk_delay=0.05) as server:
        agent = make_agent(server)
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one") == "echo: one"
            _late_for_the_deadline(server, go_away=False)
            live.send_text("two")
            error = await live.wait_ended(timeout=10)
    assert isinstance(error, SessionNotResumableError) and error.code == 1008
    assert "this close is not retryable" in str(error) and len(server.connections) == 1


async def test_a_second_go_away_keeps_the_first_deadline(make_agent: AgentFactory) -> None:
    """A goAway with 1 s left lands in a long answer (no safe point), then a second one with
    30 s left: the move happens by the first one's deadline, and the answer is told once."""
    import asyncio

    from adk_live_resume import ResumePolicy

    from ..helpers import times_said

    question = "a long answer please, in many pieces, one after the other, slowly"
    async with asyncio.timeout(40), FakeLiveServer(chunk_delay=0.3) as server:
        agent = make_agent(server, policy=ResumePolicy(go_away_margin=0.2))
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one") == "echo: one"
            mark = live.send_text(question)
            await server.wait_for(
                lambda: len(server.connections[0].server_messages) > 12, 10, what="the answer"
            )
            loop = asyncio.get_running_loop()
            first_at = loop.time()
            assert server.go_away_now(1.0) == [1]
            assert server.go_away_now(30.0) == [1]
            await server.wait_for_connections(2, timeout=10)
            moved_in = server.connections[1].accepted_at - first_at
            assert await live.answer_after(mark, timeout=20) == f"echo: {question}"
            assert await live.say("two") == "echo: two"
            await live.close()
    assert moved_in < 1.0, f"moved {moved_in:.2f} s after the first goAway"
    assert server.user_turns_answered().count(question) == 1
    assert times_said(live, f"echo: {question}") == 1
