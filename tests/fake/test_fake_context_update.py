"""``contextUpdate`` on the fake server, against the bare google-genai SDK: system
instruction and tools mid-session (``tools=[]`` clears), kept in the session's handles."""

from __future__ import annotations

from typing import Any

import pytest
from google.genai import live as genai_live

from .test_fake_server import chat, config, next_handle, say, session, tool_call_turn
from .test_fake_server_non_blocking import SLOW

pytestmark = [
    pytest.mark.timeout(30),
    pytest.mark.skipif(
        not hasattr(genai_live.AsyncSession, "send_context_update"),
        reason="the installed google-genai has no send_context_update (2.32 and later)",
    ),
]


async def test_an_update_sets_the_tools_from_then_on_and_a_handle_after_it_keeps_them(
    fake_live_server_factory: Any,
) -> None:
    server = await fake_live_server_factory()
    async with session(server, config(tools=[SLOW])) as live:
        assert await chat(live, "hello") == "echo: hello"
        before = await next_handle(live)  # issued before the update
        await live.send_context_update(system_instruction="Be brief.", tools=[])
        assert await chat(live, "call fast {}") == "unknown tool fast", "tools=[] clears"
        after = await next_handle(live)
    async with session(server, config(tools=[SLOW], handle=after)) as live:
        assert await chat(live, "call fast {}") == "unknown tool fast", "kept in the handle"
    async with session(server, config(tools=[SLOW], handle=before)) as live:
        await say(live, "call fast {}")  # the handle predates the update: the setup's tools
        assert (await tool_call_turn(live)).name == "fast"
    first = server.connections[0]
    assert len(first.context_updates) == 1
    assert first.context_updates[0]["systemInstruction"]["parts"][0]["text"] == "Be brief."
