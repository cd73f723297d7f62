"""A goAway move after an answer whose ``interactionStatus`` is ``REQUIRES_ACTION`` or of a
kind the loop does not know, end to end.

``REQUIRES_ACTION`` is documented as a deprecated ``IDLE`` ("The server has completed all
processing and background reasoning": the API reference, google-genai 3.6.1): an answer that
ends with it is finished, so a goAway after it moves at once, as after ``IDLE``. A status the
loop does not know holds the turn for one answer's time (``stall_timeout``) at most, never
until the move's deadline, and is logged once. Real ``Runner.run_live``, real google-genai
(1.x on google-adk 1.27.2 drops the field: read from the raw frame), real TLS websockets on
127.0.0.1, both entry points (``make_agent``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import pytest

from adk_live_resume import ResumePolicy
from adk_live_resume.testing import FakeLiveServer
from adk_live_resume.testing.driver import LiveDriver

from ..helpers import times_said

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]

MODEL = "gemini-3.8-live"


async def _move_after_an_answer(
    make_agent: Any, server: FakeLiveServer, policy: ResumePolicy, time_left: float
) -> tuple[float, LiveDriver]:
    """Answer one turn, send goAway with ``time_left`` and return the seconds until the
    next connection opened (the run still going, its driver with it)."""
    agent = make_agent(server, model=MODEL, policy=policy)
    live = await LiveDriver.start(agent)
    assert await live.say("one") == "echo: one"
    # (the answer's handle went with its turnComplete; nothing holds the safe point but the
    # status the turn ended with)
    assert server.go_away_now(time_left) == [1]
    began = time.monotonic()
    await server.wait_for_connections(2, timeout=time_left + 5)
    return time.monotonic() - began, live


@pytest.mark.parametrize("done_status", ["IDLE", "REQUIRES_ACTION"])
async def test_a_go_away_after_an_answer_ended_with_requires_action_moves_at_once(
    make_agent: Any, done_status: str
) -> None:
    policy = ResumePolicy(go_away_margin=1.0)
    async with asyncio.timeout(45):
        async with FakeLiveServer(done_status=done_status) as server:
            took, live = await _move_after_an_answer(make_agent, server, policy, 8.0)
            async with live:
                assert await live.say("recall") == "you said: one"
                await live.close()
    # at once (not at the deadline, 7 s on)
    assert took < 3.0, f"the move waited {took:.1f} s after an answer ended with {done_status}"
    first, second = server.connections
    assert first.ended_by == "client" and second.resumed
    assert server.user_turns_answered() == ["one", "recall"]
    assert times_said(live, "echo: one") == 1
    assert server.resent_consumed() == [] and server.history_sends() == 0


async def test_an_unknown_status_holds_a_move_for_one_answers_time_and_is_logged_once(
    make_agent: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # (a name of its own per entry point: the WARNING is once per process and status)
    status = "SOME_NEW_STATUS_" + make_agent.entry.upper()
    policy = ResumePolicy(go_away_margin=1.0, stall_timeout=1.5)
    caplog.set_level(logging.WARNING, "adk_live_resume")
    async with asyncio.timeout(45):
        async with FakeLiveServer(done_status=status) as server:
            took, live = await _move_after_an_answer(make_agent, server, policy, 20.0)
            async with live:
                assert await live.say("recall") == "you said: one"
                await live.close()
    # held about one answer's time (1.5 s after the turn ended), not 19 s for the deadline
    assert took < 6.0, f"the move waited {took:.1f} s after an unknown status"
    first, second = server.connections
    assert first.ended_by == "client" and second.resumed
    assert server.user_turns_answered() == ["one", "recall"]
    warnings = [r for r in caplog.records if "unknown interactionStatus" in r.getMessage()]
    assert len(warnings) == 1 and status in warnings[0].getMessage()
