"""The fake's extended-thinking model while a call it issued is open (real google-genai over
TLS): its task is not done, so its ``turnComplete`` says ``IN_PROGRESS`` (``REQUIRES_ACTION``
behind the server's switch) until the result is told, with ``IDLE``."""

from __future__ import annotations

from typing import Any

import pytest
from google.genai import types

from tests.fake.test_fake_server import WEATHER, live_session, text_of
from tests.fake.test_fake_voice import until

pytestmark = pytest.mark.timeout(30)

MODEL = "gemini-3.8-live-extended-thinking"


def _turn_complete(message: types.LiveServerMessage) -> bool:
    return bool(message.server_content and message.server_content.turn_complete)


@pytest.mark.parametrize(
    ("requires_action", "while_open"), [(False, "IN_PROGRESS"), (True, "REQUIRES_ACTION")]
)
async def test_the_task_goes_on_while_a_call_is_open_and_is_done_once_its_result_is_told(
    fake_live_server_factory: Any, requires_action: bool, while_open: str
) -> None:
    server = await fake_live_server_factory(requires_action=requires_action)
    async with live_session(server, MODEL, tools=[WEATHER]) as live:
        await live.send_realtime_input(text='call get_weather {"city": "Oslo"}')
        started = await until(live, _turn_complete)
        call = next(m.tool_call for m in started if m.tool_call).function_calls[0]
        assert text_of(started) == "get_weather started"
        await live.send_tool_response(
            function_responses=[
                types.FunctionResponse(id=call.id, name=call.name, response={"sky": "clear"})
            ]
        )
        told = await until(live, _turn_complete)
    assert text_of(told) == 'get_weather returned {"sky":"clear"}'
    record = server.connections[0]
    ends = [m["serverContent"] for m in record.server_messages if "turnComplete" in str(m)]
    assert [e.get("interactionStatus") for e in ends] == [while_open, "IDLE"]
    assert [call.non_blocking for call in record.tool_calls] == [True]
