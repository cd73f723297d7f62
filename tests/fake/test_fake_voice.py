"""The fake server speaks voice like the real service: VAD on the PCM, handles at any resumable
point, parallel and sequential tools, the Gemini 3.x Live dialect, the session limit.

All against the real google-genai SDK over TLS (``server.genai_client()``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from google.genai import errors, types

from adk_live_resume.testing import (
    FakeLiveServer,
    HandleSchedule,
    WireShapes,
    silence_pcm,
    speech_pcm,
)
from tests.fake.test_fake_server import (
    MODEL,
    WEATHER,
    chat,
    config,
    live_session,
    next_handle,
    say,
    session,
    text_of,
    turn,
)

pytestmark = pytest.mark.timeout(30)

GEMINI_3 = "gemini-3.1-flash-live-preview"
TOOLS = types.Tool(
    function_declarations=[
        types.FunctionDeclaration(name="get_weather", description="weather"),
        types.FunctionDeclaration(name="get_time", description="time"),
    ]
)


async def send_audio(live: Any, pcm: bytes, chunk: int = 3200) -> None:
    """Stream ``pcm`` as 16 kHz realtime audio, ``chunk`` bytes a message (100 ms default)."""
    for start in range(0, len(pcm), chunk):
        await live.send_realtime_input(
            audio=types.Blob(data=pcm[start : start + chunk], mime_type="audio/pcm;rate=16000")
        )


async def handled(server: FakeLiveServer, count: int, connection: int = -1) -> None:
    """Wait until the server has handled ``count`` messages of a connection."""
    await server.wait_for(
        lambda: server.connections[connection].handled_messages >= count, 10, what="handled"
    )


async def until(live: Any, done: Any) -> list[types.LiveServerMessage]:
    """Read messages until ``done(message)``; return them all."""
    seen: list[types.LiveServerMessage] = []
    async with asyncio.timeout(10):
        while True:
            async for message in live.receive():
                seen.append(message)
                if done(message):
                    return seen


async def tool_round_in_one_turn(live: Any) -> list[types.LiveServerMessage]:
    """Read up to a ``toolCall`` (no ``turnComplete`` before it), answer its first call with
    an empty response and return the messages of the rest of the turn."""
    seen = await until(live, lambda m: m.tool_call is not None)
    assert not any(m.server_content and m.server_content.turn_complete for m in seen)
    call = seen[-1].tool_call.function_calls[0]
    await live.send_tool_response(
        function_responses=[types.FunctionResponse(id=call.id, name=call.name)]
    )
    return await turn(live)


def heard_text(messages: list[types.LiveServerMessage]) -> str:
    return "".join(
        m.server_content.input_transcription.text or ""
        for m in messages
        if m.server_content and m.server_content.input_transcription
    )


# ---- handles at any resumable point ----------------------------------------------------------


async def test_handles_every_n_ms_of_audio_while_idle_silent_or_speaking(
    fake_live_server_factory: Any,
) -> None:
    server = await fake_live_server_factory(
        chunk_delay=0.001, handle_schedule=HandleSchedule(every_audio_ms=200)
    )
    async with session(server) as live:
        assert await chat(live, "one") == "echo: one"
        await send_audio(live, silence_pcm(0.4))  # messages 2-5
        await send_audio(live, speech_pcm("unfinished words", seconds=0.6))  # 6-11, no end
        await handled(server, 11)
    issues = server.handle_issues()
    assert [i.point for i in issues] == [
        "turn_complete",
        "idle_silent",
        "idle_silent",
        "idle_speaking",
        "idle_speaking",
        "idle_speaking",
    ]
    assert all(i.turns == 2 for i in issues)  # "one" and its answer: the utterance is not in
    speaking = issues[-1].handle
    # Resuming from a handle issued mid-utterance: the session holds completed turns only, so
    # the client has to replay the unfinished utterance, and then it is answered.
    async with session(server, config(handle=speaking)) as live:
        assert await chat(live, "recall") == "you said: one"
        await send_audio(live, speech_pcm("unfinished words", seconds=0.6) + silence_pcm(0.6))
        assert text_of(await turn(live)) == "echo: unfinished words"
    assert [t.how for t in server.connections[1].heard] == ["typed", "spoken"]


async def test_issue_handles_now_only_at_resumable_points(fake_live_server_factory: Any) -> None:
    server = await fake_live_server_factory(chunk_delay=0.3)
    async with session(server, config(tools=[WEATHER])) as live:
        await say(live, "a long answer please")
        await server.wait_for(lambda: bool(server.connections[0].user_turns))
        assert await server.issue_handles_now() == {1: None}  # generating
        messages = await turn(live)
        issued = await server.issue_handles_now()
        assert issued[1] is not None and issued[1].point == "idle_silent"
        await say(live, "call get_weather {}")
        call_turn = await turn(live)
        assert await server.issue_handles_now() == {1: None}  # a call is pending
        call = next(m.tool_call.function_calls[0] for m in call_turn if m.tool_call)
        await live.send_tool_response(
            function_responses=[types.FunctionResponse(id=call.id, name="get_weather", response={})]
        )
        assert text_of(await turn(live)) == "get_weather returned {}"
    updates = [m.session_resumption_update for m in messages if m.session_resumption_update]
    assert updates[0].resumable is False and updates[0].new_handle is None
    assert issued[1].handle in server.handles_issued()
    assert issued[1].handle not in repr(issued[1])  # handles never appear whole in reprs


async def test_handles_every_interval_while_idle(fake_live_server_factory: Any) -> None:
    schedule = HandleSchedule(on_turn_complete=False, idle_interval=5.0)
    server = await fake_live_server_factory(
        time_scale=0.01, chunk_delay=0.001, handle_schedule=schedule
    )
    async with session(server) as live:
        await server.wait_for(lambda: len(server.handle_issues()) >= 2)
        assert await chat(live, "hi") == "echo: hi"
        count = len(server.handle_issues())
        await server.wait_for(lambda: len(server.handle_issues()) > count)
    assert {i.point for i in server.handle_issues()} == {"idle_silent"}


# ---- speech found in the audio -----------------------------------------------------------------


async def test_transcription_while_speaking_then_the_turn(fake_live_server_factory: Any) -> None:
    server = await fake_live_server_factory(chunk_delay=0.001)
    async with session(server, config(resume=False, input_transcription=True)) as live:
        await send_audio(live, silence_pcm(0.3) + speech_pcm("hello there", seconds=0.8))
        pieces: list[types.LiveServerMessage] = []

        def heard_there(message: types.LiveServerMessage) -> bool:
            pieces.append(message)
            return "there" in heard_text(pieces)

        during = await until(live, heard_there)
        # the utterance has not ended: the model has not answered yet
        assert not any(m.server_content and m.server_content.model_turn for m in during)
        assert heard_text(during).startswith("hel")
        await send_audio(live, silence_pcm(0.6))
        assert text_of(await turn(live)) == "echo: hello there"
    (heard,) = server.connections[0].heard
    assert (heard.text, heard.how, heard.ended_by, heard.cut_start) == (
        "hello there",
        "spoken",
        "silence",
        False,
    )


async def test_a_fragment_of_an_utterance_is_heard_as_a_fragment(
    fake_live_server_factory: Any,
) -> None:
    server = await fake_live_server_factory(chunk_delay=0.001)
    clip = speech_pcm("hello world, how are you", seconds=2.4)
    lost = int(len(clip) * 0.4) // 2 * 2
    async with session(server, config(resume=False)) as live:
        await send_audio(live, clip[lost:] + silence_pcm(0.6), chunk=777)  # odd chunk sizes
        assert text_of(await turn(live)) == "echo: ld, how are you"
    assert server.connections[0].heard[0].cut_start


async def test_speech_over_the_answer_interrupts_it_and_cancels_calls(
    fake_live_server_factory: Any,
) -> None:
    server = await fake_live_server_factory(chunk_delay=0.2)
    async with session(server, config(resume=False, tools=[WEATHER])) as live:
        await say(live, "a long answer please")
        await until(live, lambda m: bool(m.server_content and m.server_content.model_turn))
        await send_audio(live, speech_pcm("stop", seconds=0.2) + silence_pcm(0.6))
        messages = await turn(live)
        assert any(m.server_content and m.server_content.interrupted for m in messages)
        assert text_of(messages) == "echo: stop"
        await say(live, "call get_weather {}")
        call_turn = await turn(live)
        call = next(m.tool_call.function_calls[0] for m in call_turn if m.tool_call)
        await send_audio(live, speech_pcm("never mind", seconds=0.3) + silence_pcm(0.6))
        messages = await turn(live)
        cancellations = [m.tool_call_cancellation.ids for m in messages if m.tool_call_cancellation]
        assert cancellations == [[call.id]]
        assert text_of(messages) == "echo: never mind"
    record = server.connections[0]
    assert record.interrupted == 2 and record.cancelled_tool_ids == [call.id]
    assert server.tool_call(call.id).cancelled and server.tool_call(call.id).responses == []
    assert server.user_turns_answered() == ["stop", "never mind"]


async def test_setup_silence_duration_and_stream_end(fake_live_server_factory: Any) -> None:
    server = await fake_live_server_factory(chunk_delay=0.001)
    short = types.RealtimeInputConfig(
        automatic_activity_detection=types.AutomaticActivityDetection(silence_duration_ms=100)
    )
    cfg = config(resume=False)
    cfg.realtime_input_config = short
    async with session(server, cfg) as live:
        await send_audio(live, speech_pcm("quick") + silence_pcm(0.15))
        assert text_of(await turn(live)) == "echo: quick"
    async with session(server, config(resume=False)) as live:
        await send_audio(live, speech_pcm("no silence after"))
        await live.send_realtime_input(audio_stream_end=True)
        assert text_of(await turn(live)) == "echo: no silence after"
    assert server.connections[1].heard[0].ended_by == "stream_end"


async def test_manual_activity_detection(fake_live_server_factory: Any) -> None:
    server = await fake_live_server_factory(chunk_delay=0.001)
    cfg = config(resume=False)
    cfg.realtime_input_config = types.RealtimeInputConfig(
        automatic_activity_detection=types.AutomaticActivityDetection(disabled=True)
    )
    async with session(server, cfg) as live:
        await send_audio(live, speech_pcm("outside", seconds=0.5) + silence_pcm(0.7))
        await live.send_realtime_input(activity_start=types.ActivityStart())
        await send_audio(live, speech_pcm("inside") + silence_pcm(0.7))  # silence ends nothing
        await live.send_realtime_input(activity_end=types.ActivityEnd())
        assert text_of(await turn(live)) == "echo: inside"
    record = server.connections[0]
    assert record.ignored_audio_ms == 1200 and record.user_turns == ["inside"]
    assert record.heard[0].ended_by == "activity_end"


# ---- tools ----------------------------------------------------------------------------------


async def test_parallel_and_sequential_tool_calls(fake_live_server_factory: Any) -> None:
    server = await fake_live_server_factory(chunk_delay=0.001)
    async with session(server, config(resume=False, tools=[TOOLS])) as live:
        await say(live, 'call get_weather {"city": "Paris"} and call get_time {}')
        calls = [c for m in await turn(live) if m.tool_call for c in m.tool_call.function_calls]
        assert [c.name for c in calls] == ["get_weather", "get_time"]
        await live.send_tool_response(
            function_responses=[
                types.FunctionResponse(id=calls[1].id, name="get_time", response={"t": 9}),
                types.FunctionResponse(id=calls[0].id, name="get_weather", response={"sky": 1}),
            ]
        )
        answer = text_of(await turn(live))
        assert answer == 'get_weather returned {"sky":1}; get_time returned {"t":9}'
        await say(live, "call get_weather {} then call get_time {}")
        first = [c for m in await turn(live) if m.tool_call for c in m.tool_call.function_calls]
        assert [c.name for c in first] == ["get_weather"]
        await live.send_tool_response(
            function_responses=[types.FunctionResponse(id=first[0].id, name="get_weather")]
        )
        second = [c for m in await turn(live) if m.tool_call for c in m.tool_call.function_calls]
        assert [c.name for c in second] == ["get_time"]
        await live.send_tool_response(
            function_responses=[
                types.FunctionResponse(id=second[0].id, name="get_time", response={"t": 1})
            ]
        )
        assert text_of(await turn(live)) == 'get_weather returned {}; get_time returned {"t":1}'
    issued = server.tool_calls_issued()
    assert [c.message for c in issued] == [1, 1, 2, 3]  # two calls in one toolCall message
    assert server.tool_call(calls[0].id).responses == [{"sky": 1}]
    assert server.tool_call(second[0].id).responses == [{"t": 1}]


# ---- Vertex: the exact index and messages sent again -------------------------------------


@contextlib.asynccontextmanager
async def vertex_session(server: FakeLiveServer, handle: str | None = None) -> AsyncIterator[Any]:
    client = server.genai_client(vertex=True)
    cfg = types.LiveConnectConfig(
        response_modalities=[types.Modality.TEXT],
        session_resumption=types.SessionResumptionConfig(handle=handle, transparent=True),
    )
    async with client.aio.live.connect(model=MODEL, config=cfg) as live:
        yield live


async def test_vertex_index_excludes_an_utterance_in_progress_and_resends_are_recorded(
    fake_live_server_factory: Any,
) -> None:
    server = await fake_live_server_factory(chunk_delay=0.001)
    head = speech_pcm("three four", seconds=0.6)[:9600]  # 300 ms: the start of an utterance
    async with vertex_session(server) as live:
        assert await chat(live, "one") == "echo: one"  # message 1
        await send_audio(live, silence_pcm(0.2))  # messages 2-3
        await handled(server, 3)
        silent = (await server.issue_handles_now())[1]
        await send_audio(live, head)  # messages 4-6
        await handled(server, 6)
        speaking = (await server.issue_handles_now())[1]
    assert silent is not None and silent.last_consumed_index == 3
    assert speaking is not None and speaking.point == "idle_speaking"
    assert speaking.last_consumed_index == 3  # messages 4-6 hold the unfinished utterance
    async with vertex_session(server, speaking.handle) as live:
        await say(live, "one")  # consumed already: sent again
        await turn(live)
        await send_audio(live, silence_pcm(0.2))  # silence is never "the same message"
        await send_audio(live, head + silence_pcm(0.6))  # not consumed: the replay it needs
        assert text_of(await turn(live)) == "echo: three"
    resent = server.resent_consumed()
    assert [(r.connection, r.index, r.kind) for r in resent] == [(2, 1, "clientContent")]


async def test_vertex_index_of_handles_issued_while_audio_streams(
    fake_live_server_factory: Any,
) -> None:
    server = await fake_live_server_factory(
        chunk_delay=0.001, handle_schedule=HandleSchedule(every_audio_ms=200)
    )
    async with vertex_session(server) as live:
        await send_audio(live, silence_pcm(0.4))  # messages 1-4: handles after 2 and 4
        await send_audio(live, silence_pcm(0.1) + speech_pcm("hi", seconds=0.1))  # 5-6
        await handled(server, 6)
    issues = server.handle_issues()
    assert [(i.point, i.last_consumed_index) for i in issues] == [
        ("idle_silent", 2),
        ("idle_silent", 4),
        ("idle_speaking", 5),  # message 6 holds the utterance in progress
    ]


# ---- Gemini 3.x Live -------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def gemini3(
    server: FakeLiveServer, *, history: bool = False, tools: list[types.Tool] | None = None
) -> AsyncIterator[Any]:
    extra = {}
    if history:
        extra["history_config"] = types.HistoryConfig(initial_history_in_client_content=True)
    async with live_session(server, GEMINI_3, tools=tools, **extra) as live:
        yield live


async def test_gemini_3_text_as_realtime_input_and_tool_calls_hold_the_turn(
    fake_live_server_factory: Any,
) -> None:
    server = await fake_live_server_factory(chunk_delay=0.001)
    async with gemini3(server, tools=[WEATHER]) as live:
        await live.send_realtime_input(text="hello")
        assert text_of(await turn(live)) == "echo: hello"
        await live.send_realtime_input(text="call get_weather {}")
        messages = await tool_round_in_one_turn(live)
        assert text_of(messages) == "get_weather returned {}"
        # ... and nothing reported the turn complete between the call and its answer
        assert sum(bool(m.server_content and m.server_content.turn_complete) for m in messages) == 1


async def test_gemini_3_1_refuses_mid_session_content_behind_the_switch(
    fake_live_server_factory: Any,
) -> None:
    # (3.1 takes mid-session content by default now, as recorded: see WireShapes; the
    # refusal reported until May 2026 is the switch this test checks)
    server = await fake_live_server_factory(
        chunk_delay=0.001, wire_shapes=WireShapes(refuse_3_1_mid_session_content=True)
    )
    history = [
        types.Content(role="user", parts=[types.Part(text="a")]),
        types.Content(role="model", parts=[types.Part(text="echo: a")]),
        types.Content(role="user", parts=[types.Part(text="b")]),
    ]
    async with gemini3(server, history=True) as live:
        await live.send_client_content(turns=history, turn_complete=True)
        await live.send_realtime_input(text=".")  # what ADK sends to get the answer
        assert text_of(await turn(live)) == "echo: b"
        await say(live, "mid-session content")
        with pytest.raises(errors.APIError) as caught:
            await turn(live)
    assert caught.value.code == 1007
    record = (await server.wait_for_connections(1, finished=True))[0]
    assert record.ended_by == "rejected" and len(record.rejected_client_content) == 1
    assert [(t.text, t.how) for t in record.heard] == [("a", "history"), ("b", "history")]
    async with gemini3(server) as live:  # no historyConfig: no clientContent at all
        await say(live, "hi")
        with pytest.raises(errors.APIError):
            await turn(live)
    lenient = await fake_live_server_factory(
        chunk_delay=0.001,
        lenient_client_content=True,
        wire_shapes=WireShapes(refuse_3_1_mid_session_content=True),
    )
    async with gemini3(lenient) as live:
        assert await chat(live, "hi") == "echo: hi"
    assert len(lenient.rejected_client_content()) == 1


async def test_gemini_3_1_takes_mid_session_content_as_recorded(
    fake_live_server_factory: Any,
) -> None:
    server = await fake_live_server_factory(chunk_delay=0.001)
    async with gemini3(server) as live:  # no historyConfig, as in the 3.1 recording
        assert await chat(live, "hi") == "echo: hi"
        assert await chat(live, "again") == "echo: again"
    record = (await server.wait_for_connections(1, finished=True))[0]
    assert record.rejected_client_content == [] and record.ended_by == "client"


# ---- session length --------------------------------------------------------------------------


async def test_audio_session_ends_at_the_limit_and_cannot_be_resumed(
    fake_live_server_factory: Any,
) -> None:
    server = await fake_live_server_factory(
        time_scale=0.001, connection_lifetime=20_000, chunk_delay=0.001
    )  # the 900 s session limit is 0.9 s real
    async with session(server, config(modality="AUDIO")) as live:
        await say(live, "hi")
        await turn(live)
        handle = await next_handle(live)
        with pytest.raises(errors.APIError) as caught:
            await until(live, lambda m: False)
    assert caught.value.code == 1011
    record = (await server.wait_for_connections(1, finished=True))[0]
    assert record.ended_by == "session_limit" and "contextWindowCompression" in str(
        record.close_reason
    )
    with pytest.raises(errors.APIError) as caught:
        async with session(server, config(modality="AUDIO", handle=handle)):
            pass
    assert caught.value.code == 1007


async def test_compression_or_text_keeps_the_session_going(fake_live_server_factory: Any) -> None:
    server = await fake_live_server_factory(
        time_scale=0.001, connection_lifetime=20_000, chunk_delay=0.001
    )
    compressed = config(modality="AUDIO", output_transcription=True)
    compressed.context_window_compression = types.ContextWindowCompressionConfig(
        sliding_window=types.SlidingWindow()
    )
    async with session(server, compressed) as audio, session(server) as text:
        await asyncio.sleep(1.2)  # past the 0.9 s limit
        await say(audio, "still here")
        assert "echo: still here" in "".join(
            m.server_content.output_transcription.text or ""
            for m in await turn(audio)
            if m.server_content and m.server_content.output_transcription
        )
        assert await chat(text, "me too") == "echo: me too"
    records = await server.wait_for_connections(2, finished=True)
    assert [c.ended_by for c in records] == ["client", "client"]


def test_answer_text_reads_an_audio_only_answer_from_its_audio() -> None:
    """Output transcription off: the driver reads the fake's answer back from the audio
    (final parts, else partial ones), and text or a transcription wins when there is one."""
    from types import SimpleNamespace

    from adk_live_resume.testing import answer_text

    def event(*, partial: bool, pcm: bytes = b"", text: str | None = None) -> Any:
        blob = types.Blob(data=pcm, mime_type="audio/pcm;rate=24000") if pcm else None
        part = types.Part(text=text, inline_data=blob)
        content = types.Content(role="model", parts=[part])
        return SimpleNamespace(
            author="assistant", content=content, partial=partial, output_transcription=None
        )

    pieces = [speech_pcm(c, sample_rate=24000, seconds=0.05) for c in ("echo", ": one")]
    partials = [event(partial=True, pcm=p) for p in pieces]
    assert answer_text(partials) == "echo: one"
    final = event(partial=False, pcm=b"".join(pieces))
    assert answer_text([*partials, final]) == "echo: one"  # (not twice)
    assert answer_text([*partials, event(partial=False, text="typed")]) == "typed"
    assert answer_text([event(partial=True)]) == ""


async def test_gemini_3_1_transcribes_an_utterance_once_it_ended_whole(
    fake_live_server_factory: Any,
) -> None:
    # A field report (notes, "Field facts of 2026-11-29"): on 3.1 inputTranscription arrives
    # only after the utterance ends; and the Gemini API never sets finished.
    server = await fake_live_server_factory(chunk_delay=0.001)
    cfg = config(resume=False, input_transcription=True)
    client = server.genai_client()
    async with client.aio.live.connect(model="gemini-3.1-flash-live-preview", config=cfg) as live:
        await send_audio(live, silence_pcm(0.3) + speech_pcm("hello there", seconds=0.8))
        await send_audio(live, silence_pcm(0.6))
        seen = await until(
            live, lambda m: bool(m.server_content and m.server_content.turn_complete)
        )
    heard = [
        m.server_content for m in seen if m.server_content and m.server_content.input_transcription
    ]
    assert [c.input_transcription.text for c in heard] == ["hello there"]
    assert heard[0].input_transcription.finished is None
    answer_at = next(
        i for i, m in enumerate(seen) if m.server_content and m.server_content.model_turn
    )
    assert (
        seen.index(
            next(m for m in seen if m.server_content and m.server_content.input_transcription)
        )
        < answer_at
    )
    assert text_of(seen) == "echo: hello there"


@pytest.mark.parametrize("model", ["gemini-live-fake", "gemini-3.1-flash-live-preview"])
async def test_the_server_says_speech_then_non_speech_with_the_final_transcription(
    fake_live_server_factory: Any, model: str
) -> None:
    # serverContent.speechState (the Vertex AI RPC reference; measured SPEECH about 0.24 s
    # after onset, NON_SPEECH in the frame of the final inputTranscription)
    server = await fake_live_server_factory(chunk_delay=0.001)
    cfg = config(resume=False, input_transcription=True)
    async with server.genai_client().aio.live.connect(model=model, config=cfg) as live:
        await send_audio(live, silence_pcm(0.3) + speech_pcm("hello there", seconds=0.8))
        await send_audio(live, silence_pcm(0.6))
        await until(live, lambda m: bool(m.server_content and m.server_content.turn_complete))
    contents = [
        m["serverContent"] for m in server.connections[0].server_messages if "serverContent" in m
    ]
    states = [(i, c["speechState"]) for i, c in enumerate(contents) if "speechState" in c]
    assert [state for _, state in states] == ["SPEECH", "NON_SPEECH"]
    (ending_at, _), answer_at = (
        states[1],
        next(i for i, c in enumerate(contents) if "modelTurn" in c),
    )
    assert ending_at < answer_at and states[0][0] < ending_at
    if model == "gemini-live-fake":  # (pieces as heard; NON_SPEECH alone at the end)
        pieces = [i for i, c in enumerate(contents) if "inputTranscription" in c]
        assert len(pieces) > 1 and pieces[-1] < ending_at
    else:  # (one transcription, at the end: NON_SPEECH in its frame)
        assert "inputTranscription" in contents[ending_at]


async def test_no_speech_states_in_manual_activity_detection_or_behind_the_switch(
    fake_live_server_factory: Any,
) -> None:
    from adk_live_resume.testing import WireShapes

    server = await fake_live_server_factory(
        chunk_delay=0.001, wire_shapes=WireShapes(speech_state=False)
    )
    async with session(server, config(resume=False)) as live:
        await send_audio(live, silence_pcm(0.3) + speech_pcm("hello there", seconds=0.8))
        await send_audio(live, silence_pcm(0.6))
        assert text_of(await turn(live)) == "echo: hello there"
    assert "speechState" not in str(server.connections[0].server_messages)
