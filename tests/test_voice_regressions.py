"""Regression tests for the voice-session defects of issue 9, end to end.

Real ``Runner.run_live`` and google-genai against the fake server over TLS, both entry
points. Each test names the defect it pins; each failed on the loop before the fix.
"""

from __future__ import annotations

import asyncio
import logging

import pytest
from google.genai import types

import adk_live_resume
from adk_live_resume import ReconnectInfo, ResumePolicy
from adk_live_resume.testing import FakeLiveServer, Fault, silence_pcm, speech_pcm
from adk_live_resume.testing.driver import LiveDriver

from .conftest import AgentFactory

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]

RATE = 16000
CHUNK = RATE * 2 // 50  # 20 ms of 16-bit mono PCM


def _chunks(pcm: bytes) -> list[bytes]:
    return [pcm[i : i + CHUNK] for i in range(0, len(pcm), CHUNK)]


async def _stream(live: LiveDriver, pcm: bytes, *, pace: float = 1.0) -> None:
    """Send ``pcm`` as a microphone would: 20 ms chunks, ``pace`` x real time."""
    for chunk in _chunks(pcm):
        live.send_audio(chunk)
        await asyncio.sleep(0.02 / pace)


async def test_go_away_waits_for_the_user_to_finish_speaking(make_agent: AgentFactory) -> None:
    """Defect 1: a goAway 0.8 s into a 3 s utterance rotated at once, mid-utterance."""
    # goAway 1 s after accept with 5 s left; the margin leaves 4.5 s, more than the utterance.
    async with FakeLiveServer(connection_lifetime=6.0, go_away_lead=5.0) as server:
        agent = make_agent(server, policy=ResumePolicy(go_away_margin=0.5))
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one") == "echo: one"
            mark = len(live.events)
            await _stream(
                live, speech_pcm("a long spoken sentence", seconds=3.0) + silence_pcm(0.6)
            )
            assert await live.answer_after(mark) == "echo: a long spoken sentence"
            await server.wait_for_connections(2)
            assert await live.say("recall") == "you said: one | a long spoken sentence"
            await live.close()
        first = server.connections[0]
        assert first.go_away_sent
        # The utterance was heard and answered on the connection it was spoken to.
        assert "a long spoken sentence" in first.user_turns
        assert "echo: a long spoken sentence" in first.answers
        assert server.user_turns_answered() == ["one", "a long spoken sentence", "recall"]
        assert not any(getattr(e, "interrupted", False) for e in live.events)


async def test_after_a_refused_handle_a_new_call_runs_its_tool(make_agent: AgentFactory) -> None:
    """Defect 4: after a fresh start, the same call got the old result; the tool never ran."""
    balances = iter([{"balance": 100}, {"balance": 40}])
    ran: list[int] = []

    def get_balance() -> dict[str, int]:
        """Return the account balance."""
        result = next(balances)
        ran.append(result["balance"])
        return result

    async with FakeLiveServer() as server:
        server.script(Fault.refuse_resume(), connection=2)
        agent = make_agent(server, tools=[get_balance])
        async with await LiveDriver.start(agent) as live:
            assert await live.say("call get_balance") == 'get_balance returned {"balance":100}'
            await server.close_open(1011)
            await server.wait_for_connections(3)  # 2 refused the handle, 3 starts fresh
            assert await live.say("call get_balance") == 'get_balance returned {"balance":40}'
            await live.close()
        assert ran == [100, 40], "a new call runs its tool again"
        assert server.connections[2].resume_handle is None


async def test_closing_the_queue_during_an_outage_ends_the_run_at_once(
    make_agent: AgentFactory,
) -> None:
    """Defect 6: close() during an outage kept reconnecting until the policy gave up."""
    adk_live_resume.set_testing(False)  # real backoff waits
    async with FakeLiveServer() as server:
        policy = ResumePolicy(initial_wait=2.0, max_wait=2.0, jitter=False, max_attempts=8)
        agent = make_agent(server, policy=policy)
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one") == "echo: one"
            server.flap(1011, after_setup=False)
            await server.close_open(1011)
            await server.wait_for_connections(2)  # attempt 1 failed; now waiting 2 s
            loop = asyncio.get_running_loop()
            started = loop.time()
            error = await live.close(timeout=5)
            took = loop.time() - started
        assert error is None
        assert took < 1.5, f"the run took {took:.2f} s to end after close()"
        await asyncio.sleep(0.1)
        assert len(server.connections) == 2, "no connection after close()"


async def test_vertex_transparent_resume_sends_nothing_already_consumed(
    make_agent: AgentFactory,
) -> None:
    """Defect 7: on Vertex, the previous answer went back as context after every resume."""
    async with FakeLiveServer() as server:
        make_agent(server)  # installs the patch for the "install" entry point
        agent = _vertex_agent(server, make_agent.entry)
        async with await LiveDriver.start(agent) as live:
            for turn in ("one", "two"):
                assert await live.say(turn) == f"echo: {turn}"
                await server.close_open(1011)
            assert await live.say("recall") == "you said: one | two"
            await live.close()
        assert all(c.transparent for c in server.connections)
        assert server.history_sends() == 0, "nothing consumed is sent again as context"
        assert server.duplicate_history_sends() == 0
        assert server.user_turns_answered() == ["one", "two", "recall"]


def _vertex_agent(server: FakeLiveServer, entry: str) -> object:
    from google.adk.agents import LlmAgent

    from adk_live_resume import ResumableLlmAgent

    model = server.gemini(vertex=True)
    if entry == "install":
        return LlmAgent(name="assistant", model=model)
    return ResumableLlmAgent(name="assistant", model=model)


async def test_gap_ms_is_the_real_outage_when_the_deadline_lands_while_a_tool_runs(
    make_agent: AgentFactory,
) -> None:
    """Defect 10: gap_ms said 7 ms for a 1.45 s outage (counted from the tool's end)."""
    reconnects: list[ReconnectInfo] = []
    remove = adk_live_resume.on_reconnect(reconnects.append)

    async def slow_lookup() -> dict[str, str]:
        """Look something up slowly."""
        await asyncio.sleep(1.5)
        return {"found": "yes"}

    try:
        async with FakeLiveServer() as server:
            agent = make_agent(server, tools=[slow_lookup])
            async with await LiveDriver.start(agent) as live:
                mark = live.send_text("call slow_lookup")
                await server.wait_for(lambda: bool(server.tool_calls_issued()), 5)
                await asyncio.sleep(0.2)  # the tool is running now
                await server.close_open(1011)  # the deadline close
                answer = await live.answer_after(mark, timeout=15)
                assert answer == 'slow_lookup returned {"found":"yes"}'
                await live.close()
    finally:
        remove()
    assert len(reconnects) == 1
    assert reconnects[0].gap_ms >= 1000, reconnects[0]


async def test_an_audio_run_without_compression_is_warned_about_once(
    make_agent: AgentFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """Defect 9: nothing said that an audio session without compression ends at 15 min."""
    caplog.set_level(logging.WARNING, logger="adk_live_resume")
    async with FakeLiveServer() as server:
        agent = make_agent(server)
        async with await LiveDriver.start(agent) as live:
            await _stream(live, speech_pcm("hello", seconds=0.4) + silence_pcm(0.6), pace=10)
            await server.close_open(1011)
            await server.wait_for(lambda: len(server.user_turns_answered()) >= 1, 10)
            await _stream(live, speech_pcm("again", seconds=0.4) + silence_pcm(0.6), pace=10)
            await server.wait_for(lambda: len(server.user_turns_answered()) >= 2, 10)
            await live.close()
    warnings = [r for r in caplog.records if "context window compression" in r.getMessage()]
    assert len(warnings) == 1
    assert "15 minutes" in warnings[0].getMessage()
    assert "sliding_window" in warnings[0].getMessage()


async def test_the_sliding_window_option_adds_compression_to_every_setup(
    make_agent: AgentFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="adk_live_resume")
    async with FakeLiveServer() as server:
        agent = make_agent(server, policy=ResumePolicy(sliding_window=True))
        async with await LiveDriver.start(agent) as live:
            await _stream(live, speech_pcm("hello", seconds=0.4) + silence_pcm(0.6), pace=10)
            await server.wait_for(lambda: bool(server.user_turns_answered()), 10)
            await server.close_open(1011)
            assert await live.say("two") == "echo: two"
            await live.close()
    for connection in server.connections:
        assert connection.setup is not None
        compression = connection.setup.get("contextWindowCompression") or connection.setup.get(
            "context_window_compression"
        )
        assert compression is not None and "slidingWindow" in str(compression).replace(
            "sliding_window", "slidingWindow"
        )
    assert not [r for r in caplog.records if "context window compression" in r.getMessage()]


async def test_a_caller_set_compression_is_kept(make_agent: AgentFactory) -> None:
    from google.adk.agents.run_config import RunConfig

    config = RunConfig(
        response_modalities=[types.Modality.TEXT],
        session_resumption=types.SessionResumptionConfig(),
        context_window_compression=types.ContextWindowCompressionConfig(
            trigger_tokens=50000, sliding_window=types.SlidingWindow(target_tokens=20000)
        ),
    )
    async with FakeLiveServer() as server:
        agent = make_agent(server, policy=ResumePolicy(sliding_window=True))
        async with await LiveDriver.start(agent, run_config=config) as live:
            assert await live.say("one") == "echo: one"
            await live.close()
    assert "20000" in str(server.connections[0].setup)
