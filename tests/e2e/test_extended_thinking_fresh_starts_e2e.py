"""A fresh session started while a model works in the background: the request is answered once.

Real ``Runner.run_live``, real google-genai, real TLS websockets on 127.0.0.1, the fake's
extended-thinking family: for each request the model first says ``working on: <request>``,
ending that utterance with ``turnComplete`` and ``interactionStatus: IN_PROGRESS``, works for
the server's ``work_delay`` and then answers, ending with ``IDLE``. ADK stores the working
utterance as a model turn; a fresh session whose history ended with it would take the request
for answered. The connection is lost mid-work (1011 "Deadline expired", the 58-minute close of
3.8) and its resume refused with 1007, as the field reports: the run starts a fresh session
with the conversation rebuilt, whose history must end with the request (typed, or the spoken
request's transcription: held once, not also replayed as audio). Both entry points.
"""

from __future__ import annotations

import pytest

from adk_live_resume import ResumePolicy
from adk_live_resume.testing import FakeLiveServer, Fault
from adk_live_resume.testing.driver import LiveDriver
from adk_live_resume.testing.generation import WORKING
from adk_live_resume.testing.speech import silence_pcm, speech_pcm

from ..conftest import AgentFactory
from ..helpers import times_said, working_utterance

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]

MODEL = "gemini-3.8-live-extended-thinking"
#: 1007 refusals of an audio session are a session limit unless it has a sliding window.
POLICY = ResumePolicy(sliding_window=True)


async def _lose_mid_work(server: FakeLiveServer) -> None:
    """The connection closes mid-work and the next one's resume is refused with 1007."""
    server.script(Fault.refuse_resume(code=1007), connection=len(server.connections) + 1)
    await server.close_open(1011, "Deadline expired before operation could complete.")


async def test_a_typed_request_the_model_worked_on_is_answered_by_the_fresh_session(
    make_agent: AgentFactory,
) -> None:
    async with FakeLiveServer(work_delay=3.0) as server:
        agent = make_agent(server, model=MODEL, policy=POLICY)
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one", skip=working_utterance) == "echo: one"
            mark = live.send_text("two")
            assert await live.answer_after(mark) == WORKING + "two"
            await _lose_mid_work(server)
            assert await live.answer_after(mark, skip=working_utterance, timeout=15) == "echo: two"
            recalled = await live.say("recall", skip=working_utterance, timeout=15)
            await live.close()
    fresh = server.connections[-1]
    assert not fresh.resumed and fresh.history_sends == 1
    assert server.connections[1].ended_by == "refused"
    assert recalled == "you said: one | two"
    assert server.user_turns_answered().count("two") == 1
    assert times_said(live, "echo: two") == 1
    assert server.duplicate_history_sends() == 0


async def test_a_spoken_request_the_model_worked_on_is_held_once_by_the_fresh_session(
    make_agent: AgentFactory,
) -> None:
    # (chunks 0.25 s apart: the utterance ends well after the microphone's last sound)
    async with FakeLiveServer(work_delay=3.0, chunk_delay=0.25) as server:
        agent = make_agent(server, model=MODEL, policy=POLICY)
        async with await LiveDriver.start(agent) as live:
            mark = len(live.events)
            live.send_audio(speech_pcm("spoken words", seconds=0.6))
            for _ in range(7):  # the user has gone quiet (the energy check's hangover)
                live.send_audio(silence_pcm(0.1))
            assert await live.answer_after(mark, timeout=15) == WORKING + "spoken words"
            await _lose_mid_work(server)
            answer = await live.answer_after(mark, skip=working_utterance, timeout=15)
            assert answer == "echo: spoken words"
            recalled = await live.say("recall", skip=working_utterance, timeout=15)
            await live.close()
    fresh = server.connections[-1]
    assert not fresh.resumed and fresh.history_sends == 1
    assert recalled == "you said: spoken words", "the utterance held once"
    assert [turn.how for turn in fresh.heard if turn.text == "spoken words"] == ["history"]
    assert server.user_turns_answered().count("spoken words") == 1
    assert times_said(live, "echo: spoken words") == 1
