"""One case per wire shape the fake follows from recordings of the real service (see
``adk_live_resume/testing/wire_shapes.py`` and ``gemini-live-protocol.md``, "Field facts that
contradict or extend the above"), and the recorded goAway deadline close.

Each runs against the fake (both dialects) and, with credentials, against the real service
(see conftest.py). A failure on the real service means the recording the fake follows is not
the whole truth: report it (docs/conformance.md), with a recording if you can
(docs/fault-proxy.md, "Recording a session").
"""

from __future__ import annotations

import asyncio
import re
import uuid

import pytest
from google.genai import types

from adk_live_resume.testing import GO_AWAY_DEADLINE_REASON

from .conftest import Target
from .tap import Tap, has_handle, tool_call, turn_complete, update
from .test_protocol_assumptions import ANSWER, _config, _handle_after_turn, _say, _session, _tool

pytestmark = [pytest.mark.timeout(120)]

FC_ID = re.compile(r"^fc_\d+$")
EMPTY = {"sessionResumptionUpdate": {}}


async def _tool_round(target: Target, family: str = "GEMINI_3_1") -> tuple[Tap, int]:
    """A tool round on ``family``: the call, its response, the answer; returns the tap and
    the index of the first frame after the response was sent."""
    config = _config(target, tools=[_tool("get_time")])
    async with _session(target, config, family) as (session, tap):
        await _say(session, "call get_time {}", family)
        await tap.wait(lambda t: t.index(tool_call) is not None, ANSWER, "a toolCall")
        calls = tap.frames[tap.index(tool_call) or 0]["toolCall"]["functionCalls"]
        start = len(tap.frames)
        await session.send_tool_response(
            function_responses=[
                types.FunctionResponse(id=c.get("id"), name=c["name"], response={"now": "noon"})
                for c in calls
            ]
        )
        await tap.wait(lambda t: t.index(turn_complete, start) is not None, ANSWER, "an answer")
    return tap, start


async def test_the_deadline_close_after_a_missed_go_away_is_1008(target: Target) -> None:
    """Source: martin-paladino/glosa samples/fixtures/lt_en.jsonl (1008 at the deadline)."""
    target.needs_the_clock()
    async with _session(target, _config(target)) as (session, tap):
        await _say(session, "hello")
        await _handle_after_turn(tap)
        await tap.wait(lambda t: t.index(lambda f: "goAway" in f) is not None, 700, "goAway")
        frame = tap.frames[tap.index(lambda f: "goAway" in f) or 0]
        error = await tap.wait_end(float(frame["goAway"]["timeLeft"][:-1]) + 30)
    assert error is not None and error.code == 1008, error
    assert GO_AWAY_DEADLINE_REASON[:60] in str(error), error


async def test_handles_are_uuids(target: Target) -> None:
    """Source: pydantic-ai test_text_tool_round_parity[google-current] (3.1)."""
    async with _session(target, _config(target), "GEMINI_3_1") as (session, tap):
        await _say(session, "hello", "GEMINI_3_1")
        handle = await _handle_after_turn(tap)
    assert str(uuid.UUID(handle)) == handle.lower(), handle


async def test_call_ids_are_fc_digits_and_empty_server_content_surrounds_the_call(
    target: Target,
) -> None:
    """Source: pydantic-ai test_text_tool_round_parity[google-current] (3.1)."""
    tap, _ = await _tool_round(target)
    at = tap.index(tool_call)
    assert at is not None
    ids = [c.get("id") for c in tap.frames[at]["toolCall"]["functionCalls"]]
    assert ids and all(isinstance(i, str) and FC_ID.match(i) for i in ids), ids
    frames = [f for f in tap.frames if f != EMPTY]
    at = next(i for i, f in enumerate(frames) if "toolCall" in f)
    assert frames[at - 1] == {"serverContent": {}}, frames[at - 1]
    assert frames[at + 1] == {"serverContent": {}}, frames[at + 1]


async def test_a_handle_comes_right_after_the_tool_response_before_the_answer(
    target: Target,
) -> None:
    """Source: pydantic-ai test_text_tool_round_parity[google-current] (3.1)."""
    tap, start = await _tool_round(target)
    handle_at = tap.index(has_handle, start)
    answer_at = tap.index(lambda f: "modelTurn" in (f.get("serverContent") or {}), start)
    assert handle_at is not None and answer_at is not None and handle_at < answer_at
    assert (update(tap.frames[handle_at]) or {}).get("resumable") is True


@pytest.mark.parametrize("resumption", [True, False], ids=["asked", "not-asked"])
async def test_empty_resumption_updates_come_every_second_or_so(
    target: Target, resumption: bool
) -> None:
    """Source: martin-paladino/glosa samples/fixtures/lt_en.jsonl (no resumption asked)."""
    config = _config(target)
    if not resumption:
        config.session_resumption = None
    async with _session(target, config) as (session, tap):
        await _say(session, "hello")
        await tap.wait(lambda t: t.index(turn_complete) is not None, ANSWER, "the answer")
        await asyncio.sleep(2.5)
    assert tap.frames.count(EMPTY) >= 2, [list(f) for f in tap.frames]


async def test_usage_metadata_when_sent_comes_with_turn_complete(target: Target) -> None:
    """Sources: the pydantic-ai recordings (with turnComplete); kazunori279/interpretab
    (absent on 3.1): usage is optional, but where it comes, it ends the turn."""
    async with _session(target, _config(target)) as (session, tap):
        await _say(session, "hello")
        await tap.wait(lambda t: t.index(turn_complete) is not None, ANSWER, "the answer")
    usage = [f for f in tap.frames if "usageMetadata" in f]
    assert all(turn_complete(f) for f in usage), usage
