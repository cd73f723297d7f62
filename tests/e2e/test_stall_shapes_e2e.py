"""The stall shapes the field reported in late 2026, end to end, and the nudge rung.

A model that never answers after a barge-in (``interrupted``; cookbook issue 1228) is a
silence the stall watch counts; the same canned answer to every turn (forum 142056) is
counted by ``degenerate_turns`` (the same words answering another turn); with
``ResumePolicy.stall_nudge`` a silence is first nudged once with a realtime text on the same
connection (never sent again by a later one), and only then recovered. Real
``Runner.run_live``, real google-genai, real TLS websockets on 127.0.0.1, the fake's
``Fault.stall`` shapes, both entry points (``make_agent``).
"""

from __future__ import annotations

import asyncio

import pytest

from adk_live_resume import ResumePolicy
from adk_live_resume.rules.stall_rule import NUDGE
from adk_live_resume.testing import FakeLiveServer, Fault, LatencyRelay, silence_pcm, speech_pcm
from adk_live_resume.testing.driver import LiveDriver
from adk_live_resume.testing.faults import CANNED_ANSWER

from ..conftest import AgentFactory
from ..helpers import times_said
from .test_stall_e2e import Reports

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]

LONG = "tell me about the lighthouse on the northern cape"


async def _barge_in(live: LiveDriver, server: FakeLiveServer) -> int:
    """Ask for a long answer and, while it streams, type the next turn over it (the server
    cuts the answer: ``interrupted``); return the mark before the second turn."""
    mark = live.send_text(LONG)
    await server.wait_for(
        lambda: any("modelTurn" in str(m) for m in server.connections[-1].server_messages[-2:]),
        10,
        what="the long answer streaming",
    )
    second = len(live.events)
    live.send_text("two")
    await server.wait_for(lambda: server.connections[-1].interrupted > 0, 10, what="the cut")
    del mark
    return second


@pytest.mark.parametrize("nudge", [False, True], ids=["no-nudge", "nudge"])
async def test_no_answer_after_a_barge_in_is_a_stall_recovered_once(
    make_agent: AgentFactory, nudge: bool
) -> None:
    policy = ResumePolicy(stall_timeout=1.0, stall_nudge=nudge)
    with Reports() as reports:
        async with asyncio.timeout(45), FakeLiveServer(chunk_delay=0.3) as server:
            agent = make_agent(server, policy=policy)
            async with await LiveDriver.start(agent) as live:
                assert await live.say("one") == "echo: one"
                server.script(Fault.stall("after_barge_in"), connection=1)
                mark = await _barge_in(live, server)
                assert await live.answer_after(mark, timeout=20) == "echo: two"
                assert await live.say("three") == "echo: three"
                await live.close()
    first, second = server.connections[:2]
    assert first.interrupted >= 1 and "two" in first.stalled_turns
    assert second.resumed and second.user_turns.count("two") == 1
    assert server.user_turns_answered().count("two") == 1 and times_said(live, "echo: two") == 1
    assert server.user_turns_answered().count(LONG) <= 1
    assert reports.steps() == [("stall", True)]
    nudges = [t for c in server.connections for t in c.user_turns if t == NUDGE]
    if nudge:  # once, on the stalled connection, never sent again by the next
        assert first.user_turns[-1] == NUDGE and nudges == [NUDGE]
        assert "nudge" in reports.reconnects[0].stall
    else:
        assert nudges == []


async def test_a_barge_in_sent_before_the_answer_it_cuts_was_read_is_a_stall_recovered_once(
    make_agent: AgentFactory,
) -> None:
    # Behind a 0.2 s one-way latency the client types "two" before it reads the first words
    # of the long answer (which answer the long turn, not "two"): the wait for "two" begins
    # at the cut that those words end with, and the model's silence after it is a stall.
    policy = ResumePolicy(stall_timeout=1.0)
    with Reports() as reports:
        async with (
            asyncio.timeout(45),
            FakeLiveServer(chunk_delay=0.3) as server,
            LatencyRelay(server, one_way=0.2) as relay,
        ):
            agent = make_agent(relay, policy=policy)
            async with await LiveDriver.start(agent) as live:
                assert await live.say("one") == "echo: one"
                server.script(Fault.stall("after_barge_in"), connection=1)
                start = live.send_text(LONG)
                await server.wait_for(
                    lambda: any(
                        "modelTurn" in str(m) for m in server.connections[0].server_messages[-2:]
                    ),
                    10,
                    what="the long answer streaming",
                )
                mark = len(live.events)
                live.send_text("two")
                assert not any(e.partial for e in live.events[start:mark])  # (read later)
                assert await live.answer_after(mark, timeout=20) == "echo: two"
                await live.close()
    first, second = server.connections[:2]
    assert first.interrupted == 1 and first.stalled_turns == ["two"]
    assert second.resumed and second.user_turns.count("two") == 1
    assert server.user_turns_answered().count("two") == 1 and times_said(live, "echo: two") == 1
    assert server.user_turns_answered().count(LONG) <= 1
    assert reports.steps() == [("stall", True)]
    assert "no answer" in reports.reconnects[0].stall


async def test_the_same_canned_answer_to_another_turn_is_a_degenerate_stall(
    make_agent: AgentFactory,
) -> None:
    # The canned answers are answers for all the client can tell: ADK keeps them in its
    # session, so the fresh session's history holds them and their turns are not asked again
    # (a limitation: which words were canned is known only once they repeat). The stall is
    # seen at the repeat, and the next turn is answered by the fresh session.
    policy = ResumePolicy(stall_timeout=0, degenerate_turns=1)
    with Reports() as reports:
        async with asyncio.timeout(45), FakeLiveServer() as server:
            agent = make_agent(server, policy=policy)
            async with await LiveDriver.start(agent) as live:
                assert await live.say("one") == "echo: one"
                server.script(Fault.stall("canned"), connection=1)
                assert await live.say("two") == CANNED_ANSWER
                assert await live.say("three") == CANNED_ANSWER
                await server.wait_for_connections(2)
                assert await live.say("four") == "echo: four"
                await live.close()
    first, second = server.connections[:2]
    assert first.stalled_turns == ["two", "three"] and first.ended_by == "client"
    assert not second.resumed and second.history_sends == 1
    assert server.user_turns_answered() == ["one", "four"]
    assert reports.steps() == [("stall", False)]
    assert "the same answer as to the turn before" in reports.reconnects[0].stall


async def test_the_same_words_typed_again_answered_alike_are_no_stall(
    make_agent: AgentFactory,
) -> None:
    policy = ResumePolicy(stall_timeout=0, degenerate_turns=1)
    async with asyncio.timeout(30), FakeLiveServer() as server:
        agent = make_agent(server, policy=policy)
        async with await LiveDriver.start(agent) as live:
            assert await live.say("again") == "echo: again"
            assert await live.say("again") == "echo: again"
            await live.close()
    assert len(server.connections) == 1


async def test_the_same_words_said_over_their_own_answer_and_answered_alike_are_no_stall(
    make_agent: AgentFactory,
) -> None:
    # The user says "lights on" again while its answer streams: the server cuts the answer
    # and transcribes the words again before the next answer ends, so the turn reads
    # "lights on lights on"; the model answers it as it answered the first. The same words
    # answered alike are no degenerate turn (only other words answered alike are).
    policy = ResumePolicy(stall_timeout=0, degenerate_turns=1)
    utterance = speech_pcm("lights on", seconds=0.6) + silence_pcm(0.7)
    with Reports() as reports:
        async with asyncio.timeout(45), FakeLiveServer(chunk_delay=0.3) as server:
            agent = make_agent(server, policy=policy)
            async with await LiveDriver.start(agent) as live:
                mark = len(live.events)
                live.send_audio(utterance)
                assert await live.answer_after(mark, timeout=15) == "echo: lights on"
                first = server.connections[0]
                live.send_audio(utterance)
                await server.wait_for(
                    lambda: any("modelTurn" in str(m) for m in first.server_messages[-2:]),
                    10,
                    what="the second answer streaming",
                )
                mark = len(live.events)
                live.send_audio(utterance)
                await server.wait_for(lambda: first.interrupted > 0, 10, what="the cut")
                assert await live.answer_after(mark, timeout=15) == "echo: lights on"
                await asyncio.sleep(0.5)  # (a stall would be seen at the turn's end)
                await live.close()
    assert len(server.connections) == 1 and reports.steps() == []
