"""A fresh session after answers in audio alone, end to end: real ``Runner.run_live``, real
google-genai, real TLS websockets, the fake server. Both entry points.

A voice app that turns output transcription off has the model's answers as audio parts only:
ADK's session holds no text of them and its ``send_history`` leaves audio out, so the history
a fresh session (the handle refused) is built from ends with the user turn the model already
answered, and ``send_history`` asks for an answer (``turn_complete=True``; on Gemini 3.x a
placeholder turn besides). Every user turn is answered exactly once: the fresh session must
not answer it again, and answers the next turn once.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from adk_live_resume.testing import FakeLiveServer, Fault, silence_pcm
from adk_live_resume.testing.driver import LiveDriver

from ..conftest import AgentFactory
from ..helpers import SlowTool, slow_lookup_tool
from .test_answers_without_transcription import audio_only
from .test_late_results_e2e import agent_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]

DIALECTS = pytest.mark.parametrize(
    ("model", "vertex"),
    [
        ("gemini-live-fake", False),
        ("gemini-live-fake", True),
        ("gemini-3.8-live", False),
        ("gemini-2.5-flash-native-audio-preview-09-2025", False),
    ],
    ids=["gemini-api", "vertex", "3.8", "native-audio"],
)


#: The turn typed once the fresh session is up.
AFTER = "after the fresh start"


async def fresh_start_after_the_answer(server: FakeLiveServer, live: LiveDriver) -> None:
    """Wait for an answer and a handle after it, then drop the
    socket; the server refuses connection 2's handle, so connection 3 is a fresh session."""
    await server.wait_for_connections(1)
    first = server.connections[0]
    await server.wait_for(lambda: bool(first.answers), 10, what="the answer")
    await server.wait_for(lambda: bool(first.handles_issued), 5, what="a handle")
    ends = lambda: sum(bool(getattr(e, "turn_complete", False)) for e in live.events)  # noqa: E731
    await server.wait_for(lambda: ends() >= len(first.answers), 5, what="the answers in ADK")
    await server.close_open(1011)
    await server.wait_for_connections(3)
    fresh = server.connections[2]
    await server.wait_for(lambda: bool(fresh.client_messages), 10, what="the fresh history")
    await asyncio.sleep(0.5)  # an answer to the history would come now


async def the_next_turn_answered_once(server: FakeLiveServer, live: LiveDriver) -> None:
    """Type a turn to the fresh session and close the run once it is answered (and nothing
    more arrived): the fresh session, which has no handle, answered it and nothing else."""
    live.send_text(AFTER)
    await server.wait_for(lambda: AFTER in server.user_turns_answered(), 10)
    await asyncio.sleep(0.3)  # nothing more may arrive
    await live.close()
    fresh = server.connections[2]
    assert fresh.resume_handle is None, "a fresh session"
    assert fresh.answered_user_turns == [AFTER], "answered once"


@DIALECTS
async def test_a_typed_turn_answered_in_audio_alone_is_not_answered_again_by_a_fresh_session(
    make_agent: AgentFactory, model: str, vertex: bool
) -> None:
    async with asyncio.timeout(40), FakeLiveServer() as server:
        server.script(Fault.refuse_resume(), connection=2)
        agent = agent_for(make_agent, server, model, vertex, [])
        config = audio_only(input_transcription=True)
        async with await LiveDriver.start(agent, run_config=config) as live:
            live.send_text("hello there")
            await fresh_start_after_the_answer(server, live)
            await the_next_turn_answered_once(server, live)
        assert server.user_turns_answered() == ["hello there", AFTER]


@DIALECTS
async def test_a_tool_result_told_in_audio_alone_is_not_told_again_by_a_fresh_session(
    make_agent: AgentFactory, model: str, vertex: bool
) -> None:
    runs: list[str] = []

    async def lookup(what: str) -> dict[str, Any]:
        """Look something up."""
        runs.append(what)
        return {"what": what, "found": True}

    async with asyncio.timeout(40), FakeLiveServer() as server:
        server.script(Fault.refuse_resume(), connection=2)
        agent = agent_for(make_agent, server, model, vertex, [lookup])
        config = audio_only(input_transcription=True)
        async with await LiveDriver.start(agent, run_config=config) as live:
            live.send_text('call lookup {"what": "order"}')
            await server.wait_for_connections(1)
            first = server.connections[0]
            await server.wait_for(lambda: bool(first.tool_responses), 10, what="the response")
            await server.wait_for(
                lambda: any(a.startswith("lookup returned") for a in first.answers),
                10,
                what="the telling",  # (3.8 says "lookup started" first)
            )
            await fresh_start_after_the_answer(server, live)
            fresh = server.connections[2]
            told = len(fresh.answers)
            await the_next_turn_answered_once(server, live)
        assert runs == ["order"], "the tool ran once"
        assert told == 0, f"the fresh session told the result again: {fresh.answers}"


@pytest.mark.parametrize("vertex", [False, True], ids=["gemini-api", "vertex"])
async def test_a_tool_result_its_connection_lost_before_the_send_is_told_by_a_fresh_session(
    make_agent: AgentFactory, vertex: bool
) -> None:
    """The socket goes while a tool runs and the microphone streams (its next chunk fails
    on the gone socket, which ends ADK's sender); the tool ends before any next connection
    and the next handshake is refused for a while (``Retry-After``): ADK's session holds its
    response, its queue the send, which no connection took. Then the handle is refused. The
    fresh session's history ends with that response, which nothing answered (text answers
    here, so no spoken-answer turn may close it): the fresh session tells the result, once."""
    lookup = SlowTool(gated=True)
    async with asyncio.timeout(40), FakeLiveServer() as server:
        server.script(Fault.refuse_handshake(503, retry_after=1.0), connection=2)
        server.script(Fault.refuse_resume(), connection=3)
        tool = slow_lookup_tool(lookup, "receive-step")
        agent = agent_for(make_agent, server, "gemini-live-fake", vertex, [tool])
        async with await LiveDriver.start(agent) as live:
            assert await live.say("hello", timeout=10) == "echo: hello"
            live.send_text('call slow_lookup {"item": "parcel"}')
            await asyncio.wait_for(lookup.started.wait(), 10)

            async def microphone() -> None:
                while not lookup.gate.is_set():
                    live.send_audio(silence_pcm(20))
                    await asyncio.sleep(0.02)

            streaming = asyncio.create_task(microphone())
            await server.close_open(1011)
            await asyncio.sleep(0.2)  # (the sender fails on the gone socket)
            # (ends before any next connection: ADK's reading, blocked in the tool, had not
            # read what arrived before the close, so the run decides what follows and
            # reconnects once the reading reports the close; the handshake it then makes is
            # refused for a while)
            lookup.gate.set()
            await streaming
            await server.wait_for_connections(4)
            fresh = server.connections[3]
            await server.wait_for(
                lambda: any(a.startswith("slow_lookup returned") for a in fresh.answers),
                10,
                what="the result told by the fresh session",
            )
            await asyncio.sleep(0.3)  # nothing more may arrive
        assert fresh.resume_handle is None, "a fresh session"
        assert lookup.runs == ["parcel"], "the tool ran once"
        told = [a for c in server.connections for a in c.answers if a.startswith("slow_lookup")]
        assert len(told) == 1, f"told {len(told)}x: {told}"
