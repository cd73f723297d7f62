"""The recorded wire shapes the fake sends (testing.wire_shapes), read on the wire with the
real google-genai SDK, and the loop's rule that an empty resumption update says nothing."""

from __future__ import annotations

import asyncio
import re
import uuid
from typing import Any

import pytest
from google.genai import types
from hypothesis import given
from hypothesis import strategies as st

from adk_live_resume.resumption.handles import ResumptionState
from adk_live_resume.testing import WireShapes
from tests.fake.test_fake_server import WEATHER, chat, config, live_session, say, session, turn

pytestmark = pytest.mark.timeout(30)

GEMINI_3_1 = "gemini-3.1-flash-live-preview"
FC_ID = re.compile(r"^fc_\d+$")


# ---- pure ----------------------------------------------------------------------------------


def test_the_recorded_shapes_are_the_default_and_the_old_ones_a_switch_away() -> None:
    shapes = WireShapes()
    assert str(uuid.UUID(shapes.new_handle())) and FC_ID.match(shapes.new_call_id(1, set()))
    assert shapes.around_tool_call(True) == [{"serverContent": {}}]
    assert shapes.around_tool_call(False) == [], "2.5 recordings: nothing around a toolCall"
    assert shapes.handle_after_response(True, True)
    assert not shapes.handle_after_response(True, False) and not shapes.handle_after_response(
        False, True
    )
    old = WireShapes.before_recordings()
    assert re.match(r"^fc-7-[0-9a-f]{8}$", old.new_call_id(7, set()))
    assert len(old.new_handle()) == 32 and old.around_tool_call(True) == []
    assert old.empty_update_waits(1) is None and old.refuse_3_1_mid_session_content
    with pytest.raises(ValueError, match="empty_updates"):
        WireShapes(empty_updates=(0.0, 1.0))


@given(st.integers(1, 10**6), st.sets(st.text(min_size=1), max_size=5))
def test_call_ids_are_never_one_already_taken(number: int, taken: set[str]) -> None:
    for shapes in (WireShapes(), WireShapes(fc_call_ids=False)):
        assert shapes.new_call_id(number, taken) not in taken


def test_empty_update_waits_stay_within_the_recorded_half_to_one_second() -> None:
    shapes = WireShapes()
    waits = shapes.empty_update_waits(3)
    assert waits is not None
    assert all(0.5 <= shapes.next_empty_update(waits) <= 1.0 for _ in range(200))


def test_an_empty_resumption_update_changes_nothing_in_the_loop() -> None:
    state = ResumptionState()
    assert state.observe(new_handle="h-1", resumable=True, last_consumed_index=None, now=1.0)
    assert not state.observe(new_handle=None, resumable=None, last_consumed_index=None, now=2.0)
    assert state.handle == "h-1" and state.resumable_now and state.received_at == 1.0
    # an explicit "not resumable" still says so, and still keeps the handle
    assert not state.observe(new_handle=None, resumable=False, last_consumed_index=None, now=3.0)
    assert state.handle == "h-1" and not state.resumable_now


# ---- on the wire -----------------------------------------------------------------------------


async def test_handles_are_uuids_and_usage_can_be_left_out(fake_live_server_factory: Any) -> None:
    server = await fake_live_server_factory(chunk_delay=0.001)
    async with session(server) as live:
        await say(live, "one")
        messages = await turn(live)
    handle = server.handles_issued()[-1]
    assert str(uuid.UUID(handle)) == handle
    assert messages[-1].usage_metadata is not None
    bare = await fake_live_server_factory(
        chunk_delay=0.001, wire_shapes=WireShapes(usage_metadata=False)
    )
    async with session(bare) as live:
        await say(live, "one")
        messages = await turn(live)
    assert all(m.usage_metadata is None for m in messages)


@pytest.mark.parametrize("resume", [True, False])
async def test_empty_resumption_updates_come_every_half_to_one_second_even_unasked(
    fake_live_server_factory: Any, resume: bool
) -> None:
    server = await fake_live_server_factory(chunk_delay=0.001)
    async with session(server, config(resume=resume)) as live:
        assert await chat(live, "one") == "echo: one"
        await asyncio.sleep(2.2)
    record = (await server.wait_for_connections(1, finished=True))[0]
    empty = [m for m in record.server_messages if m == {"sessionResumptionUpdate": {}}]
    assert record.ended_at is not None and record.first_sent_at is not None
    lasted = record.ended_at - record.first_sent_at  # (a loaded machine makes it longer)
    assert 2 <= len(empty) <= lasted / 0.5 + 1, (lasted, record.server_keys())
    quiet = await fake_live_server_factory(
        chunk_delay=0.001, wire_shapes=WireShapes(empty_updates=None)
    )
    async with session(quiet, config(resume=resume)) as live:
        assert await chat(live, "one") == "echo: one"
        await asyncio.sleep(1.2)
    record = (await quiet.wait_for_connections(1, finished=True))[0]
    assert {"sessionResumptionUpdate": {}} not in record.server_messages


async def test_a_3_1_tool_round_as_recorded(fake_live_server_factory: Any) -> None:
    """Empty serverContent before and after the toolCall, an ``fc_`` id, and a handle right
    after the client's toolResponse, before the answer (pydantic-ai's 3.1 recording)."""
    server = await fake_live_server_factory(chunk_delay=0.001)
    async with live_session(server, GEMINI_3_1, tools=[WEATHER]) as live:
        await live.send_realtime_input(text="call get_weather {}")
        call = None
        async with asyncio.timeout(10):
            while call is None:
                async for message in live.receive():
                    if message.tool_call:
                        call = (message.tool_call.function_calls or [])[0]
                        break
        assert call.id is not None and FC_ID.match(call.id)
        await live.send_tool_response(
            function_responses=[types.FunctionResponse(id=call.id, name=call.name, response={})]
        )
        await turn(live)
    record = (await server.wait_for_connections(1, finished=True))[0]
    keys = [(k, bool(next(iter(m.values())))) for m in record.server_messages for k in m]
    keys = [k for k in keys if k != ("sessionResumptionUpdate", False)]  # empty updates
    at = keys.index(("toolCall", True))
    assert keys[at - 1] == ("serverContent", False) and keys[at + 1] == ("serverContent", False)
    after = [m for m in record.server_messages[record.server_keys().index("toolCall") :]]
    handle_at = next(
        i for i, m in enumerate(after) if m.get("sessionResumptionUpdate", {}).get("newHandle")
    )
    answer_at = next(i for i, m in enumerate(after) if "modelTurn" in m.get("serverContent", {}))
    assert handle_at < answer_at
    assert record.handle_issues[0].point == "after_tool_response"
