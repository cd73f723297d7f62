"""The fake Gemini Live server against the bare google-genai SDK, over real TLS websockets."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import AsyncIterator
from typing import Any

import pytest
import websockets
from google import genai
from google.genai import errors, types
from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect

from adk_live_resume.testing import (
    GO_AWAY_DEADLINE_REASON,
    FakeLiveServer,
    Fault,
    decode_speech,
    silence_pcm,
    speech_pcm,
    tone_pcm,
)

pytestmark = pytest.mark.timeout(30)

MODEL = "gemini-live-fake"
PATH = "/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent"
WEATHER = types.Tool(
    function_declarations=[types.FunctionDeclaration(name="get_weather", description="weather")]
)


def config(
    *,
    modality: str = "TEXT",
    resume: bool = True,
    handle: str | None = None,
    tools: list[types.Tool] | None = None,
    input_transcription: bool = False,
    output_transcription: bool = False,
) -> types.LiveConnectConfig:
    """A bare SDK config; transcriptions come only when asked for, as from the service."""
    return types.LiveConnectConfig(
        response_modalities=[types.Modality(modality)],
        session_resumption=types.SessionResumptionConfig(handle=handle) if resume else None,
        tools=tools,
        input_audio_transcription=types.AudioTranscriptionConfig() if input_transcription else None,
        output_audio_transcription=(
            types.AudioTranscriptionConfig() if output_transcription else None
        ),
    )


@contextlib.asynccontextmanager
async def live_session(
    server: FakeLiveServer, model: str, *, tools: list[types.Tool] | None = None, **extra: Any
) -> AsyncIterator[Any]:
    """A bare SDK live session on ``model`` with handles on; ``extra`` sets config fields."""
    cfg = config(resume=True, tools=tools)
    for key, value in extra.items():
        setattr(cfg, key, value)
    async with server.genai_client().aio.live.connect(model=model, config=cfg) as live:
        yield live


@contextlib.asynccontextmanager
async def session(
    server: FakeLiveServer, cfg: types.LiveConnectConfig | None = None
) -> AsyncIterator[Any]:
    client = server.genai_client()
    async with client.aio.live.connect(model=MODEL, config=cfg or config()) as live:
        yield live


async def say(live: Any, text: str) -> None:
    await live.send_client_content(
        turns=types.Content(role="user", parts=[types.Part(text=text)]), turn_complete=True
    )


async def turn(live: Any) -> list[types.LiveServerMessage]:
    """Messages up to and including the next turnComplete."""
    messages: list[types.LiveServerMessage] = []
    async with asyncio.timeout(10):
        while not (
            messages and messages[-1].server_content and messages[-1].server_content.turn_complete
        ):
            async for message in live.receive():
                messages.append(message)
    return messages


def text_of(messages: list[types.LiveServerMessage]) -> str:
    return "".join(
        m.text or "" for m in messages if m.server_content and m.server_content.model_turn
    )


async def next_handle(live: Any) -> str:
    """Read on until a sessionResumptionUpdate carries a handle."""
    async with asyncio.timeout(10):
        while True:
            async for message in live.receive():
                update = message.session_resumption_update
                if update and update.new_handle:
                    return update.new_handle


async def tool_call_turn(live: Any) -> types.FunctionCall:
    """Read the model turn that carries a function call (it ends with turnComplete)."""
    calls: list[types.FunctionCall] = []
    for message in await turn(live):
        if message.tool_call:
            calls.extend(message.tool_call.function_calls or [])
    assert len(calls) == 1, calls
    return calls[0]


async def chat(live: Any, text: str) -> str:
    await say(live, text)
    return text_of(await turn(live))


@contextlib.asynccontextmanager
async def raw(server: FakeLiveServer, setup: dict[str, Any]) -> AsyncIterator[ClientConnection]:
    async with ws_connect(server.url + PATH, ssl=server.client_ssl_context()) as ws:
        await ws.send(json.dumps({"setup": setup}))
        yield ws


async def raw_recv(ws: ClientConnection) -> dict[str, Any]:
    async with asyncio.timeout(10):
        message: dict[str, Any] = json.loads(await ws.recv())
    return message


async def raw_until(ws: ClientConnection, key: str) -> list[dict[str, Any]]:
    seen = [await raw_recv(ws)]
    while key not in seen[-1] and key not in seen[-1].get("serverContent", {}):
        seen.append(await raw_recv(ws))
    return seen


# ---- setup and the scripted model ---------------------------------------------------------


@pytest.mark.parametrize(
    "setup",
    [
        {
            "model": "models/x",
            "generationConfig": {"responseModalities": ["AUDIO"]},
            "sessionResumption": {},
            "outputAudioTranscription": {},
        },
        {
            "model": "models/x",
            "generation_config": {"response_modalities": ["AUDIO"]},
            "session_resumption": {},
            "output_audio_transcription": {},
        },
    ],
    ids=["camelCase", "snake_case"],
)
async def test_setup_is_answered_in_either_casing(
    fake_live_server_factory: Any, setup: dict[str, Any]
) -> None:
    server = await fake_live_server_factory(chunk_delay=0.001)
    async with raw(server, setup) as ws:
        assert await raw_recv(ws) == {"setupComplete": {}}
        await ws.send(
            json.dumps(
                {
                    "clientContent": {
                        "turns": [{"role": "user", "parts": [{"text": "hi"}]}],
                        "turnComplete": True,
                    }
                }
            )
        )
        messages = await raw_until(ws, "turnComplete")
    keys = {key for message in messages for key in message}
    assert keys <= {"serverContent", "sessionResumptionUpdate", "usageMetadata"}
    contents = [m["serverContent"] for m in messages if "serverContent" in m]
    assert any("inlineData" in str(c.get("modelTurn")) for c in contents), "AUDIO honoured"
    assert any("outputTranscription" in c for c in contents), "transcription asked for"
    record = (await server.wait_for_connections(1))[0]
    assert record.resumption_enabled and record.user_turns == ["hi"]


async def test_text_echo_streams_in_chunks_then_completes(fake_live_server_factory: Any) -> None:
    server = await fake_live_server_factory()
    async with session(server, config(resume=False)) as live:
        await say(live, "hello there")
        messages = await turn(live)
    chunks = [m.text for m in messages if m.server_content and m.server_content.model_turn]
    assert len(chunks) >= 3 and "".join(c or "" for c in chunks) == "echo: hello there"
    contents = [m.server_content for m in messages if m.server_content]
    assert contents[-2].generation_complete and contents[-1].turn_complete
    assert messages[-1].usage_metadata and messages[-1].usage_metadata.total_token_count
    assert not any(m.session_resumption_update for m in messages), "no resumption asked"
    record = (await server.wait_for_connections(1, finished=True))[0]
    assert record.path == PATH and record.ended_by == "client"
    assert record.answers == ["echo: hello there"]
    assert server.user_turns_answered() == ["hello there"]
    assert record.client_messages == [
        {"client_content": record.client_messages[0]["client_content"]}
    ]


async def test_memory_questions_and_tools(fake_live_server_factory: Any) -> None:
    server = await fake_live_server_factory(chunk_delay=0.001)
    async with session(server, config(tools=[WEATHER])) as live:
        assert await chat(live, "what did I say first?") == "you said nothing yet"
        assert await chat(live, "alpha") == "echo: alpha"
        assert await chat(live, "beta") == "echo: beta"
        assert await chat(live, "What did I say first?") == "you first said: what did I say first?"
        assert await chat(live, "how many turns?") == "4"
        assert await chat(live, "recall") == (
            "you said: what did I say first? | alpha | beta | What did I say first? | "
            "how many turns?"
        )
        assert await chat(live, "call get_time {}") == "unknown tool get_time"
        assert await chat(live, "call get_weather [1]") == "invalid arguments for get_weather"

        await say(live, 'call get_weather {"city": "Paris"}')
        calls = [await tool_call_turn(live)]
        assert [(c.name, c.args) for c in calls] == [("get_weather", {"city": "Paris"})]
        await live.send_tool_response(
            function_responses=[
                types.FunctionResponse(id=calls[0].id, name="get_weather", response={"temp": 21})
            ]
        )
        assert text_of(await turn(live)) == 'get_weather returned {"temp":21}'

        await live.send_tool_response(
            function_responses=[types.FunctionResponse(id="never-issued", name="x", response={})]
        )
        await live.send_tool_response(
            function_responses=[
                types.FunctionResponse(id=calls[0].id, name="get_weather", response={})
            ]
        )
        assert await chat(live, "after") == "echo: after"
    record = (await server.wait_for_connections(1, finished=True))[0]
    assert record.unknown_tool_response_ids == ["never-issued"]
    assert record.stale_tool_response_ids == [calls[0].id]
    assert [c.id for c in server.tool_calls_issued()] == [calls[0].id]
    assert len(server.tool_responses_received()) == 3
    assert record.errors == []


@pytest.mark.parametrize(("asked_in", "asked_out"), [(False, False), (True, False), (False, True)])
async def test_transcriptions_come_only_when_the_setup_asks_for_them(
    fake_live_server_factory: Any, asked_in: bool, asked_out: bool
) -> None:
    server = await fake_live_server_factory(chunk_delay=0.001)
    pcm = speech_pcm("hello audio", seconds=0.3) + silence_pcm(0.6)
    cfg = config(
        modality="AUDIO",
        resume=False,
        input_transcription=asked_in,
        output_transcription=asked_out,
    )
    async with asyncio.timeout(20), session(server, cfg) as live:
        await live.send_realtime_input(audio=types.Blob(data=pcm, mime_type="audio/pcm;rate=16000"))
        messages = await turn(live)
    contents = [m.server_content for m in messages if m.server_content]
    assert any(c.model_turn for c in contents), "the answer came, in audio"
    assert any(c.input_transcription for c in contents) == asked_in
    assert any(c.output_transcription for c in contents) == asked_out


async def test_audio_in_and_out_with_transcriptions(fake_live_server_factory: Any) -> None:
    server = await fake_live_server_factory(chunk_delay=0.001)
    pcm = speech_pcm("hello audio", seconds=0.3) + silence_pcm(0.6)  # the VAD ends it at 500 ms
    cfg = config(
        modality="AUDIO", resume=False, input_transcription=True, output_transcription=True
    )
    async with session(server, cfg) as live:
        for start in range(0, len(pcm), 777):  # odd sizes: chunks never align with samples
            await live.send_realtime_input(
                audio=types.Blob(data=pcm[start : start + 777], mime_type="audio/pcm;rate=16000")
            )
        messages = await turn(live)
        await live.send_realtime_input(
            audio=types.Blob(data=tone_pcm(0.25), mime_type="audio/pcm;rate=16000")
        )
        await live.send_realtime_input(audio_stream_end=True)
        tone_turn = await turn(live)
    heard = [
        m.server_content.input_transcription.text
        for m in messages
        if m.server_content and m.server_content.input_transcription
    ]
    assert "".join(heard) == "hello audio" and len(heard) > 1  # pieces while the user speaks
    audio = b"".join(
        part.inline_data.data
        for m in messages
        if m.server_content and m.server_content.model_turn
        for part in m.server_content.model_turn.parts or []
        if part.inline_data and part.inline_data.data
    )
    assert "".join(decode_speech(audio)) == "echo: hello audio"
    said = "".join(
        m.server_content.output_transcription.text or ""
        for m in messages
        if m.server_content and m.server_content.output_transcription
    )
    assert said == "echo: hello audio"
    mime = {
        part.inline_data.mime_type
        for m in messages
        if m.server_content and m.server_content.model_turn
        for part in m.server_content.model_turn.parts or []
        if part.inline_data
    }
    assert mime == {"audio/pcm;rate=24000"}
    assert [
        m.server_content.input_transcription.text
        for m in tone_turn
        if m.server_content and m.server_content.input_transcription
    ] == ["<audio 250 ms>"]


async def test_activity_start_interrupts_the_answer(fake_live_server_factory: Any) -> None:
    server = await fake_live_server_factory(chunk_delay=0.2)
    async with session(server, config(resume=False)) as live:
        await say(live, "a long answer please")
        async with asyncio.timeout(10):
            async for message in live.receive():
                if message.server_content and message.server_content.model_turn:
                    break
        await live.send_realtime_input(activity_start=types.ActivityStart())
        async with asyncio.timeout(10):
            async for message in live.receive():
                if message.server_content and message.server_content.interrupted:
                    break
    record = (await server.wait_for_connections(1, finished=True))[0]
    assert record.interrupted == 1 and record.answers == []
    assert server.user_turns_answered() == []


async def test_history_sends_and_duplicates(fake_live_server_factory: Any) -> None:
    server = await fake_live_server_factory(chunk_delay=0.001)
    history = [
        types.Content(role="user", parts=[types.Part(text="one")]),
        types.Content(role="model", parts=[types.Part(text="echo: one")]),
    ]
    async with session(server) as live:
        await live.send_client_content(turns=history, turn_complete=False)
        assert await chat(live, "recall") == "you said: one"
        handle = await next_handle(live)
    async with session(server, config(handle=handle)) as live:
        # a client replaying history on top of the resumed session: a duplicate delivery
        await live.send_client_content(
            turns=[*history, types.Content(role="user", parts=[types.Part(text="two")])],
            turn_complete=True,
        )
        assert text_of(await turn(live)) == "echo: two"
        assert await chat(live, "recall") == "you said: one | recall | one | two"
    assert server.history_sends() == 2
    assert server.duplicate_history_sends() == 1
    assert [c.duplicate_history_sends for c in server.connections] == [0, 1]


# ---- resumption ----------------------------------------------------------------------------


async def test_resumption_update_sequence(fake_live_server_factory: Any) -> None:
    server = await fake_live_server_factory(chunk_delay=0.001)
    async with session(server, config(tools=[WEATHER])) as live:
        await say(live, "hi")
        await turn(live)
        await next_handle(live)
        await say(live, "call get_weather {}")
        call = await tool_call_turn(live)
        await live.send_tool_response(
            function_responses=[
                types.FunctionResponse(id=call.id, name=call.name, response={"ok": True})
            ]
        )
        await turn(live)
        await next_handle(live)
    record = (await server.wait_for_connections(1, finished=True))[0]
    sequence = []
    for message in record.server_messages:
        if "sessionResumptionUpdate" in message:
            update = message["sessionResumptionUpdate"]
            sequence.append("handle" if update.get("newHandle") else "busy")
            assert update["resumable"] is bool(update.get("newHandle"))
        elif "toolCall" in message:
            sequence.append("toolCall")
        elif message.get("serverContent", {}).get("turnComplete"):
            sequence.append("turnComplete")
        elif message.get("serverContent", {}).get("modelTurn") and sequence[-1] != "chunk":
            sequence.append("chunk")
    assert sequence == [
        "busy", "chunk", "turnComplete", "handle",
        "busy", "toolCall", "turnComplete", "busy", "chunk", "turnComplete", "handle",
    ]  # fmt: skip
    assert len(set(record.handles_issued)) == 2
    assert all(len(handle) >= 24 for handle in record.handles_issued)


async def test_resume_restores_the_snapshot_and_a_fresh_session_forgets(
    fake_live_server_factory: Any,
) -> None:
    server = await fake_live_server_factory(chunk_delay=0.001)
    async with session(server) as live:
        await chat(live, "first")
        early = await next_handle(live)
        await chat(live, "second")
        late = await next_handle(live)
    async with session(server, config(handle=late)) as live:
        assert await chat(live, "recall") == "you said: first | second"
    async with session(server, config(handle=early)) as live:
        assert await chat(live, "recall") == "you said: first"
    async with session(server, config(handle=late)) as live:  # still valid for reuse
        assert await chat(live, "how many turns?") == "2"
    async with session(server) as live:
        assert await chat(live, "recall") == "you said nothing"
    assert server.handles_used() == [late, early, late]
    assert [c.resumed for c in server.connections] == [False, True, True, True, False]


@pytest.mark.parametrize("why", ["unknown", "expired", "scripted"])
async def test_bad_handles_are_refused_after_setup(fake_live_server_factory: Any, why: str) -> None:
    server = await fake_live_server_factory(chunk_delay=0.001, handle_ttl=2.0, time_scale=0.05)
    async with session(server) as live:
        handle = await chat(live, "x") and await next_handle(live)
    if why == "unknown":
        handle = "not-a-handle"
    elif why == "expired":
        await asyncio.sleep(0.15)  # 2 service seconds are 0.1 real seconds
    else:
        server.script(Fault.refuse_resume(), connection=2)
    with pytest.raises(errors.APIError) as caught:
        async with session(server, config(handle=handle)):
            pass
    assert caught.value.code == 1008
    record = (await server.wait_for_connections(2, finished=True))[1]
    assert record.ended_by == "refused" and record.close_code == 1008
    assert record.close_reason == "Invalid resumption handle" and not record.resumed
    assert record.server_messages == []


async def test_transparent_mode_reports_the_last_consumed_index(
    fake_live_server_factory: Any,
) -> None:
    server = await fake_live_server_factory(chunk_delay=0.001)
    setup = {"model": "models/x", "sessionResumption": {"transparent": True}}
    async with raw(server, setup) as ws:
        assert await raw_recv(ws) == {"setupComplete": {}}
        await ws.send(json.dumps({"realtime_input": {"text": "one"}}))  # message 1
        first = await raw_until(ws, "sessionResumptionUpdate")
        while "newHandle" not in first[-1].get("sessionResumptionUpdate", {}):
            first.append(await raw_recv(ws))
        blob = {"mimeType": "audio/pcm;rate=16000"}
        # message 2 holds a whole utterance and the silence that ends it
        partial = speech_pcm("two") + silence_pcm(0.6)
        import base64

        await ws.send(
            json.dumps(
                {
                    "realtimeInput": {
                        "audio": {**blob, "data": base64.urlsafe_b64encode(partial).decode()}
                    }
                }
            )
        )
        seen = [await raw_recv(ws)]
        while "newHandle" not in seen[-1].get("sessionResumptionUpdate", {}):
            seen.append(await raw_recv(ws))
    assert first[-1]["sessionResumptionUpdate"]["lastConsumedClientMessageIndex"] == "1"
    # (an utterance still in progress holds its messages back: see tests/fake/test_fake_voice.py)
    assert seen[-1]["sessionResumptionUpdate"]["lastConsumedClientMessageIndex"] == "2"
    record = (await server.wait_for_connections(1, finished=True))[0]
    assert record.transparent and record.user_turns == ["one", "two"]


# ---- connection lifetime -------------------------------------------------------------------


async def test_go_away_then_deadline_close_under_time_scale(fake_live_server_factory: Any) -> None:
    server = await fake_live_server_factory(
        time_scale=0.01, connection_lifetime=100, go_away_lead=60
    )
    loop = asyncio.get_running_loop()
    async with session(server) as live:
        started = loop.time()
        go_away = None
        with pytest.raises(errors.APIError) as caught:
            async with asyncio.timeout(10):
                while True:
                    async for message in live.receive():
                        if message.go_away:
                            go_away = (loop.time() - started, message.go_away.time_left)
        closed_after = loop.time() - started
    assert go_away is not None and go_away[1] == "0.600s"
    assert 0.25 <= go_away[0] <= 0.95, go_away  # at 40 service seconds = 0.4 s real
    assert go_away[0] + 0.5 <= closed_after <= 2.5, closed_after  # at 100 = 1.0 s real
    # the recorded close of a client late for its goAway's deadline (glosa recording)
    assert caught.value.code == 1008
    assert GO_AWAY_DEADLINE_REASON in str(caught.value)
    record = (await server.wait_for_connections(1, finished=True))[0]
    assert record.go_away_sent and record.ended_by == "deadline" and record.close_code == 1008


def test_the_recorded_1008_needs_a_go_away_sent_on_the_connection() -> None:
    from adk_live_resume.testing.settings import DEFAULT_DEADLINE_REASON, ServerSettings

    default = ServerSettings()
    assert default.deadline_close(go_away_sent=True) == (1008, GO_AWAY_DEADLINE_REASON)
    assert default.deadline_close(go_away_sent=False) == (1011, DEFAULT_DEADLINE_REASON)
    old = ServerSettings(deadline_close_code=1011)
    assert old.deadline_close(go_away_sent=True) == (1011, DEFAULT_DEADLINE_REASON)
    told = ServerSettings(deadline_reason="late")
    assert told.deadline_close(go_away_sent=False) == (1008, "late")


@pytest.mark.parametrize(
    ("settings", "code", "reason"),
    [
        ({}, 1008, GO_AWAY_DEADLINE_REASON),
        ({"deadline_close_code": 1011}, 1011, "Deadline expired before operation could complete."),
        ({"deadline_close_code": 1011, "deadline_reason": "late"}, 1011, "late"),
    ],
)
async def test_the_deadline_close_is_the_recorded_1008_or_1011_behind_the_switch(
    fake_live_server_factory: Any, settings: dict[str, Any], code: int, reason: str
) -> None:
    server = await fake_live_server_factory(**settings)
    async with session(server) as live:
        assert server.go_away_now(0.05) == [1]
        with pytest.raises(errors.APIError) as caught:
            async with asyncio.timeout(10):
                while True:
                    async for _message in live.receive():
                        pass
    assert caught.value.code == code and reason in str(caught.value)
    record = (await server.wait_for_connections(1, finished=True))[0]
    assert (record.ended_by, record.close_code, record.close_reason) == ("deadline", code, reason)


async def test_changed_settings_apply_to_the_connections_opened_after(
    fake_live_server_factory: Any,
) -> None:
    server = await fake_live_server_factory(
        time_scale=0.01, connection_lifetime=100, go_away_lead=60
    )
    async with session(server) as first:
        server.change_settings(connection_lifetime=60_000)
        async with session(server) as second:
            with pytest.raises(errors.APIError):  # the first keeps its 1 s lifetime
                async with asyncio.timeout(10):
                    while True:
                        async for _ in first.receive():
                            pass
            with pytest.raises(TimeoutError):  # the second lives 600 s now
                async with asyncio.timeout(0.5):
                    async for message in second.receive():
                        assert not message.go_away
    with pytest.raises(TypeError):
        server.change_settings(no_such_setting=1)
    with pytest.raises(ValueError, match="connection_lifetime"):
        server.change_settings(connection_lifetime=0)


# ---- faults and what the SDK raises --------------------------------------------------------


@pytest.mark.parametrize(
    ("fault", "code", "send_error"),
    [
        (
            Fault.close(1000, "bye", after_client_messages=1),
            1000,
            websockets.exceptions.ConnectionClosedOK,
        ),
        (Fault.abort(after_client_messages=1), 1006, websockets.exceptions.ConnectionClosedError),
        (
            Fault.close(1011, "boom", after_client_messages=1),
            1011,
            websockets.exceptions.ConnectionClosedError,
        ),
    ],
    ids=["close-1000", "abort", "close-1011"],
)
async def test_each_close_style_raises_what_the_sdk_raises(
    fake_live_server_factory: Any,
    fault: Fault,
    code: int,
    send_error: type[Exception],
) -> None:
    server = await fake_live_server_factory()
    server.script(fault)
    async with session(server) as live:
        await say(live, "doomed")
        with pytest.raises(errors.APIError) as caught:
            await turn(live)
        assert caught.value.code == code
        assert type(caught.value) is errors.APIError  # not ServerError, even for 1011
        with pytest.raises(send_error):
            await say(live, "again")
    record = (await server.wait_for_connections(1, finished=True))[0]
    assert record.ended_by == "fault" and record.close_code == code
    assert record.user_turns == ["doomed"] and record.answers == []


async def test_fault_triggers(fake_live_server_factory: Any) -> None:
    server = await fake_live_server_factory(chunk_delay=0.05, time_scale=0.01)
    server.script(Fault.close(1011, "mid turn", mid_turn=True), connection=1)
    server.script(Fault.abort(mid_tool_call=True), connection=2)
    server.script(Fault.close(1000, after_seconds=20), connection=3)  # 0.2 s real
    server.script(Fault.close(1011, after_setup=True), connection=4)

    async with session(server) as live:
        await say(live, "interrupted answer")
        with pytest.raises(errors.APIError):
            await turn(live)
    async with session(server, config(tools=[WEATHER])) as live:
        await say(live, "call get_weather {}")
        with pytest.raises(errors.APIError) as caught:
            await turn(live)
        assert caught.value.code == 1006
    loop = asyncio.get_running_loop()
    async with session(server) as live:
        started = loop.time()
        with pytest.raises(errors.APIError):
            await turn(live)
        assert 0.1 <= loop.time() - started <= 1.0
    async with session(server) as live:
        with pytest.raises(errors.APIError):
            await turn(live)
    first, second, third, fourth = await server.wait_for_connections(4, finished=True)
    model_chunks = [m for m in first.server_messages if "modelTurn" in m.get("serverContent", {})]
    assert len(model_chunks) == 1 and first.close_reason == "mid turn"
    assert second.server_keys()[-1] == "toolCall"
    assert second.close_code == 1006 and [c.name for c in second.tool_calls] == ["get_weather"]
    assert third.ended_by == "fault" and third.close_code == 1000
    assert fourth.server_keys() == ["setupComplete"] and fourth.close_code == 1011
    assert server.user_turns_answered() == []


async def test_raw_server_messages_scripted_and_sent_now(fake_live_server_factory: Any) -> None:
    """Messages of any kind (the service adds kinds over time), sent as given; the connection
    goes on. Only the fake's records are read: whether the SDK can parse them is not the
    fake's business."""
    server = await fake_live_server_factory()
    future = {"someFutureMessage": {"detail": 1}}
    server.script(
        Fault.server_message(future, after_setup=True),
        Fault.server_message({"afterFirst": {}}, after_client_messages=1),
        connection=1,
    )
    async with asyncio.timeout(10), session(server) as live:
        record = (await server.wait_for_connections(1))[0]
        await server.wait_for(lambda: "someFutureMessage" in record.server_keys(), 5)
        assert "afterFirst" not in record.server_keys()
        with pytest.raises(ValueError, match="send_message_now"):
            server.script(Fault.server_message(future, after_setup=True), connection=1)
        assert await server.send_message_now({"now": {"x": True}}) == [1]
        assert await server.send_message_now({"other": {}}, connection=2) == []
        await say(live, "hello")  # (not read here: the answer is not this test's business)
        await server.wait_for(lambda: "afterFirst" in record.server_keys(), 5)
    [record] = await server.wait_for_connections(1, finished=True)
    assert record.server_keys()[:3] == ["setupComplete", "someFutureMessage", "now"]
    assert record.server_messages[1] == future and record.server_messages[2] == {"now": {"x": True}}
    assert record.ended_by == "client" and "other" not in record.server_keys()


def test_a_server_message_fault_takes_one_trigger() -> None:
    with pytest.raises(ValueError, match="exactly one trigger"):
        Fault.server_message({"someFutureMessage": {}})
    with pytest.raises(ValueError, match="exactly one trigger"):
        Fault.server_message({"someFutureMessage": {}}, mid_turn=True, after_setup=True)
    fault = Fault.server_message({"someFutureMessage": {}}, after_client_messages=2)
    assert fault.sends_message and not fault.is_drop


async def test_setup_delay_and_missing_setup_complete(fake_live_server_factory: Any) -> None:
    server = await fake_live_server_factory(time_scale=0.01, chunk_delay=0.001)
    server.script(Fault.setup_delay(30), connection=1)  # 0.3 s real
    server.script(Fault.no_setup_complete(), connection=2)
    loop = asyncio.get_running_loop()
    started = loop.time()
    async with session(server) as live:
        assert loop.time() - started >= 0.25
        assert await chat(live, "late") == "echo: late"
    async with raw(server, {"model": "models/x"}) as ws:
        await ws.send(json.dumps({"realtime_input": {"text": "no ack"}}))
        first = await raw_recv(ws)
        assert "setupComplete" not in first
    record = (await server.wait_for_connections(2, finished=True))[1]
    assert "setupComplete" not in record.server_keys()


async def test_restart_drops_everyone_and_handles_survive(fake_live_server_factory: Any) -> None:
    server = await fake_live_server_factory(chunk_delay=0.001)
    async with session(server) as one, session(server) as two:
        await chat(one, "kept")
        handle = await next_handle(one)
        await server.restart()
        for live in (one, two):
            with pytest.raises(errors.APIError) as caught:
                await turn(live)
            assert caught.value.code == 1006
    assert [c.ended_by for c in server.connections] == ["restart", "restart"]
    async with session(server, config(handle=handle)) as live:
        assert await chat(live, "recall") == "you said: kept"


async def test_flapping_and_close_open(fake_live_server_factory: Any) -> None:
    server = await fake_live_server_factory(chunk_delay=0.001)
    async with session(server) as live:
        await chat(live, "x")
        handle = await next_handle(live)
    server.flap(1011)
    async with session(server) as live:  # not resuming: unaffected by default
        assert await chat(live, "fresh") == "echo: fresh"
    for _ in range(3):
        async with session(server, config(handle=handle)) as live:
            with pytest.raises(errors.APIError) as caught:
                await turn(live)
            assert caught.value.code == 1011
    server.flap(None)
    for code in (1000, 1006):
        async with session(server, config(handle=handle)) as live:
            assert await chat(live, "recall") == "you said: x"
            await server.close_open(code, "closing")
            with pytest.raises(errors.APIError) as caught:
                await turn(live)
            assert caught.value.code == code
    ended = [c.ended_by for c in server.connections]
    assert ended == ["client", "client", "flap", "flap", "flap", "fault", "fault"]
    assert [c.close_code for c in server.connections[-2:]] == [1000, 1006]
    assert all(c.resumed for c in server.connections[2:])


async def test_a_close_is_not_held_up_by_what_the_client_still_sends(
    fake_live_server_factory: Any,
) -> None:
    """The fake closes right after the setup while 2 s of microphone it has not read wait
    behind the client's answer to its close frame: the handshake still ends at once (a
    closing endpoint reads on), not after websockets' 10 s ``close_timeout``."""
    server = await fake_live_server_factory()
    server.script(Fault.setup_delay(0.3), Fault.close(1011, "bye", after_setup=True))
    chunk = {"realtimeInput": {"audio": {"mimeType": "audio/pcm;rate=16000", "data": "AAAA" * 80}}}
    async with raw(server, {"model": f"models/{MODEL}"}) as ws:
        for _ in range(100):  # (sent while the setup is answered: the fake reads none)
            await ws.send(json.dumps(chunk))
        assert await raw_recv(ws) == {"setupComplete": {}}
        loop = asyncio.get_running_loop()
        started = loop.time()
        with pytest.raises(websockets.ConnectionClosedError):
            await raw_recv(ws)
        await ws.wait_closed()
        assert loop.time() - started < 1.0
    await server.wait_for(lambda: server.connections[0].finished, 1.0, what="the fake's end")
    assert server.connections[0].close_code == 1011


# ---- configuring clients -------------------------------------------------------------------


async def test_environment_configures_a_plain_client_and_restores_everything(
    fake_live_server_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = await fake_live_server_factory(chunk_delay=0.001)
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "someone-elses")
    monkeypatch.setenv("SSL_CERT_FILE", "/nonexistent/original.pem")
    monkeypatch.delenv("GOOGLE_GEMINI_BASE_URL", raising=False)
    before = dict(os.environ)
    with server.environment() as variables:
        assert os.environ["GOOGLE_GEMINI_BASE_URL"] == server.base_url
        assert "GOOGLE_CLOUD_PROJECT" not in os.environ
        assert variables["SSL_CERT_FILE"] == server.cert_path
        client = genai.Client()
    assert dict(os.environ) == before
    async with client.aio.live.connect(model=MODEL, config=config()) as live:
        assert await chat(live, "via env") == "echo: via env"


async def test_fake_live_server_fixture_applies_the_environment(
    fake_live_server: FakeLiveServer,
) -> None:
    assert os.environ["GOOGLE_GEMINI_BASE_URL"] == fake_live_server.base_url
    async with genai.Client(http_options=types.HttpOptions(api_version="v1alpha")).aio.live.connect(
        model=MODEL, config=config()
    ) as live:
        assert await chat(live, "fixture") == "echo: fixture"
    record = (await fake_live_server.wait_for_connections(1))[0]
    assert ".v1alpha." in record.path
