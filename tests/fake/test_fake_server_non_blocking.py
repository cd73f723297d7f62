"""NON_BLOCKING function calls on the fake server, against the bare google-genai SDK."""

from __future__ import annotations

import json
from typing import Any

import pytest
from google.genai import types

from adk_live_resume.testing import FakeLiveServer
from adk_live_resume.testing.handles import HandleSchedule

from .test_fake_server import (
    MODEL,
    chat,
    config,
    next_handle,
    raw,
    raw_recv,
    raw_until,
    say,
    session,
    text_of,
    turn,
)

pytestmark = pytest.mark.timeout(30)

SLOW = types.Tool(
    function_declarations=[
        types.FunctionDeclaration(
            name="slow", description="slow", behavior=types.Behavior.NON_BLOCKING
        ),
        types.FunctionDeclaration(name="fast", description="fast"),
    ]
)


def response(call_id: str, result: dict[str, Any], scheduling: str | None = None) -> Any:
    return types.FunctionResponse(
        id=call_id,
        name="slow",
        response=result,
        scheduling=types.FunctionResponseScheduling(scheduling) if scheduling else None,
    )


async def started(live: Any, text: str) -> types.FunctionCall:
    """Ask for ``text`` (a NON_BLOCKING call); the model goes on without waiting."""
    await say(live, text)
    first = await turn(live)  # toolCall, then turnComplete
    calls = [c for m in first if m.tool_call for c in m.tool_call.function_calls or []]
    assert len(calls) == 1, first
    assert text_of(await turn(live)) == "slow started"
    return calls[0]


async def test_a_non_blocking_call_does_not_hold_the_model_and_when_idle_answers_after(
    fake_live_server_factory: Any,
) -> None:
    server = await fake_live_server_factory(chunk_delay=0.05)
    async with session(server, config(tools=[SLOW])) as live:
        call = await started(live, "call slow {}")
        assert await chat(live, "between") == "echo: between", "the model did not wait"
        await say(live, "a long answer while the result arrives")
        await live.send_tool_response(function_responses=[response(str(call.id), {"v": 1})])
        # WHEN_IDLE (the default): the answer in progress completes first, uncut.
        assert text_of(await turn(live)) == "echo: a long answer while the result arrives"
        assert text_of(await turn(live)) == 'slow returned {"v":1}'
    record = (await server.wait_for_connections(1, finished=True))[0]
    assert record.accepted_tool_response_ids == [call.id]
    assert [(c.id, c.non_blocking) for c in record.tool_calls] == [(call.id, True)]
    assert record.interrupted == 0 and record.errors == []
    assert server.user_turns_answered() == [
        "call slow {}",
        "between",
        "a long answer while the result arrives",
    ], "the result's answer answers no user turn"


async def test_a_result_waiting_for_idle_never_streams_beside_the_next_answer(
    fake_live_server_factory: Any,
) -> None:
    """A WHEN_IDLE result waited on the answer in progress; a user turn
    cut that answer off, and while the cut was under way the result's telling began, then
    the user turn's answer too: the two streamed interleaved. One generation at a time:
    the user turn's answer, then the result."""
    server = await fake_live_server_factory(chunk_delay=0.05)
    async with session(server, config(tools=[SLOW])) as live:
        call = await started(live, "call slow {}")
        await say(live, "a long answer that the next turn cuts")
        await live.send_tool_response(function_responses=[response(str(call.id), {"v": 1})])
        await say(live, "next")
        first = await turn(live)  # the cut answer, interrupted, then the next answer
        cut = [i for i, m in enumerate(first) if m.server_content and m.server_content.interrupted]
        texts = [text_of(first[cut[-1] + 1 :] if cut else first), text_of(await turn(live))]
        assert texts == ["echo: next", 'slow returned {"v":1}'], texts
    record = (await server.wait_for_connections(1, finished=True))[0]
    assert record.errors == []


async def test_interrupt_cuts_the_answer_and_silent_says_nothing(
    fake_live_server_factory: Any,
) -> None:
    server = await fake_live_server_factory(chunk_delay=0.2)
    async with session(server, config(tools=[SLOW])) as live:
        first = await started(live, "call slow {}")
        second = await started(live, "call slow {}")
        await live.send_tool_response(
            function_responses=[response(str(first.id), {"quiet": 1}, "SILENT")]
        )
        await say(live, "a long answer that gets cut")
        await live.send_tool_response(
            function_responses=[response(str(second.id), {"now": 2}, "INTERRUPT")]
        )
        messages = await turn(live)
        cut = next(
            i for i, m in enumerate(messages) if m.server_content and m.server_content.interrupted
        )
        assert text_of(messages[:cut]) != "echo: a long answer that gets cut"
        assert text_of(messages[cut:]) == 'slow returned {"now":2}'
        assert await chat(live, "after") == "echo: after", "SILENT: no answer of its own"
    record = (await server.wait_for_connections(1, finished=True))[0]
    assert record.interrupted == 1
    assert record.accepted_tool_response_ids == [first.id, second.id]
    assert "quiet" not in json.dumps(record.answers)


async def test_with_old_ids_kept_a_handle_issued_while_the_call_runs_covers_it(
    fake_live_server_factory: Any,
) -> None:
    server = await fake_live_server_factory(tool_ids_outlive_connection=True)
    async with session(server, config(tools=[SLOW])) as live:
        assert await chat(live, "before") == "echo: before"
        old = await next_handle(live)
        call = await started(live, "call slow {}")
        covering = await next_handle(live)  # issued at the turnComplete of "slow started"
    async with session(server, config(tools=[SLOW], handle=covering)) as live:
        await live.send_tool_response(function_responses=[response(str(call.id), {"v": 3})])
        assert text_of(await turn(live)) == 'slow returned {"v":3}'
    async with session(server, config(tools=[SLOW], handle=old)) as live:
        await live.send_tool_response(function_responses=[response(str(call.id), {"v": 4})])
        assert await chat(live, "after") == "echo: after"
    second, third = (await server.wait_for_connections(3, finished=True))[1:]
    assert second.resumed and second.accepted_tool_response_ids == [call.id]
    assert third.resumed and third.accepted_tool_response_ids == []
    assert third.stale_tool_response_ids == [call.id], "the older handle predates the call"


async def test_a_resumed_connection_takes_no_response_under_an_earlier_connections_id(
    fake_live_server_factory: Any,
) -> None:
    # The field (Pipecat PR 5497, Strands PR 4244, voiceclaw PR 53): tool-call ids belong
    # to the connection that issued them, even where the handle covers the open call.
    server = await fake_live_server_factory()
    async with session(server, config(tools=[SLOW])) as live:
        call = await started(live, "call slow {}")
        covering = await next_handle(live)  # issued at the turnComplete of "slow started"
    async with session(server, config(tools=[SLOW], handle=covering)) as live:
        await live.send_tool_response(function_responses=[response(str(call.id), {"v": 3})])
        assert await chat(live, "after") == "echo: after", "not acted on: nothing told"
    second = (await server.wait_for_connections(2, finished=True))[1]
    assert second.resumed and second.accepted_tool_response_ids == []
    assert second.stale_tool_response_ids == [call.id]
    assert "slow returned" not in json.dumps(second.answers)


@pytest.mark.parametrize("spelling", ["NON_BLOCKING", "non_blocking"])
async def test_the_behavior_is_read_in_either_casing(spelling: str) -> None:
    declaration = {"name": "slow", "behavior": spelling}
    async with FakeLiveServer(handle_schedule=HandleSchedule(on_turn_complete=False)) as server:
        setup = {
            "model": f"models/{MODEL}",
            "generation_config": {"response_modalities": ["TEXT"]},
            "tools": [{"function_declarations": [declaration]}],
        }
        async with raw(server, setup) as ws:
            assert "setupComplete" in await raw_recv(ws)
            turn_ = {"turns": [{"role": "user", "parts": [{"text": "call slow {}"}]}]}
            await ws.send(json.dumps({"client_content": {**turn_, "turn_complete": True}}))
            messages = await raw_until(ws, "turnComplete")
            assert "toolCall" in messages[0]
            texts = await raw_until(ws, "turnComplete")
            parts = [m["serverContent"].get("modelTurn", {}) for m in texts]
            assert "".join(p["parts"][0]["text"] for p in parts if p) == "slow started"


async def test_a_history_ending_with_a_background_result_tells_it_answering_no_turn(
    fake_live_server_factory: Any,
) -> None:
    """A fresh session's history whose last turn is a NON_BLOCKING call's result (the call
    ended after its turn was answered with "started"): the model tells the result, and that
    telling answers no user turn, as a result told in mid-session does not."""
    server = await fake_live_server_factory()
    call = types.FunctionCall(id="old-call", name="slow", args={})
    history = [
        types.Content(role="user", parts=[types.Part(text="call slow {}")]),
        types.Content(role="model", parts=[types.Part(function_call=call)]),
        types.Content(
            role="user",
            parts=[types.Part(function_response=response("old-call", {"v": 1}))],
        ),
    ]
    async with session(server, config(tools=[SLOW])) as live:
        await live.send_client_content(turns=history, turn_complete=True)
        assert text_of(await turn(live)) == 'slow returned {"v":1}'
    record = (await server.wait_for_connections(1, finished=True))[0]
    assert record.answers == ['slow returned {"v":1}'] and record.errors == []
    assert server.user_turns_answered() == [], "the result's telling answers no user turn"
