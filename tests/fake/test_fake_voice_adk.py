"""The fake server's voice behaviour through the REAL google-adk ``Runner.run_live``."""

from __future__ import annotations

from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.agents.run_config import RunConfig
from google.genai import types

from adk_live_resume.compat import adk_compat
from adk_live_resume.testing import FakeLiveServer, HandleSchedule, silence_pcm, speech_pcm
from adk_live_resume.testing.driver import LiveDriver

from ..helpers import get_weather

pytestmark = [pytest.mark.timeout(30), pytest.mark.e2e]


def get_time(zone: str) -> dict[str, Any]:
    """Return the time in a zone."""
    return {"zone": zone, "time": "9:00"}


@pytest.fixture(autouse=True)
def _patched(live_resume_patch: Any) -> None:
    """These tests are about the fake; stock ADK 1.34-1.35 and 2.2-2.3 never end run_live after
    ``LiveRequestQueue.close()`` once they hold a handle, so the patch drives the runs."""


async def test_adk_spoken_turns_with_barge_in(fake_live_server_factory: Any) -> None:
    server: FakeLiveServer = await fake_live_server_factory(
        chunk_delay=0.05, handle_schedule=HandleSchedule(every_audio_ms=300)
    )
    agent = LlmAgent(name="voice", model=server.gemini())
    async with await LiveDriver.start(agent) as live:
        mark = len(live.events)
        live.send_audio(silence_pcm(0.4))
        for start in range(0, 40000, 3200):  # 100 ms chunks, as a microphone sends them
            live.send_audio(
                (speech_pcm("good morning", seconds=0.6) + silence_pcm(0.65))[start : start + 3200]
            )
        assert await live.answer_after(mark) == "echo: good morning"
        mark = live.send_text("a rather long answer please")
        await live.wait_for_event(lambda e: bool(e.partial), after=mark)
        live.send_audio(speech_pcm("wait", seconds=0.3) + silence_pcm(0.6))
        # ADK 1.27 does not close the cut answer in its events, so its text may lead the answer
        assert (await live.answer_after(mark)).endswith("echo: wait")
        await live.close()
    record = (await server.wait_for_connections(1, finished=True))[0]
    assert [(t.text, t.how) for t in record.heard] == [
        ("good morning", "spoken"),
        ("a rather long answer please", "typed"),
        ("wait", "spoken"),
    ]
    assert record.interrupted == 1
    assert server.user_turns_answered() == ["good morning", "wait"]
    assert "idle_speaking" in {i.point for i in record.handle_issues}
    assert record.errors == []


async def test_adk_parallel_and_sequential_tool_calls(fake_live_server_factory: Any) -> None:
    server: FakeLiveServer = await fake_live_server_factory(chunk_delay=0.001)
    agent = LlmAgent(name="tools", model=server.gemini(), tools=[get_weather, get_time])
    async with await LiveDriver.start(agent) as live:
        parallel = await live.say(
            'call get_weather {"city": "Oslo"} and call get_time {"zone": "Z"}'
        )
        sequential = await live.say(
            'call get_time {"zone": "A"} then call get_weather {"city": "B"}'
        )
        await live.close()
    assert parallel == (
        'get_weather returned {"city":"Oslo","sky":"clear"}; '
        'get_time returned {"time":"9:00","zone":"Z"}'
    )
    assert sequential == (
        'get_time returned {"time":"9:00","zone":"A"}; '
        'get_weather returned {"city":"B","sky":"clear"}'
    )
    calls = server.tool_calls_issued()
    assert [(c.name, c.message) for c in calls] == [
        ("get_weather", 1),
        ("get_time", 1),
        ("get_time", 2),
        ("get_weather", 3),
    ]
    assert all(len(c.responses) == 1 for c in calls)  # every call answered once, by its id


@pytest.mark.skipif(
    not adk_compat.speaks_gemini_3_live("gemini-3.1-flash-live-preview"),
    reason="this google-adk release does not know the Gemini 3.x Live dialect",
)
async def test_adk_speaks_the_gemini_3_dialect_the_strict_fake_accepts(
    fake_live_server_factory: Any,
) -> None:
    server: FakeLiveServer = await fake_live_server_factory(chunk_delay=0.001)
    agent = LlmAgent(
        name="g3", model=server.gemini("gemini-3.1-flash-live-preview"), tools=[get_weather]
    )
    history = [("user", "earlier"), ("model", "echo: earlier")]
    run_config = RunConfig(
        response_modalities=[types.Modality.TEXT],
        session_resumption=types.SessionResumptionConfig(),
    )
    async with await LiveDriver.start(agent, history=history, run_config=run_config) as live:
        assert await live.say("what did I say first?") == "you first said: earlier"
        answer = await live.say('call get_weather {"city": "Rome"}')
        assert answer == 'get_weather returned {"city":"Rome","sky":"clear"}'
        await live.close()
    record = (await server.wait_for_connections(1, finished=True))[0]
    assert record.rejected_client_content == [] and record.ended_by == "client"
    assert [t.how for t in record.heard] == ["history", "typed", "typed"]


@pytest.mark.parametrize("vertex", [False, True], ids=["gemini_api", "vertex"])
async def test_adk_keeps_a_spoken_turn_in_its_session_on_both_dialects(
    fake_live_server_factory: Any, vertex: bool
) -> None:
    """Vertex AI ends a transcription with ``finished: true`` (google-adk 1.x stores a spoken
    turn in the session only then); the Gemini API sends no end, and ADK flushes the
    transcription at ``generationComplete``. Either way the session keeps what was said, which
    is what a fresh session's history is rebuilt from."""
    server: FakeLiveServer = await fake_live_server_factory(chunk_delay=0.01)
    agent = LlmAgent(name="voice", model=server.gemini(vertex=vertex))
    async with await LiveDriver.start(agent) as live:
        mark = len(live.events)
        live.send_audio(speech_pcm("spoken words", seconds=0.6) + silence_pcm(0.65))
        assert await live.answer_after(mark) == "echo: spoken words"
        await live.close()
        session = await live.runner.session_service.get_session(
            app_name=live.session.app_name, user_id=live.session.user_id, session_id=live.session.id
        )
    record = (await server.wait_for_connections(1, finished=True))[0]
    ends = [
        m["serverContent"]["inputTranscription"]
        for m in record.server_messages
        if "finished" in m.get("serverContent", {}).get("inputTranscription", {})
    ]
    assert [end["finished"] for end in ends] == ([True] if vertex else []), ends
    heard = "".join(
        e.input_transcription.text
        for e in session.events
        if e.input_transcription is not None and e.input_transcription.text and not e.partial
    )
    assert heard.replace(" ", "") == "spokenwords", [e.input_transcription for e in session.events]
