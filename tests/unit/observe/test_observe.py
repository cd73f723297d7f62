"""What users see: log lines, run counters, async callbacks, OpenTelemetry (real SDK readers)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, Iterator
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from opentelemetry import trace
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import adk_live_resume
from adk_live_resume import ReconnectFailedError, ReconnectInfo, ResumePolicy, RunStats
from adk_live_resume.observe import callbacks as observe
from adk_live_resume.testing import FakeLiveServer, Fault, LiveDriver

from ... import otel_sdk
from ...conftest import AgentFactory

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def otel() -> tuple[InMemoryMetricReader, InMemorySpanExporter]:
    """The SDK's in-memory reader and exporter as the process's providers (set once)."""
    return otel_sdk.providers()


def _points(reader: InMemoryMetricReader, name: str) -> list[Any]:
    return otel_sdk.points(reader, name)


def _total(reader: InMemoryMetricReader, name: str, **labels: str) -> float:
    return otel_sdk.total(reader, name, **labels)


@pytest.fixture
def runs() -> Iterator[list[RunStats]]:
    ended: list[RunStats] = []
    remove = adk_live_resume.on_run_end(ended.append)
    yield ended
    remove()


@pytest.mark.timeout(60)
async def test_a_reconnect_is_a_span_event_and_metrics(
    otel: tuple[InMemoryMetricReader, InMemorySpanExporter], runs: list[RunStats]
) -> None:
    reader, spans = otel
    before = _total(reader, "adk_live_resume.reconnects", reason="drop")
    gaps_before = sum(p.count for p in _points(reader, "adk_live_resume.reconnect.gap"))
    adk_live_resume.install()
    async with asyncio.timeout(30), FakeLiveServer() as server:
        agent = LlmAgent(name="assistant", model=server.gemini())
        with trace.get_tracer("test").start_as_current_span("conversation"):
            async with await LiveDriver.start(agent) as live:
                assert await live.say("one") == "echo: one"
                await server.restart()
                assert await live.say("two") == "echo: two"
                assert await live.close() is None
    assert _total(reader, "adk_live_resume.reconnects", reason="drop") == before + 1
    gaps = _points(reader, "adk_live_resume.reconnect.gap")
    assert sum(p.count for p in gaps) == gaps_before + 1
    events = [e for s in spans.get_finished_spans() for e in s.events]
    reconnect = [e for e in events if e.name == "adk_live_resume.reconnect"]
    assert reconnect and reconnect[-1].attributes["adk_live_resume.reason"] == "drop"
    assert reconnect[-1].attributes["adk_live_resume.state_restored"] is True
    assert reconnect[-1].attributes["adk_live_resume.dropped_audio_ms"] == 0.0
    assert reconnect[-1].attributes["adk_live_resume.dropped_silence_ms"] == 0.0
    # the run's counters, once, at the end
    assert len(runs) == 1
    stats = runs[0]
    assert stats.connections == 2 and stats.reconnects == 1 and stats.error is None
    assert stats.agent_name == "assistant" and stats.fresh_starts == 0


@pytest.mark.timeout(60)
async def test_a_runs_start_is_timed_phase_by_phase_in_a_debug_line_and_a_span_event(
    otel: tuple[InMemoryMetricReader, InMemorySpanExporter],
    caplog: pytest.LogCaptureFixture,
) -> None:
    _, spans = otel
    adk_live_resume.install()
    with caplog.at_level(logging.DEBUG, logger="adk_live_resume.timeline"):
        async with asyncio.timeout(30), FakeLiveServer() as server:
            agent = LlmAgent(name="assistant", model=server.gemini())
            with trace.get_tracer("test").start_as_current_span("conversation"):
                async with await LiveDriver.start(agent) as live:
                    assert await live.say("one") == "echo: one"
                    await server.restart()  # (a reconnect is not the run's start)
                    assert await live.say("two") == "echo: two"
                    assert await live.close() is None
    lines = [r.getMessage() for r in caplog.records if r.name == "adk_live_resume.timeline"]
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"session {live.session.id}: run started at ")
    told = dict(
        (phase, float(ms))
        for phase, ms in (part.split()[:2] for part in lines[0].split("; ")[1].split(", "))
    )
    assert list(told) == ["request", "handle", "connect", "restore", "answer"]
    assert all(ms >= 0 for ms in told.values())
    events = [e for s in spans.get_finished_spans() for e in s.events]
    started = [e for e in events if e.name == "adk_live_resume.run_started"]
    assert started, "no adk_live_resume.run_started span event"
    assert started[-1].attributes is not None
    assert dict(started[-1].attributes) == pytest.approx(
        {f"adk_live_resume.{phase}_ms": ms for phase, ms in told.items()}, abs=0.05
    )


@pytest.mark.timeout(60)
async def test_a_stall_recovery_is_a_span_event_with_what_was_seen(
    otel: tuple[InMemoryMetricReader, InMemorySpanExporter], runs: list[RunStats]
) -> None:
    reader, spans = otel
    before = _total(reader, "adk_live_resume.reconnects", reason="stall")
    adk_live_resume.install(adk_live_resume.ResumePolicy(stall_timeout=1.0))
    async with asyncio.timeout(30), FakeLiveServer() as server:
        agent = LlmAgent(name="assistant", model=server.gemini())
        with trace.get_tracer("test").start_as_current_span("conversation"):
            async with await LiveDriver.start(agent) as live:
                assert await live.say("one") == "echo: one"
                server.script(Fault.stall(), connection=1)
                assert await live.say("two", timeout=20) == "echo: two"
                assert await live.close() is None
    assert _total(reader, "adk_live_resume.reconnects", reason="stall") == before + 1
    events = [e for s in spans.get_finished_spans() for e in s.events]
    reconnect = [e for e in events if e.name == "adk_live_resume.reconnect"]
    assert reconnect[-1].attributes["adk_live_resume.reason"] == "stall"
    assert reconnect[-1].attributes["adk_live_resume.stall"].startswith("no answer 1.")
    assert runs[0].stalls == 1 and runs[0].stall_fresh_starts == 0


@pytest.mark.timeout(60)
async def test_a_stall_recovery_whose_resume_is_refused_is_one_stall_event(
    otel: tuple[InMemoryMetricReader, InMemorySpanExporter],
    runs: list[RunStats],
    make_agent: AgentFactory,
) -> None:
    """One reason per recovery in the OpenTelemetry export too: the refused resume after a
    stall does not turn the recovery into a "drop" without what was seen."""
    reader, spans = otel
    stalls_before = _total(reader, "adk_live_resume.reconnects", reason="stall")
    drops_before = _total(reader, "adk_live_resume.reconnects", reason="drop")
    async with asyncio.timeout(30), FakeLiveServer() as server:
        agent = make_agent(server, policy=ResumePolicy(stall_timeout=1.0))
        server.script(Fault.refuse_resume(), connection=2)
        with trace.get_tracer("test").start_as_current_span("conversation"):
            async with await LiveDriver.start(agent) as live:
                assert await live.say("one") == "echo: one"
                server.script(Fault.stall(), connection=1)
                assert await live.say("two", timeout=20) == "echo: two"
                assert await live.close() is None
        assert len(server.connections) == 3
    assert _total(reader, "adk_live_resume.reconnects", reason="stall") == stalls_before + 1
    assert _total(reader, "adk_live_resume.reconnects", reason="drop") == drops_before
    events = [e for s in spans.get_finished_spans() for e in s.events]
    reconnect = [e for e in events if e.name == "adk_live_resume.reconnect"][-1].attributes
    assert reconnect is not None
    assert (reconnect["adk_live_resume.reason"], reconnect["adk_live_resume.attempt"]) == (
        "stall",
        2,
    )
    assert str(reconnect["adk_live_resume.stall"]).startswith("no answer")
    assert reconnect["adk_live_resume.failure_class"] == "refused_handle"
    assert runs[0].stalls == 1


@pytest.mark.timeout(60)
async def test_giving_up_is_a_warning_with_the_cause_and_every_attempt_is_a_line(
    otel: tuple[InMemoryMetricReader, InMemorySpanExporter],
    runs: list[RunStats],
    caplog: pytest.LogCaptureFixture,
) -> None:
    reader, _ = otel
    before = _total(reader, "adk_live_resume.gave_up", error="ReconnectFailedError")
    adk_live_resume.install(ResumePolicy(max_attempts=3))
    with caplog.at_level(logging.INFO, logger="adk_live_resume"):
        async with asyncio.timeout(30), FakeLiveServer() as server:
            agent = LlmAgent(name="assistant", model=server.gemini())
            async with await LiveDriver.start(agent) as live:
                assert await live.say("one") == "echo: one"
                # each resume set up, then its TCP connection dropped: the network, not a
                # close the service repeats (that would be a poisoned handle: a fresh start)
                server.flap(1006)
                await server.close_open(1011, "broken")
                error = await live.wait_ended(timeout=20)
    assert isinstance(error, ReconnectFailedError), error
    attempts = [r for r in caplog.records if "reconnect attempt" in r.getMessage()]
    assert [r.levelname for r in attempts] == ["INFO"] * 3
    assert "(1011 broken); reconnect attempt 1 of 3 in 0.000 s" in attempts[0].getMessage()
    assert "reconnect attempt 3 of 3" in attempts[2].getMessage()
    gave_up = [
        r for r in caplog.records if r.levelno == logging.WARNING and "gave up" in r.getMessage()
    ]
    assert len(gave_up) == 1
    assert "3 connection attempts failed" in gave_up[0].getMessage()
    assert "(last cause: 1006 " in gave_up[0].getMessage()
    assert _total(reader, "adk_live_resume.gave_up", error="ReconnectFailedError") == before + 1
    assert len(runs) == 1 and runs[0].error is not None
    assert runs[0].error.startswith("ReconnectFailedError: gave up")
    assert runs[0].connections == 1 + 3  # each flapped connection opened, then closed


@pytest.mark.timeout(60)
async def test_async_callbacks_are_called_and_non_callables_refused() -> None:
    seen: list[str] = []
    both = asyncio.Event()

    async def on_reconnect(info: ReconnectInfo) -> None:
        await asyncio.sleep(0)
        seen.append(f"reconnect {info.reason}")

    async def on_end(stats: RunStats) -> None:
        seen.append(f"end {stats.connections}")
        both.set()

    with pytest.raises(TypeError, match="on_reconnect\\(\\) needs a function"):
        adk_live_resume.on_reconnect("print")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="on_run_end\\(\\) needs a function"):
        adk_live_resume.on_run_end(None)  # type: ignore[arg-type]
    removers = [adk_live_resume.on_reconnect(on_reconnect), adk_live_resume.on_run_end(on_end)]
    try:
        adk_live_resume.install()
        async with asyncio.timeout(30), FakeLiveServer() as server:
            agent = LlmAgent(name="assistant", model=server.gemini())
            async with await LiveDriver.start(agent) as live:
                assert await live.say("one") == "echo: one"
                await server.close_open(1011)
                assert await live.say("two") == "echo: two"
                assert await live.close() is None
            await both.wait()
    finally:
        for remove in removers:
            remove()
    assert seen == ["reconnect drop", "end 2"]


class _NotGemini(BaseLlm):
    """A live-capable model that is not ADK's Gemini (its connect fails on purpose)."""

    @classmethod
    def supported_models(cls) -> list[str]:
        return ["not-gemini"]

    async def generate_content_async(  # type: ignore[override]
        self, llm_request: Any, stream: bool = False
    ) -> AsyncGenerator[Any, None]:
        raise NotImplementedError
        yield

    def connect(self, llm_request: Any) -> Any:
        raise NotImplementedError("this test model has no live connection")


@pytest.mark.timeout(60)
async def test_a_non_gemini_model_is_said_once_at_info(caplog: pytest.LogCaptureFixture) -> None:
    adk_live_resume.install()
    observe._not_gemini_reported.clear()
    with caplog.at_level(logging.INFO, logger="adk_live_resume"):
        for _ in range(2):
            agent = LlmAgent(name="assistant", model=_NotGemini(model="not-gemini"))
            async with asyncio.timeout(30):
                live = await LiveDriver.start(agent)
                error = await live.wait_ended(timeout=20)
            assert isinstance(error, NotImplementedError), error
    lines = [r for r in caplog.records if "is not ADK's Gemini" in r.getMessage()]
    assert len(lines) == 1 and lines[0].levelname == "INFO"
    assert "not-gemini" in lines[0].getMessage() and "_NotGemini" in lines[0].getMessage()
