"""Spoken answers without output transcription, end to end: real ``Runner.run_live``, real
google-genai, real TLS websockets, the fake server. Both entry points.

A voice app that shows no text turns output transcription off: the model's answers then
reach the client as audio parts only. An utterance answered that way is answered: a drop
after the answer must not make the model answer it again, and a goAway after it finds the
session at a safe point at once instead of waiting for its deadline.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from google.genai import types

from adk_live_resume import ResumePolicy
from adk_live_resume.testing import FakeLiveServer, silence_pcm, speech_pcm
from adk_live_resume.testing.driver import LiveDriver

from ..conftest import AgentFactory, stream_pcm

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]


def audio_only(*, input_transcription: bool) -> Any:
    """Audio answers with output transcription off (input transcription as given)."""
    from google.adk.agents.run_config import RunConfig

    return RunConfig(
        response_modalities=[types.Modality.AUDIO],
        session_resumption=types.SessionResumptionConfig(),
        output_audio_transcription=None,
        input_audio_transcription=(
            types.AudioTranscriptionConfig() if input_transcription else None
        ),
    )


def spoken_answers(live: LiveDriver, mark: int) -> int:
    """Completed turns with model audio among the events after ``mark``."""
    count, audio = 0, False
    for event in live.events[mark:]:
        content = getattr(event, "content", None)
        for part in (content.parts or []) if content is not None else []:
            if part.inline_data is not None and part.inline_data.data:
                audio = True
        if getattr(event, "turn_complete", False) and audio:
            count, audio = count + 1, False
    return count


@pytest.mark.parametrize("input_transcription", [True, False], ids=["heard", "not_heard"])
async def test_an_utterance_answered_in_audio_only_is_not_answered_again_after_a_drop(
    make_agent: AgentFactory, input_transcription: bool
) -> None:
    async with asyncio.timeout(40), FakeLiveServer() as server:
        agent = make_agent(server)
        config = audio_only(input_transcription=input_transcription)
        async with await LiveDriver.start(agent, run_config=config) as live:
            await stream_pcm(
                live, speech_pcm("hello there", seconds=0.5) + silence_pcm(0.7), pace=4
            )
            await server.wait_for(lambda: server.user_turns_answered() == ["hello there"], 10)
            first = server.connections[0]
            await server.wait_for(lambda: bool(first.handles_issued), 5, what="a handle")
            # the answer and its handle reached the loop (ADK yields the turn's end after both)
            await live.wait_for_event(lambda event: getattr(event, "turn_complete", False))
            assert spoken_answers(live, 0) == 1, "answered in audio"
            await server.close_open(1011)
            await server.wait_for_connections(2)
            live.send_text("after the drop")
            await server.wait_for(lambda: "after the drop" in server.user_turns_answered(), 10)
            await asyncio.sleep(0.3)  # nothing more may arrive
            await live.close()
        assert not any(getattr(e, "output_transcription", None) for e in live.events)
        second = server.connections[1]
        assert second.resumed and second.resume_handle == first.handles_issued[-1]
        assert second.user_turns == ["after the drop"], "the answered utterance is not sent again"
        assert server.user_turns_answered() == ["hello there", "after the drop"]


async def test_a_go_away_after_an_answer_in_audio_only_moves_at_once(
    make_agent: AgentFactory,
) -> None:
    # goAway 1 s after accept with 5 s left; with the margin, 4.5 s before the deadline.
    async with (
        asyncio.timeout(40),
        FakeLiveServer(connection_lifetime=6.0, go_away_lead=5.0) as server,
    ):
        agent = make_agent(server, policy=ResumePolicy(go_away_margin=0.5))
        config = audio_only(input_transcription=True)
        async with await LiveDriver.start(agent, run_config=config) as live:
            await stream_pcm(
                live, speech_pcm("hello there", seconds=0.3) + silence_pcm(0.7), pace=10
            )
            await server.wait_for(lambda: server.user_turns_answered() == ["hello there"], 10)
            await server.wait_for_connections(2)
            first = server.connections[0]
            await server.wait_for(lambda: first.ended_at is not None, 10, what="the old one ended")
            await live.close()
        assert first.go_away_sent and first.ended_by == "client"
        assert first.ended_at is not None
        took = first.ended_at - first.accepted_at
        assert took < 3.0, f"the move waited for the goAway's deadline ({took:.2f} s)"
        assert server.user_turns_answered() == ["hello there"]
