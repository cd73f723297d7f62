"""The fake's model families on the wire (real google-genai over TLS), the pure family rules on
both sides (the fake's and the loop's), held pongs and faults armed on an open connection."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from google.genai import errors, types

from adk_live_resume.rules import model_families
from adk_live_resume.testing import Fault
from adk_live_resume.testing.families import (
    GEMINI_2_LIVE,
    GEMINI_3_1_LIVE,
    GEMINI_3_8_EXTENDED_THINKING,
    GEMINI_3_8_LIVE,
    GEMINI_3_8_SESSION_CAP,
    NATIVE_AUDIO_2_5,
    family_for,
)
from tests.fake.test_fake_server import WEATHER, config, live_session, text_of, turn
from tests.fake.test_fake_voice import tool_round_in_one_turn, until

pytestmark = pytest.mark.timeout(30)

NATIVE_AUDIO = "gemini-2.5-flash-native-audio-preview-09-2025"


# ---- pure rules ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "family"),
    [
        ("gemini-live-fake", GEMINI_2_LIVE),
        ("gemini-2.0-flash-live-001", GEMINI_2_LIVE),
        ("gemini-live-2.5-flash-preview", GEMINI_2_LIVE),
        (NATIVE_AUDIO, NATIVE_AUDIO_2_5),
        ("gemini-2.5-flash-native-audio-thinking-dialog", NATIVE_AUDIO_2_5),
        ("gemini-3.1-flash-live-preview", GEMINI_3_1_LIVE),
        ("gemini-3.0-live", GEMINI_3_1_LIVE),
        ("gemini-3.8-live", GEMINI_3_8_LIVE),
        ("gemini-3.12-live-preview", GEMINI_3_8_LIVE),
        ("gemini-3.8-live-extended-thinking", GEMINI_3_8_EXTENDED_THINKING),
        ("gemini-3.1-flash-live-extended-thinking", GEMINI_3_1_LIVE),
        ("gemini-3.5-live-translate", GEMINI_2_LIVE),  # ADK's exception to the 3.x rule
        ("gemini-3.8-pro", GEMINI_2_LIVE),  # not a Live model name: no 3.x Live dialect
    ],
)
def test_the_family_follows_the_model_name(model: str, family: Any) -> None:
    assert family_for(model) is family


def test_function_behaviour_per_family() -> None:
    for declared in (None, "", "BEHAVIOR_UNSPECIFIED", "blocking"):
        assert not GEMINI_2_LIVE.non_blocking(declared)
        assert GEMINI_3_8_LIVE.non_blocking(declared) == (declared != "blocking")
    assert GEMINI_2_LIVE.non_blocking("NON_BLOCKING") and NATIVE_AUDIO_2_5.non_blocking(
        "non_blocking"
    )
    assert not GEMINI_3_1_LIVE.non_blocking("NON_BLOCKING"), "3.1 calls synchronously only"
    for declared in (None, "BLOCKING", "NON_BLOCKING"):
        assert GEMINI_3_8_EXTENDED_THINKING.non_blocking(declared), "async only"
    assert GEMINI_3_8_LIVE.session_cap == GEMINI_3_8_SESSION_CAP == 3480.0
    # 3.1 takes mid-session content as recorded (the refusal is WireShapes' switch)
    assert GEMINI_3_1_LIVE.client_content_mid_session
    assert GEMINI_2_LIVE.turn_complete_after_tool_call
    assert not NATIVE_AUDIO_2_5.turn_complete_after_tool_call


@pytest.mark.parametrize(
    ("model", "dialect", "content", "ends_turn"),
    [
        ("gemini-live-fake", False, True, True),
        (f"models/{NATIVE_AUDIO}", False, True, False),
        ("gemini-3.1-flash-live-preview", True, False, False),
        ("projects/p/locations/l/publishers/google/models/gemini-3.8-live", True, True, False),
        ("gemini-3.10-live", True, True, False),
        ("gemini-3-live-strange", True, False, False),  # unreadable minor: the safe side
        # ADK 1.x (no 3.x dialect): content as 2.x, but the service still sends no
        # turnComplete after a toolCall on 3.x (what ADK 1.28-2.0 waits for)
        ("gemini-3.1-flash-live-preview", False, True, False),
        ("gemini-3.8-live", False, True, False),
        (None, False, True, True),
    ],
)
def test_the_loop_side_family_rules(
    model: str | None, dialect: bool, content: bool, ends_turn: bool
) -> None:
    assert model_families.takes_mid_session_content(model, gemini_3_dialect=dialect) is content
    assert model_families.ends_turn_after_tool_call(model, gemini_3_dialect=dialect) is ends_turn


# ---- on the wire -----------------------------------------------------------------------------


async def test_native_audio_sends_no_turn_complete_between_a_tool_call_and_its_answer(
    fake_live_server_factory: Any,
) -> None:
    server = await fake_live_server_factory(chunk_delay=0.001)
    async with live_session(server, NATIVE_AUDIO, tools=[WEATHER]) as live:
        await live.send_client_content(
            turns=types.Content(role="user", parts=[types.Part(text="call get_weather {}")]),
            turn_complete=True,
        )
        messages = await tool_round_in_one_turn(live)
    assert text_of(messages) == "get_weather returned {}"
    ends = [m for m in messages if m.server_content and m.server_content.turn_complete]
    assert len(ends) == 1 and ends[0].usage_metadata is not None
    flags = [bool(m.server_content and m.server_content.generation_complete) for m in messages]
    assert flags.index(True) < messages.index(ends[0]), "generationComplete, then turnComplete"


async def test_thought_summaries_open_a_thinking_models_answer(
    fake_live_server_factory: Any,
) -> None:
    server = await fake_live_server_factory(chunk_delay=0.001, thought_summaries=True)
    async with live_session(server, NATIVE_AUDIO) as live:
        await live.send_client_content(
            turns=types.Content(role="user", parts=[types.Part(text="hi")]), turn_complete=True
        )
        messages = await turn(live)
    parts = [
        p
        for m in messages
        if m.server_content and m.server_content.model_turn
        for p in m.server_content.model_turn.parts or []
    ]
    assert parts[0].thought and parts[0].text == "Planning the answer: echo: hi"
    assert not any(p.thought for p in parts[1:])
    async with live_session(server, "gemini-live-fake") as live:  # only thinking families
        await live.send_client_content(
            turns=types.Content(role="user", parts=[types.Part(text="hi")]), turn_complete=True
        )
        assert "Planning" not in str(await turn(live))


async def test_gemini_3_8_takes_client_content_all_session_and_cuts_the_answer(
    fake_live_server_factory: Any,
) -> None:
    server = await fake_live_server_factory(chunk_delay=0.05)
    async with live_session(server, "gemini-3.8-live") as live:
        await live.send_realtime_input(text="a long answer please")
        await until(live, lambda m: bool(m.server_content and m.server_content.model_turn))
        await live.send_client_content(
            turns=[
                types.Content(role="model", parts=[types.Part(text="noted")]),
                types.Content(role="user", parts=[types.Part(text="b")]),
            ],
            turn_complete=True,
        )
        seen = await turn(live)
    assert any(m.server_content and m.server_content.interrupted for m in seen)
    assert text_of(seen).endswith("echo: b")
    record = server.connections[0]
    assert record.rejected_client_content == [] and record.answers == ["echo: b"]


async def test_gemini_3_8_session_ends_at_the_cap_whatever_its_compression(
    fake_live_server_factory: Any,
) -> None:
    server = await fake_live_server_factory(
        time_scale=0.001, connection_lifetime=1e6, handle_ttl=1e6, chunk_delay=0.001
    )
    compression = types.ContextWindowCompressionConfig(sliding_window=types.SlidingWindow())
    async with live_session(
        server, "gemini-3.8-live", context_window_compression=compression
    ) as live:
        await live.send_realtime_input(text="one")
        handle = next(
            m.session_resumption_update.new_handle
            for m in await turn(live) + await until(live, lambda m: m.session_resumption_update)
            if m.session_resumption_update and m.session_resumption_update.new_handle
        )
        with pytest.raises(errors.APIError) as closed:
            await until(live, lambda m: False)
    assert closed.value.code == 1011 and "Deadline expired" in str(closed.value)
    cfg = config(resume=True)
    cfg.session_resumption = types.SessionResumptionConfig(handle=handle)
    cfg.context_window_compression = compression
    client = server.genai_client()
    with pytest.raises(errors.APIError) as refused:
        async with client.aio.live.connect(model="gemini-3.8-live", config=cfg) as live:
            await until(live, lambda m: False)
    assert refused.value.code == 1007
    capped, refusal = server.connections
    assert capped.ended_by == "session_limit" and refusal.ended_by == "refused"
    assert capped.ended_at is not None
    assert capped.ended_at - capped.accepted_at == pytest.approx(3.48, abs=1.0)


# ---- faults armed on an open connection, held pongs ------------------------------------------


async def test_faults_armed_on_an_open_connection(fake_live_server_factory: Any) -> None:
    server = await fake_live_server_factory(chunk_delay=0.001)
    async with live_session(server, "gemini-live-fake") as live:
        await live.send_realtime_input(text="hi")
        await turn(live)
        with pytest.raises(ValueError, match="would never fire"):
            server.script(Fault.close(1011, after_client_messages=1), connection=1)
        server.script(Fault.close(1011, "armed late", after_seconds=0.0), connection=1)
        with pytest.raises(errors.APIError) as closed:
            await until(live, lambda m: False)
    assert closed.value.code == 1011
    record = (await server.wait_for_connections(1, finished=True))[0]
    assert record.ended_by == "fault" and record.close_reason == "armed late"
    with pytest.raises(ValueError, match="has ended"):
        server.script(Fault.abort(after_setup=True), connection=1)
    async with live_session(server, "gemini-live-fake") as live:
        await live.send_realtime_input(text="hi")
        await turn(live)
        server.script(Fault.abort(after_setup=True), connection=2)  # fires at once
        with pytest.raises(errors.APIError) as dropped:
            await until(live, lambda m: False)
    assert dropped.value.code == 1006


@pytest.mark.parametrize("held_by", ["fault", "setting"])
async def test_held_pongs_let_the_clients_keepalive_close_the_socket(
    fake_live_server_factory: Any, held_by: str
) -> None:
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosedError

    if held_by == "fault":
        server = await fake_live_server_factory()
        server.script(Fault.hold_pongs(5.0), connection=2)
    else:  # every connection but the first (whose Fault.hold_pongs(0) answers at once)
        server = await fake_live_server_factory(pong_delay=5.0)
        server.script(Fault.hold_pongs(0.0), connection=1)
    ssl_context = server.client_ssl_context()
    async with connect(server.url + "/ws", ssl=ssl_context, ping_interval=None) as ws:
        await ws.send('{"setup": {"model": "models/gemini-live-fake"}}')
        await ws.recv()
        started = asyncio.get_running_loop().time()
        await asyncio.wait_for(await ws.ping(), 5)  # answered at once
        assert asyncio.get_running_loop().time() - started < 2
    async with connect(
        server.url + "/ws", ssl=ssl_context, ping_interval=0.1, ping_timeout=0.3
    ) as ws:
        await ws.send('{"setup": {"model": "models/gemini-live-fake"}}')
        await ws.recv()
        with pytest.raises(ConnectionClosedError) as closed:
            await asyncio.wait_for(ws.recv(), 5)
    assert closed.value.sent is not None and closed.value.sent.code == 1011
    assert closed.value.sent.reason == "keepalive ping timeout"
    record = (await server.wait_for_connections(2, finished=True))[1]
    assert record.ended_by == "client" and record.close_code == 1011


async def test_extended_thinking_speaks_works_then_answers_with_its_status(
    fake_live_server_factory: Any,
) -> None:
    server = await fake_live_server_factory(work_delay=0.2)
    async with live_session(server, "gemini-3.8-live-extended-thinking") as live:
        await live.send_realtime_input(text="hi")
        # (google-genai 2.x's receive() goes on past a turnComplete whose status is not IDLE;
        # 1.x's stops at every turnComplete)
        seen = await turn(live)
        while sum(bool(m.server_content and m.server_content.turn_complete) for m in seen) < 2:
            seen += await turn(live)
    ends_at = [i for i, m in enumerate(seen) if m.server_content and m.server_content.turn_complete]
    first, answer = seen[: ends_at[0] + 1], seen[ends_at[0] + 1 :]
    assert text_of(first) == "working on: hi" and text_of(answer) == "echo: hi"
    record = server.connections[0]
    ends = [m["serverContent"] for m in record.server_messages if "turnComplete" in str(m)]
    assert [e.get("interactionStatus") for e in ends] == ["IN_PROGRESS", "IDLE"]
    # the handle issued while it works restores the session without the request
    working, done = record.handle_issues
    assert (working.point, working.turns) == ("working", 0)
    assert (done.point, done.turns) == ("turn_complete", 2)
    assert record.answers == ["echo: hi"]


async def test_plain_gemini_3_8_reports_idle_with_every_turn_end(
    fake_live_server_factory: Any,
) -> None:
    server = await fake_live_server_factory()
    async with live_session(server, "gemini-3.8-live") as live:
        await live.send_realtime_input(text="hi")
        seen = await turn(live)
    assert text_of(seen) == "echo: hi"
    sent = server.connections[0].server_messages
    ends = [m["serverContent"] for m in sent if "turnComplete" in str(m)]
    assert [e.get("interactionStatus") for e in ends] == ["IDLE"]


async def test_a_model_may_end_its_tasks_with_requires_action_the_documented_idle(
    fake_live_server_factory: Any,
) -> None:
    server = await fake_live_server_factory(done_status="REQUIRES_ACTION")
    async with live_session(server, "gemini-3.8-live") as live:
        await live.send_realtime_input(text="hi")
        # (google-genai 2.x's receive() goes on past a turnComplete whose status is not IDLE)
        seen = await until(live, lambda m: m.server_content and m.server_content.turn_complete)
    assert text_of(seen) == "echo: hi"
    sent = server.connections[0].server_messages
    ends = [m["serverContent"] for m in sent if "turnComplete" in str(m)]
    assert [e.get("interactionStatus") for e in ends] == ["REQUIRES_ACTION"]
    assert server.connections[0].answers == ["echo: hi"]


def test_the_done_status_must_be_a_status_name() -> None:
    from adk_live_resume.testing import FakeLiveServer

    with pytest.raises(ValueError, match="done_status must be an interactionStatus name"):
        FakeLiveServer(done_status="idle now!")
