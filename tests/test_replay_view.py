"""What the user sees after a replay, end to end.

Real ``Runner.run_live`` and google-genai against the fake server over TLS, both entry
points. After a drop, the unanswered utterance's audio is replayed from its start and the new
connection transcribes it again: the user must see its transcription once, and the ADK
session must store it once. A drop with a microphone that sent only silence loses nothing
worth a WARNING; voiced audio that left the replay window is.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from adk_live_resume.testing import FakeLiveServer, Fault, silence_pcm, speech_pcm
from adk_live_resume.testing.driver import LiveDriver

from .conftest import AgentFactory

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]

RATE = 16000
CHUNK = RATE * 2 // 50  # 20 ms of 16-bit mono PCM


def _chunks(pcm: bytes) -> list[bytes]:
    return [pcm[i : i + CHUNK] for i in range(0, len(pcm), CHUNK)]


async def _stream(live: LiveDriver, pcm: bytes, *, pace: float = 1.0) -> None:
    """Send ``pcm`` as a microphone would: 20 ms chunks, ``pace`` x real time."""
    for chunk in _chunks(pcm):
        live.send_audio(chunk)
        await asyncio.sleep(0.02 / pace)


def _squeeze(text: str) -> str:
    return "".join(text.split()).lower()


def _shown(events: list[Any], *, finished: bool) -> str:
    """The input transcription the client was shown: the pieces (``finished=False``), or
    the finished transcriptions (``finished=True``), joined."""
    return "".join(
        e.input_transcription.text
        for e in events
        if e.input_transcription is not None
        and e.input_transcription.text
        and bool(e.partial) is not finished
    )


async def _stored(live: LiveDriver) -> str:
    """The input transcription the ADK session stored, joined."""
    session = await live.runner.session_service.get_session(
        app_name=live.session.app_name, user_id=live.session.user_id, session_id=live.session.id
    )
    return "".join(
        e.input_transcription.text
        for e in session.events
        if e.input_transcription is not None and e.input_transcription.text and not e.partial
    )


async def test_an_utterance_replayed_after_a_drop_mid_answer_is_shown_once(
    make_agent: AgentFactory,
) -> None:
    """The answer to a spoken utterance is cut by a drop; the utterance is replayed and the
    new connection transcribes it again: the user saw it as it was spoken, and sees it
    nowhere again; it is answered once and the ADK session holds it once."""
    text = "tell me a story"
    async with asyncio.timeout(30), FakeLiveServer(chunk_delay=0.05) as server:
        server.script(Fault.abort(mid_turn=True), connection=1)
        agent = make_agent(server)
        async with await LiveDriver.start(agent) as live:
            mark = len(live.events)
            await _stream(live, speech_pcm(text, seconds=1.0) + silence_pcm(0.7), pace=4)
            cut = await live.wait_for_event(lambda e: e.interrupted, after=mark, timeout=10)
            answer = await live.answer_after(live.events.index(cut) + 1, timeout=15)
            assert answer == f"echo: {text}"
            assert await live.say("recall") == f"you said: {text}"
            await live.close()
            stored = await _stored(live)
        events = live.events[mark:]
    assert server.connections[0].ended_by == "fault"
    assert text in server.connections[1].user_turns, "the utterance was replayed"
    assert _squeeze(_shown(events, finished=False)) == _squeeze(text)
    assert _squeeze(_shown(events, finished=True)) == _squeeze(text)
    assert _squeeze(stored) == _squeeze(text)
    assert server.user_turns_answered() == [text, "recall"]


async def test_an_utterance_cut_by_a_drop_while_spoken_is_shown_once(
    make_agent: AgentFactory,
) -> None:
    """The socket drops while the user speaks, after part of the utterance was transcribed
    and shown; the utterance is replayed from its start: the part shown is not shown again,
    the rest is, and the finished transcription and the session hold the utterance whole."""
    text = "what is the weather like today"
    speech = speech_pcm(text, seconds=2.0)
    async with asyncio.timeout(30), FakeLiveServer() as server:
        # 2 s of speech is 100 chunks of 20 ms: the socket dies in the middle
        server.script(Fault.abort(after_client_messages=50), connection=1)
        agent = make_agent(server)
        async with await LiveDriver.start(agent) as live:
            mark = len(live.events)
            await _stream(live, speech + silence_pcm(0.7), pace=2)
            answer = await live.answer_after(mark, timeout=15)
            assert answer == f"echo: {text}"
            assert await live.say("recall") == f"you said: {text}"
            await live.close()
            stored = await _stored(live)
        events = live.events[mark:]
    first = server.connections[0]
    assert first.ended_by == "fault" and first.server_messages, "part of it was transcribed"
    heard_first = "".join(
        m["serverContent"]["inputTranscription"].get("text", "")
        for m in first.server_messages
        if "inputTranscription" in m.get("serverContent", {})
    )
    assert heard_first.strip(), "the first connection transcribed part of the utterance"
    assert text in server.connections[1].user_turns, "the utterance was replayed whole"
    assert _squeeze(_shown(events, finished=False)) == _squeeze(text)
    assert _squeeze(_shown(events, finished=True)) == _squeeze(text)
    assert _squeeze(stored) == _squeeze(text)
    assert server.user_turns_answered() == [text, "recall"]
