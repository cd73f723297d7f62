"""Healthy quiet sessions are not stalls: nothing may fire while a tool runs, the model says
it works, the user says nothing, an answer is short, or the session moves after a goAway.

End to end on both entry points, with ``stall_timeout`` scaled down (1 s, or 0.5 s) and every
quiet stretch several times longer than it, as a minute is to the default 15 s.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from google.genai import types

import adk_live_resume
from adk_live_resume import ReconnectInfo, ResumePolicy
from adk_live_resume.compat import adk_compat
from adk_live_resume.testing import FakeLiveServer, Fault
from adk_live_resume.testing.driver import LiveDriver
from adk_live_resume.testing.speech import silence_pcm, speech_pcm

from ..conftest import AgentFactory, non_blocking, stream_pcm

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]

STALL = ResumePolicy(stall_timeout=1.0, degenerate_turns=1)


class Reconnects:
    def __enter__(self) -> list[ReconnectInfo]:
        self.seen: list[ReconnectInfo] = []
        self._remove = adk_live_resume.on_reconnect(self.seen.append)
        return self.seen

    def __exit__(self, *exc: object) -> None:
        self._remove()


async def test_a_blocking_tool_longer_than_the_timeout_is_no_stall(
    make_agent: AgentFactory,
) -> None:
    async def slow_lookup(city: str) -> dict[str, Any]:
        """Look a city up, slowly."""
        await asyncio.sleep(3.0)
        return {"city": city}

    with Reconnects() as seen:
        async with FakeLiveServer() as server:
            agent = make_agent(server, tools=[slow_lookup], policy=STALL)
            async with await LiveDriver.start(agent) as live:
                answer = await live.say('call slow_lookup {"city": "Oslo"}', timeout=20)
                assert answer == 'slow_lookup returned {"city":"Oslo"}'
                assert await live.close() is None
            assert len(server.connections) == 1
    assert seen == []


@pytest.mark.skipif(
    not adk_compat.runs_tools_in_background(),
    reason="the installed google-adk has no NON_BLOCKING tools (they came in 1.37 and 2.5)",
)
async def test_a_non_blocking_tool_and_its_late_result_are_no_stall(
    make_agent: AgentFactory,
) -> None:
    async def slow_mail(to: str) -> dict[str, Any]:
        """Send a mail, slowly."""
        await asyncio.sleep(2.5)
        return {"sent": to}

    with Reconnects() as seen:
        async with FakeLiveServer() as server:
            agent = make_agent(server, tools=[non_blocking(slow_mail)], policy=STALL)
            async with await LiveDriver.start(agent) as live:
                answer = await live.say('call slow_mail {"to": "ada"}', timeout=10)
                assert answer == "slow_mail started"
                await server.wait_for(lambda: server.connections[0].tool_responses != [], 10)
                await asyncio.sleep(2.5)  # the result told, or not: nothing waits for it
                assert await live.say("after") == "echo: after"
                assert await live.close() is None
            assert len(server.connections) == 1
    assert seen == []


async def test_a_model_that_says_it_works_is_no_stall_until_it_stops_saying_so(
    make_agent: AgentFactory,
) -> None:
    if "interaction_status" not in types.LiveServerContent.model_fields:
        pytest.skip("this google-genai does not read serverContent.interactionStatus")
    with Reconnects() as seen:
        async with FakeLiveServer() as server:
            agent = make_agent(server, policy=STALL)
            async with await LiveDriver.start(agent) as live:
                assert await live.say("first") == "echo: first"
                server.script(Fault.stall(), connection=1)  # (no answer: only the status)
                think = live.send_text("think hard")
                await server.wait_for(lambda: server.connections[0].stalled_turns != [], 10)
                working = {"serverContent": {"interactionStatus": "IN_PROGRESS"}}
                for _ in range(6):  # 3 s of work, three times the timeout
                    await server.send_message_now(working, connection=1)
                    await asyncio.sleep(0.5)
                assert seen == [] and len(server.connections) == 1
                idle = {"serverContent": {"interactionStatus": "IDLE"}}
                await server.send_message_now(idle, connection=1)
                await server.wait_for_connections(2, timeout=10)
                # the recovery asks the turn again; it is answered before the user speaks
                # on (a turn typed over that answer would cut it, and google-adk 1.x shows
                # a cut answer's text as final text with no ``interrupted``)
                assert await live.answer_after(think) == "echo: think hard"
                assert await live.say("after") == "echo: after"
                await live.close()
    assert [r.reason for r in seen] == ["stall"]
    assert server.user_turns_answered() == ["first", "think hard", "after"]


async def test_a_user_who_says_nothing_for_a_long_while_is_no_stall(
    make_agent: AgentFactory,
) -> None:
    policy = ResumePolicy(stall_timeout=0.5, degenerate_turns=1)
    with Reconnects() as seen:
        async with FakeLiveServer() as server:
            agent = make_agent(server, policy=policy)
            async with await LiveDriver.start(agent) as live:
                await stream_pcm(live, speech_pcm("hello", seconds=0.4) + silence_pcm(0.6))
                await server.wait_for(lambda: server.user_turns_answered() == ["hello"], 10)
                await stream_pcm(live, silence_pcm(3.0, noise=50))  # six timeouts of room noise
                await asyncio.sleep(1.0)  # and nothing at all
                assert await live.close() is None
            assert len(server.connections) == 1
    assert seen == []


async def test_a_user_who_talks_over_the_answers_is_no_stall(make_agent: AgentFactory) -> None:
    """Every utterance starts while the model still answers the one before (``interrupted``
    cuts output: that answered), and the next begins before ``stall_timeout`` of quiet."""
    with Reconnects() as seen:
        async with FakeLiveServer(chunk_delay=0.6) as server:
            agent = make_agent(server, policy=ResumePolicy(stall_timeout=1.0))
            async with await LiveDriver.start(agent) as live:
                for number in range(4):
                    # (an answer of five chunks, 2.4 s: it still streams when the next
                    # utterance begins, even where a loaded machine streams the microphone
                    # slower than real time)
                    question = f"a long question number {number} about the weather at sea tomorrow"
                    utterance = speech_pcm(question, seconds=0.6)
                    await stream_pcm(live, utterance + silence_pcm(1.4))
                assert await live.close() is None
            assert len(server.connections) == 1 and server.connections[0].interrupted >= 2
    assert seen == []


async def test_a_legitimately_short_answer_is_no_stall(make_agent: AgentFactory) -> None:
    with Reconnects() as seen:
        async with FakeLiveServer() as server:
            agent = make_agent(server, policy=STALL)
            async with await LiveDriver.start(agent) as live:
                assert await live.say("hi") == "echo: hi"
                assert await live.say("how many turns?") == "1"
                await asyncio.sleep(1.5)
                assert await live.close() is None
            assert len(server.connections) == 1
    assert seen == []


async def test_a_go_away_move_while_a_turn_waits_is_no_stall(make_agent: AgentFactory) -> None:
    with Reconnects() as seen:
        async with FakeLiveServer(chunk_delay=0.4) as server:
            agent = make_agent(server, policy=ResumePolicy(stall_timeout=1.0, go_away_margin=0))
            async with await LiveDriver.start(agent) as live:
                assert await live.say("first") == "echo: first"
                mark = live.send_text("a long answer please")
                server.go_away_now(1.5, connection=1)
                assert await live.answer_after(mark, timeout=20) == "echo: a long answer please"
                await server.wait_for_connections(2, timeout=10)
                assert await live.say("after", timeout=10) == "echo: after"
                await asyncio.sleep(1.5)
                assert await live.close() is None
    assert seen and {r.reason for r in seen} == {"go_away"}


async def test_an_extended_thinking_model_working_longer_than_the_timeout_is_no_stall(
    make_agent: AgentFactory,
) -> None:
    from adk_live_resume.testing.generation import WORKING

    with Reconnects() as seen:
        async with FakeLiveServer(work_delay=3.0) as server:  # three timeouts of work
            agent = make_agent(server, model="gemini-3.8-live-extended-thinking", policy=STALL)
            async with await LiveDriver.start(agent) as live:
                answer = await live.say(
                    "think", timeout=20, skip=lambda text: text.startswith(WORKING)
                )
                assert answer == "echo: think"
                assert await live.close() is None
            assert len(server.connections) == 1
    assert seen == []


async def test_an_utterance_longer_than_the_timeout_is_no_stall(
    make_agent: AgentFactory,
) -> None:
    # 4.5 s of speech, four and a half timeouts: the user speaks, nothing is owed yet.
    with Reconnects() as seen:
        async with FakeLiveServer() as server:
            agent = make_agent(server, policy=STALL)
            async with await LiveDriver.start(agent) as live:
                words = "a long story that takes the user a while to tell"
                await stream_pcm(live, speech_pcm(words, seconds=4.5) + silence_pcm(0.8))
                await server.wait_for(lambda: server.user_turns_answered() == [words], 15)
                assert await live.close() is None
            assert len(server.connections) == 1
    assert seen == []


async def test_answer_chunks_farther_apart_than_the_timeout_with_idle_handles_are_no_stall(
    make_agent: AgentFactory,
) -> None:
    # An answer streams one chunk every 1.5 s (one and a half timeouts) and handles come
    # while the model is idle: the first chunk answered the turn; the rest is the answer.
    from adk_live_resume.testing import HandleSchedule

    schedule = HandleSchedule(idle_interval=0.3)
    with Reconnects() as seen:
        async with FakeLiveServer(chunk_delay=1.5, handle_schedule=schedule) as server:
            agent = make_agent(server, policy=STALL)
            async with await LiveDriver.start(agent) as live:
                loop = asyncio.get_running_loop()
                asked = loop.time()
                text = "a long answer please, in several pieces"
                assert await live.say(text, timeout=30) == f"echo: {text}"
                assert loop.time() - asked > 3.0, "at least two gaps of 1.5 s"
                await asyncio.sleep(1.5)  # idle, handles coming
                assert await live.close() is None
            [connection] = server.connections
            assert len(connection.handles_issued) >= 3
    assert seen == []
