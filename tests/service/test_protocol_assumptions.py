"""One test per protocol assumption the fake server and the resumable loop rely on.

Each runs against the fake (both dialects) and, with credentials, against the real service
(see conftest.py). A difference on the real service means the fake, the loop, or both rest
on a wrong assumption: report it with the test's name and output (docs/conformance.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
from google.genai import errors, types

from .conftest import Target
from .tap import Tap, has_handle, tool_call, turn_complete, update

pytestmark = [pytest.mark.timeout(120)]

TIME_LEFT = re.compile(r"^\d+(\.\d+)?s$")  # a protobuf Duration in JSON: "57s", "0.600s"
#: How long to watch for something that must NOT come (real seconds).
QUIET = 2.0
#: A generous wait for one answer from the real service.
ANSWER = 60.0


def _tool(name: str, *, non_blocking: bool = False) -> types.Tool:
    declaration = types.FunctionDeclaration(
        name=name,
        description="Returns the current time. Call it whenever the user says 'call " + name + "'.",
        behavior=types.Behavior.NON_BLOCKING if non_blocking else None,
    )
    return types.Tool(function_declarations=[declaration])


def _config(
    target: Target,
    *,
    handle: str | None = None,
    audio: bool = False,
    tools: Sequence[types.Tool] = (),
    transparent: bool = False,
) -> types.LiveConnectConfig:
    return types.LiveConnectConfig(
        response_modalities=[types.Modality.AUDIO if audio else types.Modality.TEXT],
        session_resumption=types.SessionResumptionConfig(
            handle=handle, transparent=True if transparent else None
        ),
        tools=list(tools) or None,
        system_instruction="When the user writes 'call X {}', call the function X at once. "
        "Otherwise answer in one short sentence.",
    )


@contextlib.asynccontextmanager
async def _session(
    target: Target, config: types.LiveConnectConfig, family: str = "TEXT"
) -> AsyncIterator[tuple[Any, Tap]]:
    client = target.client()
    async with client.aio.live.connect(model=target.model(family), config=config) as session:
        tap = Tap(session)
        try:
            yield session, tap
        finally:
            tap.close()


async def _say(session: Any, text: str, family: str = "TEXT") -> None:
    if family.startswith("GEMINI_3"):
        await session.send_realtime_input(text=text)
        return
    await session.send_client_content(
        turns=types.Content(role="user", parts=[types.Part(text=text)]), turn_complete=True
    )


async def _refusal(target: Target, config: types.LiveConnectConfig) -> errors.APIError | None:
    """How a connection the service should refuse ended: at connect or right after, before
    any goAway (a goAway first means it was not refused, only ended at its deadline)."""
    try:
        async with _session(target, config) as (_, tap):
            error = await tap.wait_end(ANSWER)
            assert tap.index(lambda f: "goAway" in f) is None, "not refused: it lived on"
            return error
    except errors.APIError as refused:
        return refused


async def _handle_after_turn(tap: Tap, start: int = 0) -> str:
    """The handle of the first resumable update after the next turnComplete."""
    await tap.wait(lambda t: t.index(turn_complete, start) is not None, ANSWER, "turnComplete")
    done = tap.index(turn_complete, start)
    assert done is not None
    await tap.wait(lambda t: t.index(has_handle, done) is not None, ANSWER, "a handle")
    found = update(tap.frames[tap.index(has_handle, done) or 0])
    assert found is not None
    return str(found["newHandle"])


async def test_a_handle_comes_after_turn_complete_and_is_resumable(target: Target) -> None:
    async with _session(target, _config(target)) as (session, tap):
        await _say(session, "hello")
        handle = await _handle_after_turn(tap)
    assert handle
    first = tap.index(has_handle)
    done = tap.index(turn_complete)
    assert first is not None and done is not None and first > done
    assert (update(tap.frames[first]) or {}).get("resumable") is True


async def test_no_handle_while_the_model_generates(target: Target) -> None:
    async with _session(target, _config(target)) as (session, tap):
        await _say(session, "tell me a short story about a lighthouse")
        await _handle_after_turn(tap)
    done = tap.index(turn_complete)
    assert done is not None
    during = [update(f) for f in tap.frames[:done] if update(f) is not None]
    assert all(not u.get("newHandle") and not u.get("resumable") for u in during if u), during


async def test_no_handle_while_a_tool_call_is_pending(target: Target) -> None:
    config = _config(target, tools=[_tool("get_time")])
    async with _session(target, config) as (session, tap):
        await _say(session, "call get_time {}")
        await tap.wait(lambda t: t.index(tool_call) is not None, ANSWER, "a toolCall")
        called = tap.index(tool_call)
        assert called is not None
        await asyncio.sleep(QUIET)
        pending = [update(f) for f in tap.frames[called:] if update(f) is not None]
        assert all(not (u or {}).get("newHandle") for u in pending), pending
        calls = tap.frames[called]["toolCall"]["functionCalls"]
        await session.send_tool_response(
            function_responses=[
                types.FunctionResponse(id=c.get("id"), name=c["name"], response={"now": "noon"})
                for c in calls
            ]
        )
        await _handle_after_turn(tap, len(tap.frames))


async def test_go_away_time_left_format_then_the_deadline_close(target: Target) -> None:
    target.needs_the_clock()
    async with _session(target, _config(target)) as (session, tap):
        await _say(session, "hello")
        await _handle_after_turn(tap)
        await tap.wait(lambda t: t.index(lambda f: "goAway" in f) is not None, 700, "goAway")
        loop = asyncio.get_running_loop()
        seen_at = loop.time()
        frame = tap.frames[tap.index(lambda f: "goAway" in f) or 0]
        time_left = frame["goAway"]["timeLeft"]
        assert isinstance(time_left, str) and TIME_LEFT.match(time_left), time_left
        seconds = float(time_left[:-1])
        error = await tap.wait_end(seconds + 30)
        waited = loop.time() - seen_at
    assert error is not None and error.code in {1000, 1008, 1011}, error
    assert waited <= seconds + 30


async def test_a_resume_while_the_old_socket_is_open_is_refused(target: Target) -> None:
    async with _session(target, _config(target)) as (session, tap):
        await _say(session, "hello")
        handle = await _handle_after_turn(tap)
        error = await _refusal(target, _config(target, handle=handle))
        assert error is not None and error.code == 1011, error
    # once the old socket is closed, the same handle resumes
    async with _session(target, _config(target, handle=handle)) as (third, tap3):
        await _say(third, "again")
        await _handle_after_turn(tap3)


async def test_a_second_setup_on_a_connection_is_refused(target: Target) -> None:
    async with _session(target, _config(target)) as (session, tap):
        await _say(session, "hello")
        await _handle_after_turn(tap)
        setup = {"setup": {"model": f"models/{target.model()}"}}
        await session._ws.send(json.dumps(setup))  # the SDK never sends one: by hand
        error = await tap.wait_end(ANSWER)
    assert error is not None and error.code == 1007, error


async def test_vertex_last_consumed_index_counts_from_the_setup_as_a_string(
    target: Target,
) -> None:
    target.needs_vertex()
    async with _session(target, _config(target, transparent=True)) as (session, tap):
        await _say(session, "one")
        await _handle_after_turn(tap)
        await _say(session, "two")
        await _handle_after_turn(tap, len(tap.frames))
    indexes = [
        (update(f) or {}).get("lastConsumedClientMessageIndex") for f in tap.frames if has_handle(f)
    ]
    assert indexes, "no handle carried lastConsumedClientMessageIndex"
    assert all(isinstance(i, str) for i in indexes), indexes  # int64 travels as a string
    # the setup is message 0: after the first turn 1, after the second 2
    assert [int(i) for i in indexes][-1] == 2, indexes


@pytest.mark.parametrize(
    ("family", "accepted"),
    [
        ("TEXT", True),
        # 3.1 takes it now (its model page, LiveKit PR 7289, a 3.1 recording); the 1007
        # refusal was reported in March-May 2026 (gemini-live-protocol.md, "Field facts")
        ("GEMINI_3_1", True),
        ("GEMINI_3_8", True),
    ],
)
async def test_mid_session_client_content_per_model_family(
    target: Target, family: str, accepted: bool
) -> None:
    async with _session(target, _config(target), family) as (session, tap):
        await _say(session, "hello", family)
        await tap.wait(lambda t: t.index(turn_complete) is not None, ANSWER, "the first answer")
        start = len(tap.frames)
        await session.send_client_content(
            turns=types.Content(role="user", parts=[types.Part(text="and now?")]),
            turn_complete=True,
        )
        if accepted:
            await tap.wait(lambda t: t.index(turn_complete, start) is not None, ANSWER, "an answer")
        else:
            error = await tap.wait_end(ANSWER)
            assert error is not None and error.code == 1007, error


async def test_an_audio_session_ends_at_its_limit_and_cannot_be_resumed(target: Target) -> None:
    target.needs_the_clock()
    handle: str | None = None
    loop = asyncio.get_running_loop()
    deadline = loop.time() + (20 if target.is_fake else 1000)
    limit_error: errors.APIError | None = None
    while limit_error is None:  # resume across the connection deadlines up to the limit
        assert loop.time() < deadline, "the session never reached its limit"
        async with _session(target, _config(target, handle=handle, audio=True)) as (s, tap):
            await _say(s, "hello")
            handle = await _handle_after_turn(tap)
            error = await tap.wait_end(deadline - loop.time())
            assert error is not None
            if not tap.index(lambda f: "goAway" in f):  # no goAway: the session limit
                limit_error = error
    assert limit_error.code == 1011, limit_error
    error = await _refusal(target, _config(target, handle=handle, audio=True))
    assert error is not None and error.code == 1007, error


async def test_a_non_blocking_call_does_not_hold_the_turn(target: Target) -> None:
    config = _config(target, tools=[_tool("get_time", non_blocking=True)])
    async with contextlib.AsyncExitStack() as stack:
        try:
            session, tap = await stack.enter_async_context(_session(target, config))
        except ValueError as refused:  # google-genai 1.x on Vertex AI: before anything is sent
            pytest.skip(f"this google-genai refuses NON_BLOCKING here: {refused}")
        await _say(session, "call get_time {}")
        await tap.wait(lambda t: t.index(tool_call) is not None, ANSWER, "a toolCall")
        called = tap.index(tool_call) or 0
        # the turn ends (and a handle comes) without the function's response
        await _handle_after_turn(tap, called)
        start = len(tap.frames)
        calls = tap.frames[called]["toolCall"]["functionCalls"]
        await session.send_tool_response(
            function_responses=[
                types.FunctionResponse(
                    id=c.get("id"),
                    name=c["name"],
                    response={"now": "noon"},
                    scheduling=types.FunctionResponseScheduling.WHEN_IDLE,
                )
                for c in calls
            ]
        )
        await tap.wait(lambda t: t.index(turn_complete, start) is not None, ANSWER, "an answer")


async def test_no_turn_complete_after_a_native_audio_tool_call(target: Target) -> None:
    config = _config(target, audio=True, tools=[_tool("get_time")])
    async with _session(target, config, "NATIVE_AUDIO") as (session, tap):
        await _say(session, "call get_time {}")
        await tap.wait(lambda t: t.index(tool_call) is not None, ANSWER, "a toolCall")
        called = tap.index(tool_call) or 0
        await asyncio.sleep(QUIET)
        assert tap.index(turn_complete, called) is None, "turnComplete followed the toolCall"
