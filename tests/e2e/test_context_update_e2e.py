"""``contextUpdate`` across connections, end to end: real ``Runner.run_live``, real
google-genai (2.32+ ``AsyncSession.send_context_update``), real TLS websockets, the fake
server. Both entry points.

* an update the handle may not cover is sent again to the resumed session;
* a fresh session (the handle refused) gets the updated system instruction and tools in its
  setup;
* a send method the tap does not know is passed through, and the resume that cannot
  account for it logs one WARNING naming it.

The update clears the agent's tools (``tools=[]``): the fake then answers a call for one
with ``unknown tool``, so a lost update shows as the tool running.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from google.genai import live as genai_live

from adk_live_resume.compat import adk_compat
from adk_live_resume.testing import FakeLiveServer, Fault
from adk_live_resume.testing.driver import LiveDriver
from adk_live_resume.testing.handles import HandleSchedule
from adk_live_resume.testing.protocol import pick, pick_dict

from ..conftest import AgentFactory
from ..helpers import get_weather

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.timeout(60),
    pytest.mark.skipif(
        not hasattr(genai_live.AsyncSession, "send_context_update"),
        reason="the installed google-genai has no send_context_update (2.32 and later)",
    ),
]

INSTRUCTION = "Answer in one word."


@pytest.fixture
def connections(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """ADK's live connections as they are made (to reach the session under one)."""
    from google.adk.models import gemini_llm_connection

    made: list[Any] = []
    original = gemini_llm_connection.GeminiLlmConnection.__init__

    def recording(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(gemini_llm_connection.GeminiLlmConnection, "__init__", recording)
    yield made


def session_of(connections: list[Any]) -> Any:
    """The session ADK's newest connection sends through (the tap, where installed)."""
    return adk_compat.genai_session(connections[-1])


def instruction_of(setup: dict[str, Any] | None) -> str:
    parts = (pick_dict(setup, "systemInstruction") or {}).get("parts") or []
    return "".join(str(pick(part, "text") or "") for part in parts)


async def clear_tools(live: LiveDriver, server: FakeLiveServer, connections: list[Any]) -> None:
    """Say hello (a handle follows), then send the update: no handle covers it yet."""
    assert await live.say("hello") == "echo: hello"
    await server.wait_for(lambda: server.handles_issued(), 5, what="a handle")
    handles = len(server.handles_issued())
    await session_of(connections).send_context_update(system_instruction=INSTRUCTION, tools=[])
    first = server.connections[0]
    await server.wait_for(lambda: first.context_updates, 5, what="the update")
    assert len(server.handles_issued()) == handles, "no handle covers the update"


async def test_an_update_the_handle_may_not_cover_goes_to_the_resumed_session(
    make_agent: AgentFactory, connections: list[Any]
) -> None:
    server = FakeLiveServer(handle_schedule=HandleSchedule(on_turn_complete=True))
    async with asyncio.timeout(40), server:
        agent = make_agent(server, tools=[get_weather])
        async with await LiveDriver.start(agent) as live:
            await clear_tools(live, server, connections)
            await server.close_open(1011)
            await server.wait_for_connections(2)
            answer = await live.say('call get_weather {"city": "Oslo"}')
            assert answer == "unknown tool get_weather", "the update reached the new session"
            await live.close()
        first, second = server.connections
        assert second.resumed
        assert [json.dumps(u, sort_keys=True) for u in second.context_updates] == [
            json.dumps(u, sort_keys=True) for u in first.context_updates
        ], "sent again, once"
        assert not second.tool_calls


async def test_a_fresh_session_gets_the_updated_context_in_its_setup(
    make_agent: AgentFactory, connections: list[Any]
) -> None:
    server = FakeLiveServer(handle_schedule=HandleSchedule(on_turn_complete=True))
    async with asyncio.timeout(40), server:
        server.script(Fault.refuse_resume(), connection=2)
        agent = make_agent(server, tools=[get_weather])
        async with await LiveDriver.start(agent) as live:
            await clear_tools(live, server, connections)
            await server.close_open(1011)
            await server.wait_for_connections(3)
            answer = await live.say('call get_weather {"city": "Oslo"}')
            assert answer == "unknown tool get_weather", "the fresh setup has no tools"
            await live.close()
        first, fresh = server.connections[0], server.connections[2]
        assert fresh.resume_handle is None, "a fresh session"
        assert INSTRUCTION not in instruction_of(first.setup)
        assert instruction_of(fresh.setup) == INSTRUCTION
        assert not (pick(fresh.setup, "tools") or []), "tools=[]: none in the setup"


async def test_a_send_the_tap_does_not_know_is_passed_through_and_warned_about_once(
    make_agent: AgentFactory,
    connections: list[Any],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def send_future_thing(self: Any, *, detail: int) -> None:
        """A send method of a later google-genai (this test's stand-in)."""
        await self._ws.send(json.dumps({"futureThing": {"detail": detail}}))

    monkeypatch.setattr(
        genai_live.AsyncSession, "send_future_thing", send_future_thing, raising=False
    )
    server = FakeLiveServer(handle_schedule=HandleSchedule(on_turn_complete=True))
    async with asyncio.timeout(40), server:
        agent = make_agent(server)
        async with await LiveDriver.start(agent) as live:
            assert await live.say("hello") == "echo: hello"
            await server.wait_for(lambda: server.handles_issued(), 5, what="a handle")
            await session_of(connections).send_future_thing(detail=1)
            first = server.connections[0]
            await server.wait_for(
                lambda: any("futureThing" in m for m in first.client_messages), 5, what="it"
            )
            with caplog.at_level(logging.WARNING, logger="adk_live_resume"):
                await server.close_open(1011)
                await server.wait_for_connections(2)
                assert await live.say("again") == "echo: again"
            await live.close()
    warned = [r.getMessage() for r in caplog.records if "send_future_thing" in r.getMessage()]
    assert len(warned) == 1, warned
    assert "resumed" in warned[0]
