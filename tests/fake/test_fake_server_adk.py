"""Smoke tests: the REAL google-adk ``Runner.run_live`` against the fake server."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.agents.live_request_queue import LiveRequestQueue
from google.adk.agents.run_config import RunConfig
from google.adk.runners import InMemoryRunner
from google.genai import types

from adk_live_resume.testing import FakeLiveServer

from ..helpers import get_weather

pytestmark = [pytest.mark.timeout(30), pytest.mark.e2e]


async def run_turn(
    agent: LlmAgent, text: str, done: Callable[[str], bool], *, timeout: float = 15
) -> list[Any]:
    """Run one live conversation turn; return the events up to the final text ``done`` accepts."""
    runner = InMemoryRunner(agent=agent, app_name="fake_server_smoke")
    session = await runner.session_service.create_session(app_name="fake_server_smoke", user_id="u")
    queue = LiveRequestQueue()
    run_config = RunConfig(
        response_modalities=[types.Modality.TEXT],
        session_resumption=types.SessionResumptionConfig(),
    )
    queue.send_content(types.Content(role="user", parts=[types.Part(text=text)]))
    events: list[Any] = []
    agen = runner.run_live(
        user_id="u", session_id=session.id, live_request_queue=queue, run_config=run_config
    )
    try:
        async with asyncio.timeout(timeout):
            async for event in agen:
                events.append(event)
                parts = event.content.parts if event.content else None
                final_text = "".join(p.text or "" for p in parts or [])
                if not event.partial and final_text and done(final_text):
                    break
    finally:
        queue.close()
        await agen.aclose()
    return events


def texts(events: list[Any]) -> list[str]:
    return [
        "".join(p.text or "" for p in e.content.parts or [])
        for e in events
        if e.content and not e.partial and any(p.text for p in e.content.parts or [])
    ]


async def test_adk_run_live_gets_the_echo_through_server_gemini(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL", "SSL_CERT_FILE"):
        monkeypatch.delenv(name, raising=False)  # server.gemini() needs no environment
    async with FakeLiveServer(chunk_delay=0.001) as server:
        agent = LlmAgent(name="echo_agent", model=server.gemini(), instruction="Be brief.")
        events = await run_turn(agent, "hello adk", lambda t: t.startswith("echo:"))
        assert "echo: hello adk" in texts(events)
        record = (await server.wait_for_connections(1, finished=True))[0]
    assert ".v1alpha." in record.path, "ADK's live API version is kept"
    assert record.resumption_enabled and record.user_turns == ["hello adk"]
    assert server.user_turns_answered() == ["hello adk"]
    assert record.errors == []


async def test_adk_tool_call_round_trip(fake_live_server_factory: Any) -> None:
    server: FakeLiveServer = await fake_live_server_factory(chunk_delay=0.001)
    agent = LlmAgent(name="tools_agent", model=server.gemini(), tools=[get_weather])
    events = await run_turn(agent, 'call get_weather {"city": "Paris"}', lambda t: "returned" in t)
    assert 'get_weather returned {"city":"Paris","sky":"clear"}' in texts(events)
    record = (await server.wait_for_connections(1, finished=True))[0]
    assert [c.name for c in record.tool_calls] == ["get_weather"]
    assert record.unknown_tool_response_ids == [] and record.stale_tool_response_ids == []
    assert [pr.get("id") for pr in record.tool_responses] == [record.tool_calls[0].id]


async def test_adk_with_a_model_name_inside_the_fixture_environment(
    fake_live_server: FakeLiveServer,
) -> None:
    agent = LlmAgent(name="env_agent", model="gemini-live-fake")
    events = await run_turn(agent, "via environment", lambda t: t.startswith("echo:"))
    assert "echo: via environment" in texts(events)


async def test_two_servers_never_share_a_client(fake_live_server_factory: Any) -> None:
    one: FakeLiveServer = await fake_live_server_factory(chunk_delay=0.001)
    two: FakeLiveServer = await fake_live_server_factory(chunk_delay=0.001)
    model_one, model_two = one.gemini(), two.gemini()
    assert model_one._live_api_client is not model_two._live_api_client
    await run_turn(LlmAgent(name="a", model=model_one), "to one", lambda t: "echo" in t)
    await run_turn(LlmAgent(name="b", model=model_two), "to two", lambda t: "echo" in t)
    assert one.user_turns_answered() == ["to one"]
    assert two.user_turns_answered() == ["to two"]
