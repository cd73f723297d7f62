"""One case per model behaviour the fake follows from field reports (``gemini-live-protocol.md``,
"Field facts that contradict or extend the above"): tool-call ids scoped to their connection,
Gemini 3.8 extended thinking, server-side cancellation of a blocking call, identical calls in
one turn, and ``contextUpdate``.

Each runs against the fake (both dialects, with the field's behaviour: the server's defaults)
and, with credentials, against the real service (see conftest.py). Where the field says the
model *may* do something, the fake always does it: the case asks it of the fake, and of the
real service only what must hold whenever it happens. A failure on the real service means
the report the fake follows is not the whole truth: report it (docs/conformance.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from google.genai import live as genai_live
from google.genai import types

from .conftest import Target
from .tap import JsonDict, Tap, tool_call, turn_complete
from .test_protocol_assumptions import (
    ANSWER,
    QUIET,
    _config,
    _handle_after_turn,
    _say,
    _session,
)

pytestmark = [pytest.mark.timeout(180)]

#: The most identical calls in one turn the field reports ("2-5", the Vertex AI migration
#: guide 2.5 -> 3.8); the fake's own bound is the same number (``IDENTICAL_CALLS_MAX``).
IDENTICAL_CALLS_MAX = 5

#: What the tools of these cases return (not empty: the model does not call again for it).
RESULT = {"now": "quarter past seven"}


def _declared(name: str, behavior: types.Behavior | None) -> types.Tool:
    """A tool ``name`` declared with ``behavior`` (None: the family's default)."""
    declaration = types.FunctionDeclaration(
        name=name,
        description=f"Looks something up. Call it whenever the user says 'call {name}'.",
        behavior=behavior,
    )
    return types.Tool(function_declarations=[declaration])


#: The statuses that end a task: ``IDLE`` and ``REQUIRES_ACTION``, documented as "Deprecated:
#: Use IDLE instead. The server has completed all processing and background reasoning" (the
#: API reference, google-genai 3.6.1; notes, "Field facts of 2026-11-29").
DONE = frozenset({"IDLE", "REQUIRES_ACTION"})


def status(frame: JsonDict) -> str | None:
    """The frame's ``serverContent.interactionStatus``, if it carries one."""
    value = (frame.get("serverContent") or {}).get("interactionStatus")
    return str(value) if value is not None else None


def model_output(frame: JsonDict) -> bool:
    """The model said something (or ended a turn): an answer."""
    content = frame.get("serverContent") or {}
    return bool(content.get("modelTurn") or content.get("turnComplete"))


def _calls(frame: JsonDict) -> list[JsonDict]:
    return list(frame["toolCall"].get("functionCalls") or [])


async def _respond(session: Any, calls: list[JsonDict], result: JsonDict, **extra: Any) -> None:
    await session.send_tool_response(
        function_responses=[
            types.FunctionResponse(id=c.get("id"), name=c["name"], response=result, **extra)
            for c in calls
        ]
    )


async def _respond_when_idle(session: Any, calls: list[JsonDict]) -> None:
    """Answer ``calls`` with :data:`RESULT`, the responses scheduled ``WHEN_IDLE``."""
    await _respond(session, calls, RESULT, scheduling=types.FunctionResponseScheduling.WHEN_IDLE)


@contextlib.asynccontextmanager
async def _declaring_session(
    target: Target, config: types.LiveConnectConfig, family: str
) -> AsyncIterator[tuple[Any, Tap]]:
    """``_session`` for a setup whose functions declare a ``behavior``, skipped where this
    google-genai refuses one (1.x on Vertex AI, before anything is sent: "behavior parameter
    is not supported")."""
    async with contextlib.AsyncExitStack() as stack:
        try:
            opened = await stack.enter_async_context(_session(target, config, family))
        except ValueError as refused:
            pytest.skip(f"this google-genai refuses a declared behavior here: {refused}")
        yield opened


# ---- tool-call ids belong to the connection that issued them ----------------------------------


@pytest.mark.parametrize("family", ["TEXT", "GEMINI_3_8"])
async def test_a_tool_response_for_an_earlier_connections_call_is_not_acted_on(
    target: Target, family: str
) -> None:
    """Source: Pipecat PR 5497, Strands PR 4244, voiceclaw PR 53 (notes, "Field facts that
    contradict or extend the above": "a resumed connection does not act on a toolResponse
    whose id an earlier connection issued"). A NON_BLOCKING call is open in the state the
    handle holds; after a resume its response is sent under the old id and the model never
    answers with it (or the service ends the session); on the connection that issued a call,
    the same response is answered."""
    tool = _declared("get_time", types.Behavior.NON_BLOCKING)
    config = _config(target, tools=[tool])
    async with _declaring_session(target, config, family) as (session, tap):
        await _say(session, "call get_time {}", family)
        await tap.wait(lambda t: t.index(tool_call) is not None, ANSWER, "a toolCall")
        called = tap.index(tool_call) or 0
        earlier = _calls(tap.frames[called])
        handle = await _handle_after_turn(tap, called)  # the call is open in its state
    resumed = _config(target, handle=handle, tools=[tool])
    async with _declaring_session(target, resumed, family) as (session, tap):
        await _respond_when_idle(session, earlier)
        await asyncio.sleep(QUIET)
        answers = [f for f in tap.frames if model_output(f)]
        assert not answers, f"a response under an earlier connection's id was answered: {answers}"
        if tap.ended:  # the service rejected it: not acted on either
            return
        # the same response, for a call this connection issued, is answered
        await _say(session, "call get_time {}", family)
        await tap.wait(lambda t: t.index(tool_call) is not None, ANSWER, "a second toolCall")
        called = tap.index(tool_call) or 0
        await _handle_after_turn(tap, called)  # its turn is over
        start = len(tap.frames)
        await _respond_when_idle(session, _calls(tap.frames[called]))
        await tap.wait(lambda t: t.index(turn_complete, start) is not None, ANSWER, "an answer")


# ---- Gemini 3.8 extended thinking --------------------------------------------------------------


async def test_extended_thinking_status_goes_in_progress_then_idle(target: Target) -> None:
    """Source: the Live API thinking guide (notes, "Field facts that contradict or extend the
    above": "the model may speak several times per request; interactionStatus is
    IN_PROGRESS during background work and IDLE when the task is done; each utterance may
    carry turnComplete while the status stays IN_PROGRESS"). The statuses of a request read
    IN_PROGRESS ... IDLE, the IDLE one with a turnComplete; a turnComplete before it does not
    end the request (the fake always speaks first: there one is required)."""
    family = "GEMINI_3_8_EXTENDED_THINKING"
    async with _session(target, _config(target), family) as (session, tap):
        await _say(session, "Work it out step by step: what is 17 times 23?", family)
        await tap.wait(lambda t: t.index(lambda f: status(f) in DONE) is not None, ANSWER, "IDLE")
        idle = tap.index(lambda f: status(f) in DONE) or 0
        await asyncio.sleep(QUIET)  # nothing goes back to IN_PROGRESS after IDLE
    statuses = [s for f in tap.frames if (s := status(f)) is not None]
    assert statuses[-1] in DONE and set(statuses[:-1]) <= {"IN_PROGRESS"}, statuses
    assert sum(s in DONE for s in statuses) == 1, statuses
    assert turn_complete(tap.frames[idle]), tap.frames[idle]
    early = [f for f in tap.frames[:idle] if turn_complete(f)]
    assert all(status(f) == "IN_PROGRESS" for f in early), early
    if target.is_fake:  # the field says "may"; the fake always does
        assert early, "no turnComplete before IDLE"
        idle_from = tap.index(turn_complete) or 0
        spoke = tap.index(lambda f: "modelTurn" in (f.get("serverContent") or {}), idle_from)
        assert spoke is not None, "the model said nothing after its first turnComplete"


async def test_extended_thinking_calls_are_async_even_when_declared_blocking(
    target: Target,
) -> None:
    """Source: the Live API thinking guide (notes, "Field facts that contradict or extend the
    above": "function calling is async only"). A function declared BLOCKING does not hold
    the turn: a turnComplete (IN_PROGRESS: the call's work goes on) comes before its
    response is sent; once the response arrives, the model answers and the status is IDLE."""
    family = "GEMINI_3_8_EXTENDED_THINKING"
    config = _config(target, tools=[_declared("get_time", types.Behavior.BLOCKING)])
    async with _declaring_session(target, config, family) as (session, tap):
        await _say(session, "call get_time {}", family)
        await tap.wait(lambda t: t.index(tool_call) is not None, ANSWER, "a toolCall")
        called = tap.index(tool_call) or 0
        await tap.wait(
            lambda t: t.index(turn_complete, called) is not None,
            ANSWER,
            "a turnComplete without the call's response",
        )
        ended = tap.frames[tap.index(turn_complete, called) or 0]
        assert status(ended) == "IN_PROGRESS", ended
        start = len(tap.frames)
        await _respond_when_idle(session, _calls(tap.frames[called]))
        await tap.wait(
            lambda t: t.index(lambda f: status(f) in DONE, start) is not None,
            ANSWER,
            "IDLE after the response",
        )
    told = [f for f in tap.frames[start:] if "modelTurn" in (f.get("serverContent") or {})]
    assert told, "the model did not answer the call's result"


# ---- server-side cancellation of a blocking call -------------------------------------------------


async def test_new_input_cancels_a_blocking_call_in_progress(target: Target) -> None:
    """Source: the Vertex AI migration guide 2.5 -> 3.8 (notes, "Field facts that contradict
    or extend the above": "on 3.8 a BLOCKING call in progress is cancelled by the server when
    new input arrives"). Gemini 3.8 issues a BLOCKING call; before its response the user
    says something else: a toolCallCancellation names the call, and the new input is
    answered."""
    family = "GEMINI_3_8"
    config = _config(target, tools=[_declared("get_time", types.Behavior.BLOCKING)])
    async with _declaring_session(target, config, family) as (session, tap):
        await _say(session, "call get_time {}", family)
        await tap.wait(lambda t: t.index(tool_call) is not None, ANSWER, "a toolCall")
        ids = [c.get("id") for c in _calls(tap.frames[tap.index(tool_call) or 0])]
        start = len(tap.frames)
        await _say(session, "Never mind, tell me a joke instead.", family)
        await tap.wait(
            lambda t: t.index(lambda f: "toolCallCancellation" in f, start) is not None,
            ANSWER,
            "a toolCallCancellation",
        )
        cancelled = tap.frames[tap.index(lambda f: "toolCallCancellation" in f, start) or 0]
        assert set(ids) <= set(cancelled["toolCallCancellation"].get("ids") or []), cancelled
        await tap.wait(lambda t: t.index(turn_complete, start) is not None, ANSWER, "an answer")


# ---- identical calls in one turn ---------------------------------------------------------------


async def test_identical_calls_in_one_turn_are_separate_calls(target: Target) -> None:
    """Source: the Vertex AI migration guide 2.5 -> 3.8 (notes, "Field facts that contradict
    or extend the above": "the model may issue 2-5 identical calls in one turn when tools
    return empty results ... identical calls on one connection are separate calls").
    Gemini 3.8 calls a BLOCKING tool whose results are empty: every call of the turn, the
    same function with the same arguments, has an id of its own and is answered by its own
    response (the model goes on after each), at most five of them, then the answer (the
    field says "may": the fake always repeats, so there at least two are required)."""
    family = "GEMINI_3_8"
    config = _config(target, tools=[_declared("lookup", types.Behavior.BLOCKING)])
    calls: list[JsonDict] = []
    async with _declaring_session(target, config, family) as (session, tap):
        await _say(session, "call lookup {}", family)
        start = 0
        while True:
            at = await _next_call_or_answer(tap, start, len(calls))
            if not tool_call(tap.frames[at]):
                break
            issued = _calls(tap.frames[at])
            calls += issued
            assert len(calls) <= IDENTICAL_CALLS_MAX, f"more than five calls: {calls}"
            start = at + 1
            await _respond(session, issued, {"results": []})
    ids = [c.get("id") for c in calls]
    assert len(set(ids)) == len(ids), f"identical calls shared an id: {ids}"
    asked = {(c["name"], json.dumps(c.get("args") or {}, sort_keys=True)) for c in calls}
    assert len(asked) == 1 and calls[0]["name"] == "lookup", calls
    assert len(calls) >= (2 if target.is_fake else 1), calls


async def _next_call_or_answer(tap: Tap, start: int, calls: int) -> int:
    """The index of the first toolCall or turnComplete from frame ``start`` on (``calls``:
    how many came before, for the message of a timeout)."""

    def found(frame: JsonDict) -> bool:
        return tool_call(frame) or turn_complete(frame)

    await tap.wait(
        lambda t: t.index(found, start) is not None, ANSWER, f"a call or the answer after {calls}"
    )
    return tap.index(found, start) or 0


# ---- contextUpdate -----------------------------------------------------------------------------


@pytest.mark.skipif(
    not hasattr(genai_live.AsyncSession, "send_context_update"),
    reason="the installed google-genai has no send_context_update (2.32 and later)",
)
async def test_a_context_update_changes_the_tools_mid_session(target: Target) -> None:
    """Source: google-genai 2.32.0 ``AsyncSession.send_context_update`` (notes, "Field facts
    that contradict or extend the above": "contextUpdate{systemInstruction, tools} ...
    processed in order with other input; tools=[] clears"; Gemini 3.8 "can update tools and
    instructions mid-session"). A function the setup did not declare is not called; after an
    update declaring it, it is; after an update with ``tools=[]``, no function is. The update
    also carries a system instruction: the fake keeps it (in the session and its handles), but
    its scripted answers do not depend on one, so only the tools' effect is checked."""
    family = "GEMINI_3_8"
    tool = _declared("get_weather", types.Behavior.BLOCKING)
    async with _session(target, _config(target), family) as (session, tap):
        await _say(session, "call get_weather {}", family)
        await tap.wait(lambda t: t.index(turn_complete) is not None, ANSWER, "the first answer")
        assert tap.index(tool_call) is None, "an undeclared function was called"
        start = len(tap.frames)
        await session.send_context_update(
            system_instruction="When the user writes 'call X {}', call the function X at "
            "once. Otherwise answer in one short sentence.",
            tools=[tool],
        )
        await _say(session, "call get_weather {}", family)
        await tap.wait(lambda t: t.index(tool_call, start) is not None, ANSWER, "a toolCall")
        called = tap.index(tool_call, start) or 0
        assert [c["name"] for c in _calls(tap.frames[called])] == ["get_weather"]
        start = len(tap.frames)
        await _respond(session, _calls(tap.frames[called]), RESULT)
        await tap.wait(lambda t: t.index(turn_complete, start) is not None, ANSWER, "its answer")
        start = len(tap.frames)
        await session.send_context_update(tools=[])
        await _say(session, "call get_weather {}", family)
        at = await _next_call_or_answer(tap, start, 0)
        assert not tool_call(tap.frames[at]), f"called after tools=[]: {tap.frames[at]}"
