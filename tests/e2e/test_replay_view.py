"""What the user sees after a replay, end to end.

Real ``Runner.run_live`` and google-genai against the fake server over TLS, both entry
points. After a drop, the unanswered utterance's audio is replayed from its start and the new
connection transcribes it again: the user must see its transcription once, and the ADK
session must store it once. A drop with a microphone that sent only silence loses nothing
worth a WARNING; voiced audio that left the replay window is.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

import adk_live_resume
from adk_live_resume import ReconnectInfo, ResumePolicy
from adk_live_resume.testing import FakeLiveServer, Fault, silence_pcm, speech_pcm
from adk_live_resume.testing.driver import LiveDriver

from ..conftest import AgentFactory, stream_pcm

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]


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
            await stream_pcm(live, speech_pcm(text, seconds=1.0) + silence_pcm(0.7), pace=4)
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


async def test_on_vertex_ai_an_utterance_cut_while_spoken_is_shown_once(
    make_agent: AgentFactory,
) -> None:
    """With ``transparent`` resumption the index says which messages the server consumed;
    it holds no unfinished utterance, so the utterance cut by the drop is replayed from its
    start: the part already shown is not shown again, and Vertex AI's ``finished``
    transcription reads whole, once."""
    from google.adk.agents import LlmAgent

    from adk_live_resume import ResumableLlmAgent

    text = "what is the weather like today"
    async with asyncio.timeout(30), FakeLiveServer() as server:
        # 2 s of speech is 100 chunks of 20 ms: the socket dies in the middle
        server.script(Fault.abort(after_client_messages=50), connection=1)
        make_agent(server)  # installs the patch for the "install" entry point
        cls = LlmAgent if make_agent.entry == "install" else ResumableLlmAgent
        agent = cls(name="assistant", model=server.gemini(vertex=True))
        async with await LiveDriver.start(agent) as live:
            mark = len(live.events)
            await stream_pcm(live, speech_pcm(text, seconds=2.0) + silence_pcm(0.7), pace=2)
            assert await live.answer_after(mark, timeout=15) == f"echo: {text}"
            assert await live.say("recall") == f"you said: {text}"
            await live.close()
            stored = await _stored(live)
        events = live.events[mark:]
    assert all(c.transparent for c in server.connections)
    assert text in server.connections[1].user_turns, "the utterance was replayed whole"
    assert _squeeze(_shown(events, finished=False)) == _squeeze(text)
    assert _squeeze(_shown(events, finished=True)) == _squeeze(text)
    assert _squeeze(stored) == _squeeze(text)
    assert server.user_turns_answered() == [text, "recall"]


async def test_a_second_drop_during_the_replay_still_shows_the_utterance_once(
    make_agent: AgentFactory,
) -> None:
    """The connection that replays the utterance drops too, in the middle of the replay,
    after its transcription began: the third connection replays it again, and the user
    still sees its transcription once."""
    text = "tell me a story"
    async with asyncio.timeout(30), FakeLiveServer(chunk_delay=0.05) as server:
        server.script(Fault.abort(mid_turn=True), connection=1)
        # the replay is 85 chunks of 20 ms (1 s of speech, 0.7 s of silence)
        server.script(Fault.abort(after_client_messages=30), connection=2)
        agent = make_agent(server)
        async with await LiveDriver.start(agent) as live:
            mark = len(live.events)
            await stream_pcm(live, speech_pcm(text, seconds=1.0) + silence_pcm(0.7), pace=4)
            cut = await live.wait_for_event(lambda e: e.interrupted, after=mark, timeout=10)
            answer = await live.answer_after(live.events.index(cut) + 1, timeout=15)
            assert answer == f"echo: {text}"
            assert await live.say("recall") == f"you said: {text}"
            await live.close()
            stored = await _stored(live)
        events = live.events[mark:]
    second = server.connections[1]
    assert second.ended_by == "fault" and any(
        "inputTranscription" in m.get("serverContent", {}) for m in second.server_messages
    ), "the second connection began transcribing the replay"
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
            await stream_pcm(live, speech + silence_pcm(0.7), pace=2)
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


def _dropped_audio_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.WARNING and "replay window" in r.getMessage()
    ]


async def test_a_microphone_sending_silence_across_a_drop_is_no_warning(
    make_agent: AgentFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """A microphone that never stops sends silence that leaves the small replay window long
    before the drop: nothing the user said was lost, so nothing is said above DEBUG; the
    silence is counted apart."""
    caplog.set_level(logging.DEBUG, logger="adk_live_resume")
    reconnects: list[ReconnectInfo] = []
    runs: list[adk_live_resume.RunStats] = []
    policy = ResumePolicy(replay_audio_seconds=0.5, max_utterance_seconds=1.0, sliding_window=True)
    remove = adk_live_resume.on_reconnect(reconnects.append)
    remove_runs = adk_live_resume.on_run_end(runs.append)
    try:
        async with asyncio.timeout(30), FakeLiveServer() as server:
            # 5 s of silence is 250 chunks of 20 ms: the socket dies after 4 s of it
            server.script(Fault.abort(after_client_messages=200), connection=1)
            agent = make_agent(server, policy=policy)
            async with await LiveDriver.start(agent) as live:
                await stream_pcm(live, silence_pcm(5.0), pace=10)
                await server.wait_for_connections(2)
                assert await live.say("one") == "echo: one"
                await stream_pcm(live, silence_pcm(1.0), pace=10)
                await live.close()
    finally:
        remove()
        remove_runs()
    assert len(reconnects) == 1 and reconnects[0].dropped_audio_ms == 0, reconnects
    assert reconnects[0].dropped_silence_ms >= 3000, reconnects
    assert len(runs) == 1 and runs[0].dropped_audio_ms == 0, runs
    assert runs[0].dropped_silence_ms >= reconnects[0].dropped_silence_ms, runs
    assert _dropped_audio_warnings(caplog) == []
    assert any(
        r.levelno == logging.DEBUG and "unvoiced user audio" in r.getMessage()
        for r in caplog.records
    )


async def test_voiced_audio_that_left_the_replay_window_is_a_warning(
    make_agent: AgentFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """An utterance longer than ``max_utterance_seconds`` is cut by a drop: the speech older
    than the cap is not replayed, and the WARNING says how much speech that was."""
    caplog.set_level(logging.WARNING, logger="adk_live_resume")
    reconnects: list[ReconnectInfo] = []
    policy = ResumePolicy(replay_audio_seconds=0.5, max_utterance_seconds=1.0, sliding_window=True)
    remove = adk_live_resume.on_reconnect(reconnects.append)
    try:
        async with asyncio.timeout(30), FakeLiveServer() as server:
            # "one", then 3 s of speech in 150 chunks of 20 ms: the socket dies after 2.4 s
            server.script(Fault.abort(after_client_messages=1 + 120), connection=1)
            agent = make_agent(server, policy=policy)
            async with await LiveDriver.start(agent) as live:
                assert await live.say("one") == "echo: one"
                speech = speech_pcm("a very long sentence that goes on", seconds=3.0)
                await stream_pcm(live, speech + silence_pcm(0.7), pace=4)
                await server.wait_for_connections(2)
                await server.wait_for(lambda: bool(reconnects), 10, what="the reconnect")
                await live.close()
    finally:
        remove()
    assert len(reconnects) == 1 and reconnects[0].state_restored, reconnects
    lost = reconnects[0].dropped_audio_ms
    # Of the 2.4 s to 3 s of speech sent when the replay went, the newest 1.5 s were kept.
    assert 2400 - 1500 <= lost <= 3000 - 1500, reconnects
    warnings = _dropped_audio_warnings(caplog)
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith(f"{lost:.0f} ms of voiced user audio"), warnings
