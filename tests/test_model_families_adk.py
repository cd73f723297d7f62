"""Each Live model family of the fake, end to end through real ``Runner.run_live``.

Real google-adk, real google-genai, real TLS websockets on 127.0.0.1, the fake server choosing
the family by the setup's model name (:mod:`adk_live_resume.testing.families`). Both entry
points (``install()`` and the subclasses) run every test.
"""

from __future__ import annotations

import pytest

from adk_live_resume.testing import FakeLiveServer, Fault
from adk_live_resume.testing.driver import LiveDriver

from .conftest import AgentFactory

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]

NATIVE_AUDIO = "gemini-2.5-flash-native-audio-preview-09-2025"
GEMINI_3_1 = "gemini-3.1-flash-live-preview"
GEMINI_3_8 = "gemini-3.8-live"


def get_weather(city: str) -> dict[str, str]:
    """The weather in ``city``."""
    return {"city": city, "sky": "clear"}


async def test_native_audio_tool_round_goes_on_in_the_same_turn(make_agent: AgentFactory) -> None:
    async with FakeLiveServer() as server:
        agent = make_agent(server, model=NATIVE_AUDIO, tools=[get_weather])
        async with await LiveDriver.start(agent) as live:
            answer = await live.say('call get_weather {"city": "Oslo"}', timeout=15)
            assert answer == 'get_weather returned {"city":"Oslo","sky":"clear"}'
            await live.close()
    first = server.connections[0]
    kinds = [next(iter(m)) for m in first.server_messages]
    call_at = kinds.index("toolCall")
    assert "turnComplete" not in str(first.server_messages[call_at + 1 : call_at + 2])
