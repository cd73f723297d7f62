"""The server's ``speechState`` read from the raw frame, end to end: the stall clock of a
voice turn whose words the server does not transcribe.

``serverContent.speechState`` (``SPEECH`` / ``NON_SPEECH``: the Vertex AI RPC reference,
measured about 0.24 s after onset and with the final transcription; notes, "Field facts of
2026-11-29") is the server's own voice activity detection; google-genai drops it, so the
loop reads it from the frame as it arrives. With input transcription off nothing else tells
the loop that the server heard an utterance end: ``NON_SPEECH`` starts the stall clock, so a
session that never answers the utterance is recovered (resumed, the utterance replayed) and
the utterance answered once. Real ``Runner.run_live``, real google-genai, real TLS websockets
on 127.0.0.1, both entry points (``make_agent``).
"""

from __future__ import annotations

import asyncio

import pytest
from google.adk.agents.run_config import RunConfig
from google.genai import types

from adk_live_resume import ResumePolicy
from adk_live_resume.testing import FakeLiveServer, Fault, silence_pcm, speech_pcm
from adk_live_resume.testing.driver import LiveDriver

from ..conftest import AgentFactory, stream_pcm

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]

#: Text answers, handles on, no input transcription: the server says only ``speechState``.
UNTRANSCRIBED = RunConfig(
    response_modalities=[types.Modality.TEXT],
    session_resumption=types.SessionResumptionConfig(),
    input_audio_transcription=None,
)


async def test_an_utterance_answered_by_silence_is_recovered_from_its_speech_state(
    make_agent: AgentFactory,
) -> None:
    text = "is anybody there"
    policy = ResumePolicy(stall_timeout=1.5)
    async with asyncio.timeout(45), FakeLiveServer() as server:
        agent = make_agent(server, policy=policy)
        async with await LiveDriver.start(agent, run_config=UNTRANSCRIBED) as live:
            assert await live.say("one") == "echo: one"
            server.script(Fault.stall("silent"), connection=1)  # (open: armed at once)
            mark = len(live.events)
            await stream_pcm(live, speech_pcm(text, seconds=1.2) + silence_pcm(0.7))
            assert await live.answer_after(mark, timeout=15) == f"echo: {text}"
            await live.close()
    first, second = server.connections[:2]
    assert "inputAudioTranscription" not in str(first.setup)
    states = [
        m["serverContent"]["speechState"] for m in first.server_messages if "speechState" in str(m)
    ]
    assert states == ["SPEECH", "NON_SPEECH"]
    assert first.stalled_turns == [text]
    assert second.resumed and text in second.user_turns
    assert server.user_turns_answered().count(text) == 1
