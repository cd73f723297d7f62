"""The bug, reproduced: stock google-adk (no patch) against the fake server.

These tests document what unpatched ADK does, so they pass *because* ADK fails. Each family
is selected by what the installed release provides, not by its version string:

* 1.27 - 1.28 (no ``LlmResponse.go_away``): never reconnects, ignores goAway.
* 1.29 - 1.33, 2.0 - 2.1 (``go_away`` surfaced; the stock loop sets ``transparent`` on every
  backend): the reconnect after a drop asks the Gemini API for ``transparent``, which
  ``Gemini.connect`` rejects with ``ValueError``.
* 1.34 - 1.39, 2.2 - 2.8 (reconnect code that works, no ``LiveRequestQueue.closed``):
  closing the queue with a handle in hand reconnects, and ``run_live`` never ends.
* 2.9+ (live loop in module functions): reconnects, but erases the handle on
  ``resumable=false``, reconnects without bound, and loses the message in flight.
* every release, with google-genai 1.75 or later: a server message of a kind the SDK does not
  know ends the run with ``TypeError``.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect

import pytest
from google.adk.agents import LlmAgent
from google.adk.flows.llm_flows.base_llm_flow import BaseLlmFlow
from google.adk.models.llm_response import LlmResponse
from google.genai import errors as genai_errors

from adk_live_resume import is_installed
from adk_live_resume.compat import adk_compat, genai_compat
from adk_live_resume.testing import FakeLiveServer, Fault
from adk_live_resume.testing.driver import LiveDriver

pytestmark = [pytest.mark.core, pytest.mark.stock, pytest.mark.e2e, pytest.mark.timeout(60)]

never_reconnects = pytest.mark.skipif(
    "go_away" in LlmResponse.model_fields,
    reason="this google-adk surfaces goAway and has reconnect code (not the 1.27 family)",
)


def _stock_loop_sets_transparent_on_every_backend() -> bool:
    """Whether the stock reconnect code asks for ``transparent`` without a Vertex AI check."""
    module = importlib.import_module(adk_compat.surface().live_module)
    source = inspect.getsource(getattr(module, "run_live_flow", None) or BaseLlmFlow.run_live)
    return "transparent = True" in source and "VERTEX_AI" not in source


surface = adk_compat.surface()
transparent_family = pytest.mark.skipif(
    not (surface.has_go_away_field and _stock_loop_sets_transparent_on_every_backend()),
    reason="this google-adk does not reconnect with transparent on the Gemini API "
    "(not the 1.29 - 1.33 / 2.0 - 2.1 family)",
)
reconnects_after_queue_close = pytest.mark.skipif(
    not surface.has_go_away_field
    or surface.queue_has_closed
    or _stock_loop_sets_transparent_on_every_backend(),
    reason="this google-adk either cannot reconnect or checks LiveRequestQueue.closed "
    "(not the 1.34 - 1.39 / 2.2 - 2.8 family)",
)
module_function_loop = pytest.mark.skipif(
    adk_compat.surface().shape != "module functions",
    reason="this google-adk has no module-function live loop (not the 2.9+ family)",
)


def _stock_agent(server: FakeLiveServer) -> LlmAgent:
    assert not is_installed()
    return LlmAgent(name="assistant", model=server.gemini(), instruction="Be brief.")


@never_reconnects
@pytest.mark.parametrize("code", [1000, 1006, 1011])
async def test_1_27_drop_after_a_handle_raises_api_error(code: int) -> None:
    async with FakeLiveServer() as server:
        async with await LiveDriver.start(_stock_agent(server)) as live:
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
        async with await LiveDriver.start(_stock_agent(server)) as live:
            assert await live.say("one") == "echo: one"
            error = await live.wait_ended(timeout=10)
        first = server.connections[0]
        assert first.go_away_sent and first.ended_by == "deadline"
        # (the fake's deadline close is the recorded 1008, see GO_AWAY_DEADLINE_REASON)
        assert isinstance(error, genai_errors.APIError) and error.code == 1008
        assert len(server.connections) == 1


@transparent_family
async def test_1_30_reconnect_asks_the_gemini_api_for_transparent_and_fails() -> None:
    async with FakeLiveServer() as server:
        async with await LiveDriver.start(_stock_agent(server)) as live:
            assert await live.say("one") == "echo: one"
            assert server.connections[0].handles_issued, "the handle was there to use"
            await server.restart()  # 1006: ADK tries to resume...
            error = await live.wait_ended(timeout=10)
        # ...with transparent=True, which ADK's own Gemini.connect refuses for the Gemini API.
        assert isinstance(error, ValueError), error
        assert "transparent" in str(error).lower()
        assert len(server.connections) == 1, "the resume never reached the server"


@reconnects_after_queue_close
async def test_1_36_closing_the_queue_with_a_handle_reconnects_and_never_ends() -> None:
    async with FakeLiveServer() as server:
        async with await LiveDriver.start(_stock_agent(server)) as live:
            assert await live.say("one") == "echo: one"
            assert server.connections[0].handles_issued
            live.queue.close()  # ADK closes the socket (1000) and, holding a handle, resumes
            await server.wait_for_connections(2)
            await asyncio.sleep(1.0)
            assert not live.ended, "run_live should have ended after LiveRequestQueue.close()"
        assert server.connections[1].resumed


@module_function_loop
async def test_newest_resumable_false_erases_the_handle_so_the_next_drop_raises() -> None:
    async with FakeLiveServer(chunk_delay=0.2) as server:
        async with await LiveDriver.start(_stock_agent(server)) as live:
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
    async with FakeLiveServer() as server, await LiveDriver.start(_stock_agent(server)) as live:
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
        async with await LiveDriver.start(_stock_agent(server)) as live:
            assert await live.say("one") == "echo: one"
            live.send_text("two")  # reaches the socket as it dies
            await server.wait_for_connections(2)
            assert await live.say("three") == "echo: three"
            assert await live.say("recall") == "you said: one | three"
            await live.close()
        assert "two" not in server.user_turns_answered()


@pytest.mark.skipif(
    adk_compat.parse_version(genai_compat.genai_version()) < (1, 75, 0),
    reason="google-genai before 1.75 passes a message of an unknown kind on as an empty one",
)
async def test_every_release_dies_on_a_server_message_of_a_kind_genai_does_not_know() -> None:
    """google-genai 1.75+ raise ``TypeError`` in ``AsyncSession._receive`` on it; stock ADK
    lets it end ``run_live`` (the patch skips it: tests/e2e/test_unknown_messages_e2e.py)."""
    async with asyncio.timeout(30), FakeLiveServer() as server:
        async with await LiveDriver.start(_stock_agent(server)) as live:
            assert await live.say("one") == "echo: one"
            assert await server.send_message_now({"someFutureMessage": {"detail": 1}}) == [1]
            error = await live.wait_ended(timeout=10)
        assert isinstance(error, TypeError), error
