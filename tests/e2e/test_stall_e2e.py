"""Stalled sessions end to end: the socket open, pings answered, and no answer.

Real ``Runner.run_live``, real google-genai, TLS websockets on 127.0.0.1, the fake server's
``Fault.stall`` shapes; each scenario on both entry points (``install()`` and
``ResumableLlmAgent``), the main one on both dialects.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from google.adk.agents import LlmAgent

import adk_live_resume
from adk_live_resume import (
    ReconnectInfo,
    ResumableLlmAgent,
    ResumePolicy,
    RunStats,
    SessionStalledError,
)
from adk_live_resume.rules.errors import Drop
from adk_live_resume.testing import FakeLiveServer, Fault, silence_pcm, speech_pcm
from adk_live_resume.testing.driver import LiveDriver

from ..conftest import AgentFactory, stream_pcm

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]

#: Short enough to keep the tests fast, long enough for a loaded machine's answers.
STALL = ResumePolicy(stall_timeout=1.0)


class Reports:
    """The reconnects and run ends reported while it is open."""

    def __init__(self) -> None:
        self.reconnects: list[ReconnectInfo] = []
        self.runs: list[RunStats] = []

    def __enter__(self) -> Reports:
        self._removers = [
            adk_live_resume.on_reconnect(self.reconnects.append),
            adk_live_resume.on_run_end(self.runs.append),
        ]
        return self

    def __exit__(self, *exc: object) -> None:
        for remove in self._removers:
            remove()

    def steps(self) -> list[tuple[str, bool]]:
        return [(r.reason, r.state_restored) for r in self.reconnects]


def agent_on(
    dialect: str, make_agent: AgentFactory, server: FakeLiveServer, policy: ResumePolicy
) -> Any:
    """The agent ``make_agent`` would make, on ``dialect`` ("gemini" or "vertex")."""
    if dialect != "vertex":
        return make_agent(server, policy=policy)
    model = server.gemini(vertex=True)
    if make_agent.entry == "install":
        adk_live_resume.install(policy)
        return LlmAgent(name="assistant", model=model)
    return ResumableLlmAgent(name="assistant", model=model, resume_policy=policy)


@pytest.mark.parametrize("dialect", ["gemini", "vertex"])
async def test_a_silent_stall_is_resumed_and_the_turn_answered_once(
    make_agent: AgentFactory, dialect: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="adk_live_resume")
    with Reports() as reports:
        async with FakeLiveServer() as server:
            agent = agent_on(dialect, make_agent, server, STALL)
            async with await LiveDriver.start(agent) as live:
                assert await live.say("first") == "echo: first"
                server.script(Fault.stall(), connection=1)
                assert await live.say("second", timeout=20) == "echo: second"
                assert await live.say("third") == "echo: third"
                assert await live.close() is None
            first, second = server.connections
            assert first.stalled_turns == ["second"] and first.ended_by == "client"
            assert second.resumed and not second.stalled_turns
            assert server.user_turns_answered() == ["first", "second", "third"]
            assert server.history_sends() == 0
    assert reports.steps() == [("stall", True)]
    assert reports.reconnects[0].stall.startswith("no answer")
    assert "typed turn" in reports.reconnects[0].stall
    (stats,) = reports.runs
    assert (stats.stalls, stats.stall_fresh_starts, stats.error) == (1, 0, None)
    warnings = [r for r in caplog.records if "stalled on an open connection" in r.message]
    assert len(warnings) == 1 and "resuming" in warnings[0].message


async def test_a_session_stall_moves_to_a_fresh_session(make_agent: AgentFactory) -> None:
    with Reports() as reports:
        async with FakeLiveServer() as server:
            agent = make_agent(server, policy=STALL)
            async with await LiveDriver.start(agent) as live:
                assert await live.say("first") == "echo: first"
                server.script(Fault.stall(session=True), connection=1)
                assert await live.say("second", timeout=20) == "echo: second"
                assert await live.say("third") == "echo: third"
                assert await live.close() is None
            first, second, third = server.connections
            assert first.stalled_turns == second.stalled_turns == ["second"]
            assert second.resumed and not third.resumed and third.history_sends == 1
            assert third.session_id != first.session_id
            assert server.user_turns_answered() == ["first", "second", "third"]
    assert reports.steps() == [("stall", True), ("stall", False)]
    (stats,) = reports.runs
    assert (stats.stalls, stats.stall_fresh_starts) == (2, 1)


async def test_a_stall_that_outlives_a_fresh_session_ends_the_run_saying_what_was_seen(
    make_agent: AgentFactory,
) -> None:
    with Reports() as reports:
        async with FakeLiveServer() as server:
            agent = make_agent(server, policy=STALL)
            server.script(Fault.stall(), connection=3)
            async with await LiveDriver.start(agent) as live:
                assert await live.say("first") == "echo: first"
                server.script(Fault.stall(session=True), connection=1)
                live.send_text("second")
                error = await live.wait_ended(timeout=30)
            assert [len(c.stalled_turns) for c in server.connections] == [1, 1, 1]
    assert isinstance(error, SessionStalledError)
    first = str(error).encode()[:120].decode()  # (what a browser is shown: 123 bytes)
    assert "stalled 3 times; a resume and a fresh session brought no answer" in first
    assert "Check the service status" in first and "no answer" in str(error)
    assert "stall_timeout" in str(error)
    assert reports.steps() == [("stall", True), ("stall", False)]
    assert reports.runs[0].error is not None and "SessionStalledError" in reports.runs[0].error


@pytest.mark.parametrize("shape", ["empty", "rejected"])
async def test_degenerate_turns_start_a_fresh_session_that_is_asked_once(
    make_agent: AgentFactory, shape: str
) -> None:
    with Reports() as reports:
        async with FakeLiveServer() as server:
            policy = ResumePolicy(stall_timeout=0, degenerate_turns=1)
            agent = make_agent(server, policy=policy)
            async with await LiveDriver.start(agent) as live:
                assert await live.say("first") == "echo: first"
                server.script(Fault.stall(shape), connection=1)  # type: ignore[arg-type]
                assert await live.say("second", timeout=20) == "echo: second"
                assert await live.say("third") == "echo: third"
                assert await live.close() is None
            first, second = server.connections
            assert first.stalled_turns == ["second"] and not second.resumed
            assert second.history_sends == 1 and second.user_turns.count("second") == 1
            assert server.user_turns_answered() == ["first", "second", "third"]
    assert reports.steps() == [("stall", False)]
    expected = "RESPONSE_REJECTED" if shape == "rejected" else "no content"
    assert expected in reports.reconnects[0].stall


async def test_a_stall_recovery_whose_resume_is_refused_is_reported_once_as_a_stall(
    make_agent: AgentFactory,
) -> None:
    """One reason per recovery: the resume that follows the stall is refused at its setup
    and a fresh session takes over; the reconnect reported is the stall's (reason, what was
    seen), not the refusal's drop."""
    with Reports() as reports:
        async with FakeLiveServer() as server:
            agent = make_agent(server, policy=STALL)
            server.script(Fault.refuse_resume(), connection=2)
            async with await LiveDriver.start(agent) as live:
                assert await live.say("first") == "echo: first"
                server.script(Fault.stall(), connection=1)
                assert await live.say("second", timeout=20) == "echo: second"
                assert await live.close() is None
            stalled, refused, fresh = server.connections
            assert stalled.stalled_turns == ["second"] and refused.ended_by == "refused"
            assert fresh.history_sends == 1 and fresh.user_turns.count("second") == 1
    assert reports.steps() == [("stall", False)]
    (info,) = reports.reconnects
    assert info.stall.startswith("no answer") and info.cause == f"stall: {info.stall}"
    assert (info.attempt, info.failure_class) == (2, "refused_handle")
    (stats,) = reports.runs
    assert (stats.stalls, stats.stall_fresh_starts, stats.error) == (1, 0, None)


async def test_the_retry_hook_is_not_asked_about_the_close_of_a_stalled_socket(
    make_agent: AgentFactory,
) -> None:
    """The loop closes the stalled socket itself (the server never sent that 1000): the
    stall ladder decides what follows, and a retry hook is asked about drops only."""
    asked: list[Drop] = []

    def never_retry(drop: Drop, attempt: int) -> bool:
        asked.append(drop)
        return False

    remove = adk_live_resume.on_retry(never_retry)
    try:
        with Reports() as reports:
            async with FakeLiveServer() as server:
                agent = make_agent(server, policy=STALL)
                async with await LiveDriver.start(agent) as live:
                    assert await live.say("first") == "echo: first"
                    server.script(Fault.stall(), connection=1)
                    assert await live.say("second", timeout=20) == "echo: second"
                    assert await live.close() is None
    finally:
        remove()
    assert asked == [] and reports.steps() == [("stall", True)]


async def test_stall_detection_off_waits_as_stock_adk_does(make_agent: AgentFactory) -> None:
    async with FakeLiveServer() as server:
        agent = make_agent(server, policy=ResumePolicy(stall_timeout=0))
        async with await LiveDriver.start(agent) as live:
            assert await live.say("first") == "echo: first"
            server.script(Fault.stall(), connection=1)
            with pytest.raises(TimeoutError):
                await live.say("second", timeout=2.0)
            await live.close()
        assert len(server.connections) == 1


def audio_answers() -> Any:
    """A voice app's run config: answers in audio, with their transcription."""
    from google.adk.agents.run_config import RunConfig
    from google.genai import types

    return RunConfig(
        response_modalities=[types.Modality.AUDIO],
        session_resumption=types.SessionResumptionConfig(),
        output_audio_transcription=types.AudioTranscriptionConfig(),
    )


@pytest.mark.parametrize("dialect", ["gemini", "vertex"])
async def test_a_session_long_quiet_audio_stall_is_answered_once_by_a_fresh_session(
    make_agent: AgentFactory, dialect: str
) -> None:
    """An answer of near-silent audio answers nothing: the session that gave it is not
    resumed (it holds the exchange), and the fresh session is asked the turn once."""
    policy = ResumePolicy(stall_timeout=1.0, degenerate_turns=1)
    with Reports() as reports:
        async with FakeLiveServer() as server:
            agent = agent_on(dialect, make_agent, server, policy)
            async with await LiveDriver.start(agent, run_config=audio_answers()) as live:
                assert await live.say("first") == "echo: first"
                server.script(Fault.stall("quiet_audio", session=True), connection=1)
                assert await live.say("second", timeout=20) == "echo: second"
                assert await live.say("third") == "echo: third"
                assert await live.close() is None
            first, second = server.connections
            assert first.stalled_turns == ["second"] and not second.stalled_turns
            assert not second.resumed and second.session_id != first.session_id
            assert second.history_sends == 1 and second.user_turns.count("second") == 1
            assert server.user_turns_answered() == ["first", "second", "third"]
    assert reports.steps() == [("stall", False)]
    assert "near silence" in reports.reconnects[0].stall


async def test_a_stall_is_recovered_while_the_user_keeps_talking(
    make_agent: AgentFactory,
) -> None:
    """A microphone that speaks every 2 s to a stalled session: each new utterance makes the
    server cut its silent generation (``interrupted``, no output), which answers nothing, and
    each quiet stretch (1 s: shorter than ``stall_timeout``) adds to the wait."""
    policy = ResumePolicy(stall_timeout=1.5)
    with Reports() as reports:
        async with FakeLiveServer() as server:
            agent = make_agent(server, policy=policy)
            async with await LiveDriver.start(agent) as live:
                await stream_pcm(live, speech_pcm("hello", seconds=0.5) + silence_pcm(1.0))
                await server.wait_for(lambda: server.user_turns_answered() == ["hello"], 10)
                server.script(Fault.stall(), connection=1)

                async def keep_talking() -> None:
                    for number in range(20):
                        utterance = speech_pcm(f"are you there {number}", seconds=0.6)
                        await stream_pcm(live, utterance + silence_pcm(1.4))

                talking = asyncio.create_task(keep_talking())
                try:
                    await server.wait_for(
                        lambda: (
                            len(server.connections) > 1
                            and server.connections[1].answered_user_turns != []
                        ),
                        20,
                        what="an answer on the connection that replaced the stalled one",
                    )
                finally:
                    talking.cancel()
                assert await live.close() is None
            first, second = server.connections[:2]
            assert first.stalled_turns and first.interrupted >= 1 and first.ended_by == "client"
            assert second.resumed
    assert [(r.reason, r.state_restored) for r in reports.reconnects[:1]] == [("stall", True)]
    assert "after an utterance the server transcribed" in reports.reconnects[0].stall


async def test_a_stall_on_a_function_response_is_recovered_with_the_tool_run_once(
    make_agent: AgentFactory,
) -> None:
    """The fault proxy withholds every answer from the function response on (the next user
    turn once armed): the session is resumed from the handle before it, the model asks for
    the tool again and the repeat gets the earlier result: the tool ran once, its result is
    told once."""
    from adk_live_resume.testing import FaultProxy

    from ..helpers import answer_like, answers

    runs: list[str] = []
    started = asyncio.Event()

    async def lookup(what: str) -> dict[str, Any]:
        """Look something up (slowly)."""
        runs.append(what)
        started.set()
        await asyncio.sleep(0.5)
        return {"what": what, "found": True}

    with Reports() as reports:
        async with asyncio.timeout(40), FakeLiveServer() as server, FaultProxy(server) as proxy:
            agent = make_agent(proxy, tools=[lookup], policy=STALL)
            async with await LiveDriver.start(agent) as live:
                assert await live.say("one") == "echo: one"
                await server.wait_for(lambda: bool(server.handles_issued()), 5, what="a handle")
                mark = live.send_text('call lookup {"what": "order"}')
                await asyncio.wait_for(started.wait(), 10)
                proxy.stall("silent")  # from the function response on
                told = await answer_like(live, mark, "lookup returned", timeout=20)
                assert await live.say("two") == "echo: two"
                assert await live.close() is None
    assert told == 'lookup returned {"found":true,"what":"order"}'
    assert runs == ["order"], "the tool ran once"
    assert proxy.connections[0].faults == ["stall silent"]
    assert [a for a in answers(live, mark) if a.startswith("lookup returned")] == [told]
    assert reports.steps() == [("stall", True)]
    assert "function response" in reports.reconnects[0].stall
