"""No whole handle and no key leaks out of a live run, wherever a user or an operator looks.

A run with stored handles (sealed into the ADK session at every handle), a drop and a goAway
move, its API key a real-looking Google key that goes all the way to the fake (through the
fault proxy). Then every log record at DEBUG (every logger: ours, ADK's, google-genai's,
websockets' in the app and in the fake and the proxy), every event ``run_live`` yielded, the
ADK session as a browser reads it (``GET`` the session: its JSON), the OpenTelemetry spans
(names, attributes, events) and the public reprs are searched for each handle the fake
issued, whole, for the API key and for the key that seals stored handles. End to end, on
both entry points.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from cryptography.fernet import Fernet
from google.adk.agents.run_config import RunConfig
from google.genai import types
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import adk_live_resume
from adk_live_resume import ReconnectInfo, ResumePolicy, RunStats, current_handle
from adk_live_resume.resumption.stored_handle import HANDLE_KEY_ENV
from adk_live_resume.testing import FakeLiveServer, FaultProxy, LiveDriver

from .. import otel_sdk
from ..conftest import AgentFactory

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

#: A real-looking Google API key (the shape every Gemini API key has).
API_KEY = "AIzaSyD-leakScanKeyThatMustNeverShow123"


class _FromEnvironment:
    """What ``make_agent`` takes as its server: a plain ADK ``Gemini``, whose client reads
    the environment (the proxy's address and the key), as an app's does."""

    def gemini(self, model: str = "gemini-live-fake") -> Any:
        from google.adk.models import Gemini

        return Gemini(model=model)


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """Every span finished during the test (an SDK tracer provider, set or joined)."""
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        trace.set_tracer_provider(otel_sdk.TRACER_PROVIDER)  # (the suite's shared one)
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        pytest.skip("another OpenTelemetry tracer provider was set earlier in this process")
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield exporter
    exporter.shutdown()


def _span_text(exporter: InMemorySpanExporter) -> list[str]:
    texts = []
    for span in exporter.get_finished_spans():
        texts.append(span.name + " " + json.dumps(dict(span.attributes or {}), default=str))
        for event in span.events:
            texts.append(event.name + " " + json.dumps(dict(event.attributes or {}), default=str))
    return texts


def _leaks(where: str, texts: list[str], secrets: dict[str, str]) -> list[str]:
    return [
        f"{name} whole in {where}: {text[:200]!r}"
        for text in texts
        for name, secret in secrets.items()
        if secret in text
    ]


async def test_no_whole_handle_nor_key_leaks_from_a_run_with_a_drop_and_a_move(
    make_agent: AgentFactory,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    spans: InMemorySpanExporter,
) -> None:
    seal = Fernet.generate_key().decode()
    monkeypatch.setenv(HANDLE_KEY_ENV, seal)
    caplog.set_level(logging.DEBUG)
    reconnects: list[ReconnectInfo] = []
    runs: list[RunStats] = []
    removers = [adk_live_resume.on_reconnect(reconnects.append)]
    removers.append(adk_live_resume.on_run_end(runs.append))
    policy = ResumePolicy(store_handle_in_session=True, handle_store_interval=0)
    # the app did not ask for handles in its events (as most do not): none may show there
    run_config = RunConfig(response_modalities=[types.Modality.TEXT])
    try:
        async with asyncio.timeout(90), FakeLiveServer() as server, FaultProxy(server) as proxy:
            with proxy.environment(api_key=API_KEY):
                agent = make_agent(_FromEnvironment(), policy=policy)  # type: ignore[arg-type]
                tracer = trace.get_tracer("leak-scan")
                with tracer.start_as_current_span("conversation"):
                    live = await LiveDriver.start(agent, run_config=run_config)
                    async with live:
                        assert await live.say("one") == "echo: one"
                        await server.wait_for(lambda: bool(server.handles_issued()), 5, what="h")
                        proxy.abort()  # a drop
                        await server.wait_for_connections(2)
                        assert await live.say("two") == "echo: two"
                        proxy.go_away(5.0, connection=2)  # a move at the safe point
                        await server.wait_for_connections(3)
                        assert await live.say("three") == "echo: three"
                        handle_repr = repr(current_handle(live.queue))
                        assert await live.close() is None
                stored = await live.runner.session_service.get_session(
                    app_name=live.session.app_name,
                    user_id=live.session.user_id,
                    session_id=live.session.id,
                )
            handles = server.handles_issued()
            assert [c.resumed for c in server.connections[1:3]] == [True, True]
            assert proxy.connections[1].ended_by == "client"  # moved, not closed by the deadline
            fake_records = [repr(record) for record in server.connections]
            proxy_records = [repr(record) for record in proxy.connections]
    finally:
        for remove in removers:
            remove()
    assert len(handles) >= 3
    assert stored is not None
    assert any("adk_live_resume" in key for key in stored.state), "handles were stored"
    secrets = {f"handle {n}": handle for n, handle in enumerate(handles)}
    secrets |= {"API key": API_KEY, "sealing key": seal}

    logged = [
        record.getMessage() + (f"\n{record.exc_text}" if record.exc_text else "")
        for record in caplog.records
    ]
    assert any(record.levelno == logging.DEBUG for record in caplog.records)
    assert any("x-goog-api-key" in text.lower() for text in logged), "handshakes were logged"
    found = _leaks("a log record", logged, secrets)
    found += _leaks("a yielded event", [e.model_dump_json() for e in live.events], secrets)
    session_json = [stored.model_dump_json(by_alias=True), stored.model_dump_json()]
    found += _leaks("the session's JSON", session_json, secrets)
    span_texts = _span_text(spans)
    assert any("adk_live_resume.reconnect" in text for text in span_texts)
    found += _leaks("a span", span_texts, secrets)
    reprs = [handle_repr, repr(policy), *map(repr, reconnects), *map(repr, runs)]
    found += _leaks("a repr", [*reprs, *fake_records, *proxy_records], secrets)
    assert found == [], "\n".join(found)
