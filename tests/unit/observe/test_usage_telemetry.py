"""Tokens and answer times as OpenTelemetry exports them, read back through the SDK's in-memory
reader and span exporter (as an app's exporter would get them), after a real run against the
fake on both entry points; and the observability page's export, which must show them.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import adk_live_resume
from adk_live_resume import RunStats
from adk_live_resume.testing import FakeLiveServer, LiveDriver

from ... import otel_sdk
from ...conftest import AgentFactory

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]

PAGE = Path(__file__).resolve().parents[3] / "docs" / "observability.md"
TOKENS = [f"adk_live_resume.tokens.{kind}" for kind in ("prompt", "response")]
ANSWERS = ["adk_live_resume.answer.first_output", "adk_live_resume.answer.duration"]


@pytest.fixture(scope="module")
def otel() -> tuple[InMemoryMetricReader, InMemorySpanExporter]:
    return otel_sdk.providers()


def _by_labels(reader: InMemoryMetricReader, name: str) -> dict[tuple[str, str], float]:
    """Counter ``name``'s value per (model, modality)."""
    return {
        (
            str(p.attributes.get("adk_live_resume.model")),
            str(p.attributes.get("adk_live_resume.modality")),
        ): p.value
        for p in otel_sdk.points(reader, name)
    }


def _counts(reader: InMemoryMetricReader, name: str, model: str) -> int:
    return sum(
        p.count
        for p in otel_sdk.points(reader, name)
        if p.attributes.get("adk_live_resume.model") == model
    )


async def test_tokens_and_answers_are_exported_by_model_and_modality(
    make_agent: AgentFactory, otel: tuple[InMemoryMetricReader, InMemorySpanExporter]
) -> None:
    reader, spans = otel
    model = f"gemini-live-fake-{make_agent.entry}"  # (counters add up over the process)
    async with asyncio.timeout(40), FakeLiveServer(chunk_delay=0.0) as server:
        with trace.get_tracer("test").start_as_current_span("conversation") as span:
            async with await LiveDriver.start(make_agent(server, model=model)) as live:
                assert await live.say("one") == "echo: one"
                assert await live.say("two words") == "echo: two words"
                await server.restart()
                assert await live.say("three") == "echo: three"
                assert await live.close() is None
    # per turn as sent: prompts 1 + 5 on the first connection, 9 on the second
    assert _by_labels(reader, "adk_live_resume.tokens.prompt")[(model, "TEXT")] == 15
    assert _by_labels(reader, "adk_live_resume.tokens.response")[(model, "TEXT")] == 7
    assert not any(m == model for m, _ in _by_labels(reader, "adk_live_resume.tokens.cached"))
    for name in ANSWERS:
        assert _counts(reader, name, model) == 3, name
    # (on the span current where the run executes: ADK's invocation span, in this trace)
    trace_id = span.get_span_context().trace_id
    (ended,) = [
        s
        for s in spans.get_finished_spans()
        if s.context.trace_id == trace_id and any(e.name.startswith("adk_live") for e in s.events)
    ]
    events = list(ended.events)
    answers = [e for e in events if e.name == "adk_live_resume.answer"]
    assert [a.attributes["adk_live_resume.connection_number"] for a in answers] == [1, 1, 2]
    assert [a.attributes["adk_live_resume.characters"] for a in answers] == [9, 15, 11]
    assert all(a.attributes["adk_live_resume.first_output_ms"] >= 0 for a in answers)
    # each answer is stamped when it ended, in order, within the span
    stamps = [a.timestamp for a in answers]
    assert ended.start_time is not None and ended.end_time is not None
    assert (
        stamps == sorted(stamps) and ended.start_time <= stamps[0] <= stamps[-1] <= ended.end_time
    )
    (reconnect,) = [e for e in events if e.name == "adk_live_resume.reconnect"]
    assert reconnect.attributes["adk_live_resume.context_restored"] is True
    assert reconnect.attributes["adk_live_resume.prompt_tokens"] == 6


async def test_tool_calls_are_counted_per_connection_and_per_run(
    make_agent: AgentFactory, otel: tuple[InMemoryMetricReader, InMemorySpanExporter]
) -> None:
    reader, _ = otel
    model = f"gemini-live-fake-tools-{make_agent.entry}"  # (counters add up over the process)
    ended: list[RunStats] = []
    remove = adk_live_resume.on_run_end(ended.append)

    def lookup(what: str) -> dict[str, Any]:
        """Look something up."""
        return {"what": what}

    try:
        async with asyncio.timeout(40), FakeLiveServer(chunk_delay=0.0) as server:
            agent = make_agent(server, model=model, tools=[lookup])
            async with await LiveDriver.start(agent) as live:
                for what in ("a", "b"):
                    said = await live.say(f'call lookup {{"what": "{what}"}}', timeout=15)
                    assert said == f'lookup returned {{"what":"{what}"}}'
                await server.restart()  # a drop
                said = await live.say('call lookup {"what": "c"}', timeout=15)
                assert said == 'lookup returned {"what":"c"}'
                assert await live.close() is None
    finally:
        remove()
    (stats,) = ended
    assert stats.connections == 2 and stats.tool_calls == 3
    points = [
        p
        for p in otel_sdk.points(reader, "adk_live_resume.tool_calls")
        if p.attributes.get("adk_live_resume.model") == model
    ]
    assert sum(p.value for p in points) == 3


def _page_export() -> dict[str, Any]:
    """The OpenTelemetry export the observability page shows (its ``json`` block)."""
    text = PAGE.read_text(encoding="utf-8")
    blocks = re.findall(r"<!-- otel-export -->\s*```json\n(.*?)```", text, re.S)
    assert len(blocks) == 1, "the page shows one export, marked <!-- otel-export -->"
    parsed: dict[str, Any] = json.loads(blocks[0])
    return parsed


def test_the_observability_page_shows_a_real_export_of_the_new_metrics() -> None:
    export = _page_export()
    metrics = {
        m["name"]: m
        for r in export["resource_metrics"]
        for s in r["scope_metrics"]
        if s["scope"]["name"] == "adk_live_resume"
        for m in s["metrics"]
    }
    for name in [*TOKENS, *ANSWERS]:
        assert name in metrics, name
    prompt = metrics["adk_live_resume.tokens.prompt"]
    assert prompt["unit"] == "{token}" and prompt["data"]["is_monotonic"] is True
    (point,) = prompt["data"]["data_points"]
    assert point["attributes"] == {
        "adk_live_resume.model": "gemini-live-fake",
        "adk_live_resume.modality": "TEXT",
    }
    assert point["value"] == 15  # the conversation of the test above, in a fresh process
    first = metrics["adk_live_resume.answer.first_output"]
    assert first["unit"] == "ms" and first["data"]["data_points"][0]["count"] == 3
