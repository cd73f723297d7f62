"""The bug, reproduced: stock google-adk (no patch) against the fake server.

These tests document what unpatched ADK does, so they pass *because* ADK fails. Each family
is selected by what the installed release provides, not by its version string:

* 1.27 - 1.28 (no ``LlmResponse.go_away``): never reconnects, ignores goAway.
* 2.9+ (live loop in module functions): reconnects, but erases the handle on
  ``resumable=false``, reconnects without bound, and loses the message in flight.
"""

from __future__ import annotations

import asyncio

import pytest
from google.adk.agents import LlmAgent
from google.adk.models.llm_response import LlmResponse
from google.genai import errors as genai_errors

from adk_live_resume import adk_compat, is_installed
from adk_live_resume.testing import FakeLiveServer, Fault
from adk_live_resume.testing.driver import LiveDriver

pytestmark = [pytest.mark.stock, pytest.mark.e2e, pytest.mark.timeout(60)]

never_reconnects = pytest.mark.skipif(
    "go_away" in LlmResponse.model_fields,
    reason="this google-adk surfaces goAway and has reconnect code (not the 1.27 family)",
)
module_function_loop = pytest.mark.skipif(
    adk_compat.surface().shape != "module functions",
    reason="this google-adk has no module-function live loop (not the 2.9+ family)",
)


def _agent(server: FakeLiveServer) -> LlmAgent:
    assert not is_installed()
    return LlmAgent(name="assistant", model=server.gemini(), instruction="Be brief.")


@never_reconnects
@pytest.mark.parametrize("code", [1000, 1006, 1011])
async def test_1_27_drop_after_a_handle_raises_api_error(code: int) -> None:
    async with FakeLiveServer() as server:
        async with await LiveDriver.start(_agent(server)) as live:
            assert await live.say("one") == "echo: one"
            assert server.connections[0].handles_issued, "the handle was there to use"
            if code == 1006:
                await server.restart()
            else:
                await server.close_open(code)
            error = await live.wait_ended(timeout=10)
        assert isinstance(error, genai_errors.APIError), error
        assert error.code == code
        assert len(server.connections) == 1, "stock 1.27 never reconnects"


@never_reconnects
async def test_1_27_ignores_go_away_and_dies_at_the_deadline() -> None:
    server = FakeLiveServer(time_scale=0.01, connection_lifetime=100, go_away_lead=60)
    async with server:
        async with await LiveDriver.start(_agent(server)) as live:
            assert await live.say("one") == "echo: one"
            error = await live.wait_ended(timeout=10)
        first = server.connections[0]
        assert first.go_away_sent and first.ended_by == "deadline"
        assert isinstance(error, genai_errors.APIError) and error.code == 1011
        assert len(server.connections) == 1


@module_function_loop
async def test_newest_resumable_false_erases_the_handle_so_the_next_drop_raises() -> None:
    async with FakeLiveServer(chunk_delay=0.2) as server:
        async with await LiveDriver.start(_agent(server)) as live:
            assert await live.say("one") == "echo: one"
            live.send_text("two")  # generation starts: {resumable: false} without a handle
            record = server.connections[0]
            await server.wait_for(
                lambda: any(
                    m.get("sessionResumptionUpdate", {}).get("resumable") is False
                    for m in record.server_messages[-3:]
                ),
                5,
            )
            await server.close_open(1011)
            error = await live.wait_ended(timeout=10)
        assert isinstance(error, genai_errors.APIError) and error.code == 1011
        assert len(server.connections) == 1, "the good handle was erased, so no resume"


@module_function_loop
async def test_newest_flapping_server_reconnects_without_bound() -> None:
    async with FakeLiveServer() as server, await LiveDriver.start(_agent(server)) as live:
        assert await live.say("one") == "echo: one"
        server.flap(1011)
        await server.close_open(1011)
        # ADK's attempt counter resets after every successful connect: it never gives up.
        await server.wait_for(lambda: len(server.connections) > 30, 10)
        assert not live.ended
        server.flap(None)
        await asyncio.sleep(0.1)


@module_function_loop
async def test_newest_loses_the_message_in_flight_when_the_socket_dies() -> None:
    async with FakeLiveServer() as server:
        server.script(Fault.close(1011, after_client_messages=2), connection=1)
        async with await LiveDriver.start(_agent(server)) as live:
            assert await live.say("one") == "echo: one"
            live.send_text("two")  # reaches the socket as it dies
            await server.wait_for_connections(2)
            assert await live.say("three") == "echo: three"
            assert await live.say("recall") == "you said: one | three"
            await live.close()
        assert "two" not in server.user_turns_answered()
