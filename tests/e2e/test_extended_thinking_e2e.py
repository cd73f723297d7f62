"""A model that works in the background (``interactionStatus``), end to end.

Real ``Runner.run_live``, real google-genai, real TLS websockets on 127.0.0.1, the fake's
extended-thinking family (:mod:`adk_live_resume.testing.families`): for each user turn the
model first says ``working on: <turn>`` and ends that utterance with ``turnComplete`` and
``interactionStatus: IN_PROGRESS`` (with a handle that restores the session without the
request), works for the server's ``work_delay``, then answers, ending with ``IDLE``. On
google-genai 1.x the status is read from the raw frames; on 2.x from the parsed message.
Both entry points (``install()`` and the subclasses) run every test.
"""

from __future__ import annotations

from typing import Any

import pytest

import adk_live_resume
from adk_live_resume import ResumePolicy
from adk_live_resume.testing import FakeLiveServer, Fault
from adk_live_resume.testing.driver import LiveDriver
from adk_live_resume.testing.generation import WORKING
from adk_live_resume.testing.speech import silence_pcm, speech_pcm

from ..conftest import AgentFactory
from ..helpers import get_weather, times_said, working_utterance

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]

MODEL = "gemini-3.8-live-extended-thinking"
WEATHER = 'get_weather returned {"city":"Oslo","sky":"clear"}'


async def _mid_work(live: LiveDriver, text: str) -> int:
    """Send ``text`` and return once the model said its first utterance for it (the model
    works now); returns the mark to read the answer after."""
    mark = live.send_text(text)
    assert await live.answer_after(mark) == WORKING + text
    return mark


def _agent(make_agent: AgentFactory, server: FakeLiveServer, **kwargs: Any) -> Any:
    return make_agent(server, model=MODEL, policy=ResumePolicy(go_away_margin=0.05), **kwargs)


async def test_a_go_away_while_the_model_works_moves_only_once_it_is_idle(
    make_agent: AgentFactory,
) -> None:
    async with FakeLiveServer(work_delay=1.0) as server:
        agent = _agent(make_agent, server)
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one", skip=working_utterance) == "echo: one"
            mark = await _mid_work(live, "two")
            # the goAway lands in the work; its deadline (5 s) is far
            assert server.go_away_now(5.0) == [1]
            assert await live.answer_after(mark, skip=working_utterance) == "echo: two"
            await server.wait_for_connections(2)
            assert await live.say("recall", skip=working_utterance) == "you said: one | two"
            await live.close()
    first, second = server.connections
    # the move resumed the handle issued with IDLE, not the one issued while the model worked
    points = [issue.point for issue in first.handle_issues]
    assert "working" in points and points[-1] == "turn_complete", points
    assert second.resumed and second.resume_handle == first.handle_issues[-1].handle
    assert first.ended_by == "client"
    # nothing lost, nothing said twice, nothing sent again
    assert server.user_turns_answered() == ["one", "two", "recall"]
    assert first.user_turns == ["one", "two"] and second.user_turns == ["recall"]
    assert times_said(live, "echo: two") == 1 and times_said(live, WORKING + "two") == 1
    assert server.resent_consumed() == [] and server.history_sends() == 0


async def test_the_go_away_deadline_still_wins_over_the_work(make_agent: AgentFactory) -> None:
    # The work (3 s) outlasts the goAway's deadline (0.6 s): the move happens at the deadline,
    # and the request, which the newest handle does not hold, is asked again on the next
    # connection; it is answered once.
    async with FakeLiveServer(work_delay=3.0) as server:
        agent = _agent(make_agent, server)
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one", skip=working_utterance) == "echo: one"
            mark = await _mid_work(live, "two")
            assert server.go_away_now(0.6) == [1]
            assert await live.answer_after(mark, skip=working_utterance, timeout=15) == "echo: two"
            assert (
                await live.say("recall", skip=working_utterance, timeout=15)
                == "you said: one | two"
            )
            await live.close()
    first, second = server.connections[:2]
    assert first.go_away_sent and second.resumed
    assert second.resume_handle == first.handle_issues[-1].handle
    assert first.handle_issues[-1].point == "working"
    assert server.user_turns_answered() == ["one", "two", "recall"]
    assert second.user_turns[:2] == ["two", "recall"]
    assert times_said(live, "echo: two") == 1
    assert server.resent_consumed() == [] and server.history_sends() == 0


async def test_a_drop_while_the_model_works_asks_again_and_is_answered_once(
    make_agent: AgentFactory,
) -> None:
    async with FakeLiveServer(work_delay=1.0) as server:
        agent = _agent(make_agent, server)
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one", skip=working_utterance) == "echo: one"
            mark = await _mid_work(live, "two")
            await server.close_open(1011, "Internal error")
            assert await live.answer_after(mark, skip=working_utterance, timeout=15) == "echo: two"
            assert await live.say("recall", skip=working_utterance) == "you said: one | two"
            await live.close()
    first, second = server.connections[:2]
    assert second.resumed and second.resume_handle == first.handle_issues[-1].handle
    assert server.user_turns_answered() == ["one", "two", "recall"]
    assert second.user_turns[:2] == ["two", "recall"]
    assert times_said(live, "echo: two") == 1
    assert server.resent_consumed() == [] and server.history_sends() == 0


async def test_a_message_that_came_with_the_setup_leaves_each_status_with_its_message(
    make_agent: AgentFactory,
) -> None:
    # google-genai 1.x drops interactionStatus while parsing: it is read from each raw frame
    # as it arrives, counted from the moment the connection is watched. A message the server
    # sends right after setupComplete (the service's empty sessionResumptionUpdate) arrives
    # with it, before the watch: were it not counted, each status would go to the message
    # before its own, the IN_PROGRESS turnComplete would read as finished, and the request
    # a drop cuts mid-work would be taken as covered by the handle issued during the work.
    async with FakeLiveServer(work_delay=2.0) as server:
        server.script(
            Fault.server_message({"sessionResumptionUpdate": {}}, after_setup=True), connection=1
        )
        agent = _agent(make_agent, server)
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one", skip=working_utterance) == "echo: one"
            mark = await _mid_work(live, "two")
            await server.close_open(1011, "Internal error")
            assert await live.answer_after(mark, skip=working_utterance, timeout=15) == "echo: two"
            await live.close()
    first, second = server.connections[:2]
    assert first.server_messages[1] == {"sessionResumptionUpdate": {}}
    assert second.resumed and second.resume_handle == first.handle_issues[-1].handle
    assert first.handle_issues[-1].point == "working"
    assert second.user_turns == ["two"] and server.user_turns_answered() == ["one", "two"]
    assert times_said(live, "echo: two") == 1


async def test_a_spoken_request_waits_for_the_work_before_a_go_away_moves(
    make_agent: AgentFactory,
) -> None:
    # (chunks 0.25 s apart: the first utterance ends well after the microphone's last sound,
    # so only the model's work keeps the utterance unanswered)
    async with FakeLiveServer(work_delay=1.0, chunk_delay=0.25) as server:
        agent = _agent(make_agent, server)
        async with await LiveDriver.start(agent) as live:
            mark = len(live.events)
            live.send_audio(speech_pcm("spoken words", seconds=0.6) + silence_pcm(0.65))
            assert await live.answer_after(mark) == WORKING + "spoken words"
            assert server.go_away_now(5.0) == [1]
            assert await live.answer_after(mark, skip=working_utterance) == "echo: spoken words"
            await server.wait_for_connections(2)
            assert await live.say("recall", skip=working_utterance) == "you said: spoken words"
            await live.close()
    first, second = server.connections
    assert second.resumed and second.resume_handle == first.handle_issues[-1].handle
    assert first.handle_issues[-1].point == "turn_complete"
    assert [turn.how for turn in first.heard] == ["spoken"] and second.heard[0].how == "typed"
    assert server.user_turns_answered() == ["spoken words", "recall"]
    assert times_said(live, "echo: spoken words") == 1


async def test_on_vertex_ai_a_drop_while_the_model_works_asks_again_once() -> None:
    async with FakeLiveServer(work_delay=1.0) as server:
        adk_live_resume.install()
        from google.adk.agents import LlmAgent

        agent = LlmAgent(name="assistant", model=server.gemini(MODEL, vertex=True))
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one", skip=working_utterance) == "echo: one"
            mark = await _mid_work(live, "two")
            await server.close_open(1011, "Internal error")
            assert await live.answer_after(mark, skip=working_utterance, timeout=15) == "echo: two"
            assert await live.say("recall", skip=working_utterance) == "you said: one | two"
            await live.close()
    first, second = server.connections[:2]
    assert first.transparent and second.resumed
    assert second.resume_handle == first.handle_issues[-1].handle
    assert first.handle_issues[-1].point == "working"
    assert server.user_turns_answered() == ["one", "two", "recall"]
    assert times_said(live, "echo: two") == 1
    assert server.resent_consumed() == [] and server.history_sends() == 0


async def test_calls_are_async_only_and_the_result_is_told_after_the_start(
    make_agent: AgentFactory,
) -> None:
    # ADK declares get_weather without a behavior (blocking); the model calls it
    # non-blocking all the same: it says the call started, and tells the result once ADK's
    # response arrives. (ADK 2.x declares it with parametersJsonSchema, which the service
    # refuses on this model at setup: the fake's setup rules are off to reach the calls.)
    async with FakeLiveServer(setup_rules=False) as server:
        agent = _agent(make_agent, server, tools=[get_weather])
        async with await LiveDriver.start(agent) as live:
            mark = live.send_text('call get_weather {"city": "Oslo"}')
            assert await live.answer_after(mark, timeout=15) == "get_weather started"
            told = await live.answer_after(mark, skip=lambda t: t.endswith(" started"))
            assert told == WEATHER
            await live.close()
    record = server.connections[0]
    assert [call.non_blocking for call in record.tool_calls] == [True]
    assert record.accepted_tool_response_ids == [record.tool_calls[0].id]
