"""Regression tests for the voice-session defects the voice soak found, end to end.

Real ``Runner.run_live`` and google-genai against the fake server over TLS, both entry
points. Each test names the defect it pins; each failed on the loop before the fix.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from google.genai import types

import adk_live_resume
from adk_live_resume import ReconnectInfo, ResumePolicy
from adk_live_resume.testing import (
    FakeLiveServer,
    Fault,
    HandleSchedule,
    LatencyRelay,
    silence_pcm,
    speech_pcm,
)
from adk_live_resume.testing.driver import LiveDriver

from ..conftest import AgentFactory, mic_chunks, stream_pcm
from ..helpers import balance_tool

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]

RATE = 16000


async def test_go_away_waits_for_the_user_to_finish_speaking(make_agent: AgentFactory) -> None:
    """Defect 1: a goAway 0.8 s into a 3 s utterance moved at once, mid-utterance."""
    # goAway 1 s after accept with 9 s left; the margin leaves 8.5 s, more than the first
    # answer and the utterance even on a loaded machine (with 4.5 s, a first answer slowed
    # past a second left the deadline inside the utterance).
    async with FakeLiveServer(connection_lifetime=10.0, go_away_lead=9.0) as server:
        agent = make_agent(server, policy=ResumePolicy(go_away_margin=0.5))
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one") == "echo: one"
            mark = len(live.events)
            await stream_pcm(
                live, speech_pcm("a long spoken sentence", seconds=3.0) + silence_pcm(0.6)
            )
            assert await live.answer_after(mark) == "echo: a long spoken sentence"
            await server.wait_for_connections(2)
            assert await live.say("recall") == "you said: one | a long spoken sentence"
            await live.close()
        first = server.connections[0]
        assert first.go_away_sent
        # The utterance was heard and answered on the connection it was spoken to.
        assert "a long spoken sentence" in first.user_turns
        assert "echo: a long spoken sentence" in first.answers
        assert server.user_turns_answered() == ["one", "a long spoken sentence", "recall"]
        assert not any(getattr(e, "interrupted", False) for e in live.events)


async def test_after_a_refused_handle_a_new_call_runs_its_tool(make_agent: AgentFactory) -> None:
    """Defect 4: after a fresh start, the same call got the old result; the tool never ran."""
    get_balance, ran = balance_tool()

    async with FakeLiveServer() as server:
        server.script(Fault.refuse_resume(), connection=2)
        agent = make_agent(server, tools=[get_balance])
        async with await LiveDriver.start(agent) as live:
            assert await live.say("call get_balance") == 'get_balance returned {"balance":100}'
            await server.close_open(1011)
            await server.wait_for_connections(3)  # 2 refused the handle, 3 starts fresh
            assert await live.say("call get_balance") == 'get_balance returned {"balance":40}'
            await live.close()
        assert ran == [100, 40], "a new call runs its tool again"
        assert server.connections[2].resume_handle is None


async def test_closing_the_queue_during_an_outage_ends_the_run_at_once(
    make_agent: AgentFactory,
) -> None:
    """Defect 6: close() during an outage kept reconnecting until the policy gave up."""
    adk_live_resume.set_testing(False)  # real backoff waits
    async with FakeLiveServer() as server:
        policy = ResumePolicy(initial_wait=2.0, max_wait=2.0, jitter=False, max_attempts=8)
        agent = make_agent(server, policy=policy)
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one") == "echo: one"
            server.flap(1011, after_setup=False)
            await server.close_open(1011)
            await server.wait_for_connections(2)  # attempt 1 failed; now waiting 2 s
            loop = asyncio.get_running_loop()
            started = loop.time()
            error = await live.close(timeout=5)
            took = loop.time() - started
        assert error is None
        assert took < 1.5, f"the run took {took:.2f} s to end after close()"
        await asyncio.sleep(0.1)
        assert len(server.connections) == 2, "no connection after close()"


async def test_vertex_transparent_resume_sends_nothing_already_consumed(
    make_agent: AgentFactory,
) -> None:
    """Defect 7: on Vertex, the previous answer went back as context after every resume."""
    async with FakeLiveServer() as server:
        make_agent(server)  # installs the patch for the "install" entry point
        agent = _vertex_agent(server, make_agent.entry)
        async with await LiveDriver.start(agent) as live:
            for turn in ("one", "two"):
                assert await live.say(turn) == f"echo: {turn}"
                await server.close_open(1011)
            assert await live.say("recall") == "you said: one | two"
            await live.close()
        assert all(c.transparent for c in server.connections)
        assert server.history_sends() == 0, "nothing consumed is sent again as context"
        assert server.duplicate_history_sends() == 0
        assert server.user_turns_answered() == ["one", "two", "recall"]


def _vertex_agent(server: FakeLiveServer, entry: str) -> object:
    from google.adk.agents import LlmAgent

    from adk_live_resume import ResumableLlmAgent

    model = server.gemini(vertex=True)
    if entry == "install":
        return LlmAgent(name="assistant", model=model)
    return ResumableLlmAgent(name="assistant", model=model)


async def test_gap_ms_is_the_real_outage_when_the_deadline_lands_while_a_tool_runs(
    make_agent: AgentFactory,
) -> None:
    """Defect 10: gap_ms said 7 ms for a 1.45 s outage (counted from the tool's end)."""
    reconnects: list[ReconnectInfo] = []
    remove = adk_live_resume.on_reconnect(reconnects.append)

    async def slow_lookup() -> dict[str, str]:
        """Look something up slowly."""
        await asyncio.sleep(1.5)
        return {"found": "yes"}

    try:
        async with FakeLiveServer() as server:
            agent = make_agent(server, tools=[slow_lookup])
            async with await LiveDriver.start(agent) as live:
                mark = live.send_text("call slow_lookup")
                await server.wait_for(lambda: bool(server.tool_calls_issued()), 5)
                await asyncio.sleep(0.2)  # the tool is running now
                await server.close_open(1011)  # the deadline close
                answer = await live.answer_after(mark, timeout=15)
                assert answer == 'slow_lookup returned {"found":"yes"}'
                await live.close()
    finally:
        remove()
    assert len(reconnects) == 1
    assert reconnects[0].gap_ms >= 1000, reconnects[0]


async def test_an_audio_run_without_compression_is_warned_about_once(
    make_agent: AgentFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """Defect 9: nothing said that an audio session without compression ends at 15 min."""
    caplog.set_level(logging.WARNING, logger="adk_live_resume")
    async with FakeLiveServer() as server:
        agent = make_agent(server)
        async with await LiveDriver.start(agent) as live:
            await stream_pcm(live, speech_pcm("hello", seconds=0.4) + silence_pcm(0.6), pace=10)
            await server.close_open(1011)
            await server.wait_for(lambda: len(server.user_turns_answered()) >= 1, 10)
            await stream_pcm(live, speech_pcm("again", seconds=0.4) + silence_pcm(0.6), pace=10)
            await server.wait_for(lambda: len(server.user_turns_answered()) >= 2, 10)
            await live.close()
    warnings = [r for r in caplog.records if "context window compression" in r.getMessage()]
    assert len(warnings) == 1
    assert "15 minutes" in warnings[0].getMessage()
    assert "sliding_window" in warnings[0].getMessage()


async def test_the_sliding_window_option_adds_compression_to_every_setup(
    make_agent: AgentFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="adk_live_resume")
    async with FakeLiveServer() as server:
        agent = make_agent(server, policy=ResumePolicy(sliding_window=True))
        async with await LiveDriver.start(agent) as live:
            await stream_pcm(live, speech_pcm("hello", seconds=0.4) + silence_pcm(0.6), pace=10)
            await server.wait_for(lambda: bool(server.user_turns_answered()), 10)
            await server.close_open(1011)
            assert await live.say("two") == "echo: two"
            await live.close()
    for connection in server.connections:
        assert connection.setup is not None
        compression = connection.setup.get("contextWindowCompression") or connection.setup.get(
            "context_window_compression"
        )
        assert compression is not None and "slidingWindow" in str(compression).replace(
            "sliding_window", "slidingWindow"
        )
    assert not [r for r in caplog.records if "context window compression" in r.getMessage()]


async def test_a_caller_set_compression_is_kept(make_agent: AgentFactory) -> None:
    from google.adk.agents.run_config import RunConfig

    config = RunConfig(
        response_modalities=[types.Modality.TEXT],
        session_resumption=types.SessionResumptionConfig(),
        context_window_compression=types.ContextWindowCompressionConfig(
            trigger_tokens=50000, sliding_window=types.SlidingWindow(target_tokens=20000)
        ),
    )
    async with FakeLiveServer() as server:
        agent = make_agent(server, policy=ResumePolicy(sliding_window=True))
        async with await LiveDriver.start(agent, run_config=config) as live:
            assert await live.say("one") == "echo: one"
            await live.close()
    assert "20000" in str(server.connections[0].setup)


async def _stream_until_speaking(
    live: LiveDriver, server: FakeLiveServer, chunks: list[bytes]
) -> int:
    """Stream ``chunks`` until the fake issued a handle while hearing the user speak; return
    how many chunks were sent."""
    for sent, chunk in enumerate(chunks, start=1):
        live.send_audio(chunk)
        await asyncio.sleep(0.02 / 4)
        if sent % 5 == 0:
            issued = await server.issue_handles_now()
            if any(i is not None and i.point == "idle_speaking" for i in issued.values()):
                return sent
    raise AssertionError("the fake never heard the user speaking")


async def _speak_across_a_handle_and_drop(
    live: LiveDriver, server: FakeLiveServer, speech: bytes
) -> int:
    """Speak ``speech``; once the fake issued a handle mid-utterance, drop the socket, and
    speak the rest. Return the event mark from before the speech."""
    chunks = mic_chunks(speech + silence_pcm(0.6))
    mark = len(live.events)
    sent = await _stream_until_speaking(live, server, chunks[: len(chunks) // 2])
    await asyncio.sleep(0.1)  # the handle reaches the client before the close frame
    await server.close_open(1011)
    for chunk in chunks[sent:]:
        live.send_audio(chunk)
        await asyncio.sleep(0.02 / 4)
    return mark


async def test_a_handle_issued_while_the_user_speaks_keeps_the_utterance(
    make_agent: AgentFactory,
) -> None:
    """Defect 2: a handle that arrived mid-utterance cleared the outbox on the Gemini API,
    so after a drop the resumed session heard only the end of the utterance."""
    async with FakeLiveServer() as server:
        agent = make_agent(server)
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one") == "echo: one"
            mark = await _speak_across_a_handle_and_drop(
                live, server, speech_pcm("spoken across a handle", seconds=2.0)
            )
            assert await live.answer_after(mark, timeout=15) == "echo: spoken across a handle"
            assert await live.say("recall") == "you said: one | spoken across a handle"
            await live.close()
        second = server.connections[1]
        assert second.resume_handle is not None, "resumed with the handle issued mid-utterance"
        assert server.user_turns_answered() == ["one", "spoken across a handle", "recall"]


async def test_a_minute_of_microphone_without_a_new_handle_holds_bounded_audio(
    make_agent: AgentFactory,
) -> None:
    """Defect 3: the outbox kept every chunk sent since the last handle (ten minutes of mic
    audio: 30,000 messages). A minute of room noise with no handle after the first answer now
    holds at most the replay window plus the unanswered utterance (x1.25), and what left the
    window is counted (a drop afterwards reports it)."""
    runs: list[adk_live_resume.RunStats] = []
    reconnects: list[ReconnectInfo] = []
    policy = ResumePolicy(replay_audio_seconds=1.0, max_utterance_seconds=2.0)
    remove = adk_live_resume.on_run_end(runs.append)
    try:
        async with FakeLiveServer() as server:
            agent = make_agent(server, policy=policy)
            remove_reconnect = adk_live_resume.on_reconnect(reconnects.append)
            try:
                async with await LiveDriver.start(agent) as live:
                    assert await live.say("one") == "echo: one"
                    for number, chunk in enumerate(mic_chunks(silence_pcm(60.0))):
                        live.send_audio(chunk)
                        if number % 50 == 0:
                            await asyncio.sleep(0)
                    await server.wait_for(lambda: len(server.connections[0].client_messages) > 3000)
                    await server.close_open(1011)
                    assert await live.say("recall") == "you said: one"
                    await live.close()
            finally:
                remove_reconnect()
    finally:
        remove()
    bound_ms = 1.25 * 1000 * (policy.replay_audio_seconds + policy.max_utterance_seconds) + 20
    assert len(runs) == 1 and runs[0].peak_replay_audio_ms <= bound_ms, runs
    assert runs[0].peak_replay_messages <= bound_ms / 20 + 10, runs
    assert len(reconnects) == 1 and reconnects[0].dropped_silence_ms >= 55_000, reconnects
    assert reconnects[0].dropped_audio_ms == 0, "silence is no lost speech"


async def test_a_typed_turn_crossing_the_last_answers_handle_is_answered(
    make_agent: AgentFactory,
) -> None:
    """Defect 2, typed: a turn sent right after an answer, whose handle reached the client
    only after the turn was sent, was taken as held by that handle (no index says otherwise
    on the Gemini API); the socket died before the answer, and the turn was never answered."""
    async with FakeLiveServer(handle_schedule=HandleSchedule(turn_handle_late=True)) as server:
        # message 1 is "one"; "two" (message 2) makes the server send the answer's handle,
        # and the socket dies right after, before any answer to "two".
        server.script(Fault.abort(after_client_messages=2), connection=1)
        agent = make_agent(server)
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one") == "echo: one"
            assert await live.say("two", timeout=15) == "echo: two"
            assert await live.say("recall") == "you said: one | two"
            await live.close()
        first, second = server.connections[:2]
        assert first.handles_issued and second.resume_handle == first.handles_issued[-1]
        assert first.answered_user_turns == ["one"], "the crossing handle predates 'two'"
        assert server.user_turns_answered() == ["one", "two", "recall"]


async def test_a_utterance_cut_by_the_go_away_deadline_is_replayed_whole(
    make_agent: AgentFactory,
) -> None:
    """Defect 1, second half: when the deadline forces a move mid-utterance, the part of
    the utterance the old session never answered is replayed, so the model hears all of it."""
    # goAway 0.5 s after accept with 1.5 s left; the margin leaves 1 s, less than the utterance.
    async with FakeLiveServer(connection_lifetime=2.0, go_away_lead=1.5) as server:
        agent = make_agent(server, policy=ResumePolicy(go_away_margin=0.5))
        async with await LiveDriver.start(agent) as live:
            await server.wait_for_connections(1)
            mark = len(live.events)
            text = "a sentence longer than the time left"
            await stream_pcm(live, speech_pcm(text, seconds=3.0) + silence_pcm(0.6))
            assert await live.answer_after(mark, timeout=15) == f"echo: {text}"
            assert await live.say("recall") == f"you said: {text}"
            await live.close()
        first = server.connections[0]
        assert first.go_away_sent and text not in first.user_turns, "the deadline cut it"
        assert server.user_turns_answered() == [text, "recall"]


async def test_a_request_recovered_from_the_sender_is_appended_to_the_session_once(
    make_agent: AgentFactory,
) -> None:
    """Defect 5: with a session service that takes a moment to answer, the request taken
    back from a dead connection's sender went through ADK's send step again, so the user
    event was appended to the ADK session twice."""
    from google.adk.sessions import InMemorySessionService

    class SlowUserEvents(InMemorySessionService):  # type: ignore[misc]
        """Stores user events at once but answers 0.3 s later, like a database a little
        far away."""

        slow = False
        entered: asyncio.Event | None = None

        async def append_event(self, session: object, event: object) -> object:
            stored = await super().append_event(session, event)
            if self.slow and getattr(event, "author", None) == "user":
                if self.entered is not None:
                    self.entered.set()
                await asyncio.sleep(0.3)
            return stored

    service = SlowUserEvents()
    async with FakeLiveServer() as server:
        agent = make_agent(server)
        async with await LiveDriver.start(agent, session_service=service) as live:
            assert await live.say("one") == "echo: one"
            service.entered = asyncio.Event()
            service.slow = True
            mark = live.send_text("two")
            await asyncio.wait_for(service.entered.wait(), 5)
            await server.close_open(1011)  # while ADK's sender is appending "two"
            assert await live.answer_after(mark, timeout=15) == "echo: two"
            service.slow = False
            assert await live.say("recall") == "you said: one | two"
            await live.close()
        session = await service.get_session(
            app_name=live.session.app_name, user_id=live.session.user_id, session_id=live.session.id
        )
    user_texts = [
        "".join(p.text or "" for p in e.content.parts or [])
        for e in session.events
        if e.author == "user" and e.content is not None
    ]
    assert user_texts.count("two") == 1, user_texts
    assert server.user_turns_answered() == ["one", "two", "recall"]


GEMINI_3 = "gemini-3.1-flash-live-preview"


async def test_gemini_3_context_the_handle_lacks_goes_to_one_fresh_session(
    make_agent: AgentFactory,
) -> None:
    """Defect 8: Gemini 3.x Live takes no clientContent mid-session, so a turn the handle
    does not hold cannot be replayed as context; one fresh session with history gets it."""
    from google.adk.agents import LlmAgent

    from adk_live_resume import ResumableLlmAgent
    from adk_live_resume.compat import adk_compat
    from adk_live_resume.testing import HandleSchedule

    if not adk_compat.speaks_gemini_3_live(GEMINI_3):
        pytest.skip("this google-adk release does not speak the Gemini 3.x Live dialect")
    async with FakeLiveServer(handle_schedule=HandleSchedule(on_turn_complete=False)) as server:
        make_agent(server)  # installs the patch for the "install" entry point
        cls = LlmAgent if make_agent.entry == "install" else ResumableLlmAgent
        agent = cls(name="assistant", model=server.gemini(GEMINI_3))
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one") == "echo: one"
            issued = await server.issue_handles_now()
            assert issued[1] is not None and issued[1].turns == 2  # "one" and its answer
            assert await live.say("two") == "echo: two"  # no handle holds this exchange
            await server.close_open(1011)
            assert await live.say("recall") == "you said: one | two"
            await live.close()
    assert len(server.connections) == 2
    fresh = server.connections[1]
    assert fresh.resume_handle is None, "a fresh session, not a resume"
    assert [t.text for t in fresh.heard if t.how == "history"] == ["one", "two"]
    assert all(not c.rejected_client_content for c in server.connections)
    assert server.duplicate_history_sends() == 0
    assert server.user_turns_answered() == ["one", "two", "recall"]


async def test_the_audio_session_limit_ends_the_run_with_a_clear_error(
    make_agent: AgentFactory,
) -> None:
    """Defect 9: an audio session without compression ends at the limit; resuming it is
    refused, and the run ends with SessionLimitError instead of retrying in a loop."""
    from adk_live_resume import SessionLimitError

    # 4 s: the utterance is answered well inside the session's limit even on a loaded machine
    # (with 1.5 s, a slow answer let the limit end a session that had no handle yet).
    async with FakeLiveServer(session_limit=4.0) as server:
        agent = make_agent(server)
        async with await LiveDriver.start(agent) as live:
            mark = len(live.events)
            await stream_pcm(live, speech_pcm("hello", seconds=0.4) + silence_pcm(0.6), pace=4)
            assert await live.answer_after(mark) == "echo: hello"
            error = await live.wait_ended(timeout=10)
        assert isinstance(error, SessionLimitError), repr(error)
        assert "sliding_window" in str(error) and "15 minutes" in str(error)
    assert server.connections[0].ended_by == "session_limit"
    assert len(server.connections) == 2, "one refused resume, no retry loop"


async def test_a_dead_handle_on_vertex_starts_a_fresh_session_with_history(
    make_agent: AgentFactory,
) -> None:
    """Voice chaos on google-adk 1.27.2: the fresh session's setup asked for history_config,
    which google-genai 1.75 refuses for Vertex AI, so every dead handle ended the run."""
    async with FakeLiveServer() as server:
        server.script(Fault.refuse_resume(), connection=2)
        make_agent(server)  # installs the patch for the "install" entry point
        agent = _vertex_agent(server, make_agent.entry)
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one") == "echo: one"
            await server.close_open(1011)
            assert await live.say("recall") == "you said: one"
            error = await live.close()
        assert error is None
    assert server.connections[2].resume_handle is None
    assert server.history_sends() == 1 and server.duplicate_history_sends() == 0


async def test_vertex_after_a_fresh_start_a_handle_mid_utterance_keeps_its_start(
    make_agent: AgentFactory,
) -> None:
    """On Vertex AI (found by the voice soak): a fresh session's history is a client message the
    server numbers but the outbox did not, so ``lastConsumedClientMessageIndex`` dropped one
    message too many: after a resume with a handle issued mid-utterance, the utterance's
    first chunk was gone, and the user was shown its transcription twice."""
    async with FakeLiveServer() as server:
        server.script(Fault.refuse_resume(), connection=2)
        make_agent(server)  # installs the patch for the "install" entry point
        agent = _vertex_agent(server, make_agent.entry)
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one") == "echo: one"
            await server.close_open(1011)
            assert await live.say("two") == "echo: two"  # connection 3: fresh, with history
            mark = await _speak_across_a_handle_and_drop(
                live, server, speech_pcm("kept whole", seconds=1.5)
            )
            assert await live.answer_after(mark, timeout=15) == "echo: kept whole"
            await live.close()
        fresh, resumed = server.connections[2], server.connections[3]
        assert fresh.resume_handle is None and fresh.history_sends
        assert resumed.resumed and resumed.transparent
        spoken = [t for t in resumed.heard if t.how == "spoken"]
        assert [(t.text, t.cut_start) for t in spoken] == [("kept whole", False)]
        shown = "".join(
            e.input_transcription.text
            for e in live.events
            if e.input_transcription is not None
            and e.input_transcription.text
            and not e.input_transcription.finished
        )
        assert "".join(shown.split()) == "keptwhole", f"shown: {shown!r}"


async def test_an_utterance_replayed_twice_is_shown_once(make_agent: AgentFactory) -> None:
    """A connection that died right after its setup had
    recorded the replayed utterance again without its start, so the next connection's
    replay was not known to start the utterance: the user saw its transcription twice."""
    async with FakeLiveServer() as server:
        server.script(Fault.close(1011, after_setup=True), connection=2)
        agent = make_agent(server)
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one") == "echo: one"
            chunks = mic_chunks(speech_pcm("shown once", seconds=1.5) + silence_pcm(0.6))
            mark = len(live.events)
            half = len(chunks) // 2
            for chunk in chunks[:half]:
                live.send_audio(chunk)
                await asyncio.sleep(0.02 / 4)
            await live.wait_for_event(
                lambda e: e.input_transcription is not None and bool(e.input_transcription.text),
                after=mark,
            )
            await server.close_open(1011)
            await server.wait_for_connections(3)
            for chunk in chunks[half:]:
                live.send_audio(chunk)
                await asyncio.sleep(0.02 / 4)
            assert await live.answer_after(mark, timeout=15) == "echo: shown once"
            await live.close()
        assert server.connections[1].ended_by == "fault"
        assert [t.text for t in server.connections[2].heard if t.how == "spoken"] == ["shown once"]
        for finished in (False, True):
            shown = "".join(
                e.input_transcription.text
                for e in live.events[mark:]
                if e.input_transcription is not None
                and e.input_transcription.text
                and bool(e.input_transcription.finished) is finished
            )
            assert "".join(shown.split()) == "shownonce", f"finished={finished}: {shown!r}"


async def test_a_late_answer_keeps_the_unanswered_speech_for_the_replay(
    make_agent: AgentFactory,
) -> None:
    """Until the model answers, every chunk after the utterance carries
    its number, so the silence after it filled the utterance cap (``max_utterance_seconds``)
    and a drop noticed late replayed only silence: the speech was lost. Here the server ends
    the utterance after 4 s of silence (``silenceDurationMs``), and the socket drops 3 s in."""
    config = _server_vad_ending_after(4000)
    policy = ResumePolicy(max_utterance_seconds=2.0, replay_audio_seconds=0.5)
    async with FakeLiveServer() as server:
        agent = make_agent(server, policy=policy)
        async with await LiveDriver.start(agent, run_config=config) as live:
            assert await live.say("one") == "echo: one"
            mark = len(live.events)
            speech = speech_pcm("late answer", seconds=1.0) + silence_pcm(3.0)
            await stream_pcm(live, speech, pace=4.0)  # (the fake's VAD counts audio time)
            await server.close_open(1011)
            await stream_pcm(live, silence_pcm(6.0), pace=4.0)
            assert await live.answer_after(mark, timeout=15) == "echo: late answer"
            await live.close()
        assert server.connections[1].resumed
        assert server.user_turns_answered() == ["one", "late answer"]


async def test_a_fresh_session_closed_at_its_setup_keeps_the_utterance_for_the_next(
    make_agent: AgentFactory,
) -> None:
    """On google-adk 1.27.2: the replay of a fresh session was taken from
    the outbox before its history went; a connection closed right after its setup failed the
    history send, and the replay was lost with it: the user's unanswered utterance never
    reached a later session (no answer, and a goAway on every connection after)."""
    config = _server_vad_ending_after(3000)
    async with FakeLiveServer() as server:
        server.script(Fault.refuse_resume(), connection=2)
        for connection in (3, 4):
            server.script(Fault.close(1011, after_setup=True), connection=connection)
        agent = make_agent(server)
        async with await LiveDriver.start(agent, run_config=config) as live:
            assert await live.say("one") == "echo: one"
            mark = len(live.events)
            await stream_pcm(live, speech_pcm("kept for later", seconds=1.0), pace=4.0)
            await server.close_open(1011)
            await server.wait_for_connections(5)
            await stream_pcm(live, silence_pcm(4.0), pace=4.0)
            assert await live.answer_after(mark, timeout=15) == "echo: kept for later"
            await live.close()
        assert server.user_turns_answered() == ["one", "kept for later"]


async def test_an_utterance_whose_replay_no_connection_heard_reaches_a_fresh_session_once(
    make_agent: AgentFactory,
) -> None:
    """On google-adk 2.13 and Vertex AI (its finished transcription pieces are
    stored in ADK's session at once): the answer to an utterance was cut off with its
    connection; the next one, resumed, closed at its setup before it heard the replay, and
    the handle after that was refused. ADK's session held the utterance's transcription
    once (no second transcription joined it), so the fresh session's history held it; but
    the outbox matched the history only against what the connection after the replay had
    heard (nothing), and replayed the audio too: the model heard the utterance twice."""
    schedule = HandleSchedule(every_audio_ms=200)
    async with FakeLiveServer(chunk_delay=0.1, handle_schedule=schedule) as server:
        server.script(Fault.abort(mid_turn=True), connection=1)
        server.script(Fault.close(1011, after_setup=True), connection=2)
        server.script(Fault.refuse_resume(), connection=3)
        make_agent(server)  # installs the patch for the "install" entry point
        agent = _vertex_agent(server, make_agent.entry)
        async with await LiveDriver.start(agent) as live:
            mark = len(live.events)
            await stream_pcm(live, speech_pcm("heard once", seconds=0.6), pace=4.0)
            await stream_pcm(live, silence_pcm(1.2), pace=4.0)
            await server.wait_for_connections(4)
            await stream_pcm(live, silence_pcm(2.0), pace=4.0)
            answer = await live.answer_after(
                mark, timeout=15, skip=lambda text: text != "echo: heard once"
            )
            assert answer == "echo: heard once"
            assert await live.say("recall") == "you said: heard once"
            await live.close()
        assert server.connections[1].resumed and not server.connections[3].resumed
        assert server.user_turns_answered() == ["heard once", "recall"]


def _server_vad_ending_after(silence_ms: int, *, talked_over: bool = False) -> Any:
    """A text run whose server VAD ends an utterance after ``silence_ms`` of silence; with
    ``talked_over``, answers go on while the user speaks over them (``NO_INTERRUPTION``)."""
    from google.adk.agents.run_config import RunConfig

    return RunConfig(
        response_modalities=[types.Modality.TEXT],
        session_resumption=types.SessionResumptionConfig(),
        realtime_input_config=types.RealtimeInputConfig(
            automatic_activity_detection=types.AutomaticActivityDetection(
                silence_duration_ms=silence_ms
            ),
            activity_handling=types.ActivityHandling.NO_INTERRUPTION if talked_over else None,
        ),
    )


LONG_TURN = "a long typed question that takes the model a while to echo back"


async def _answer_streaming(live: LiveDriver, text: str) -> int:
    """After a first exchange, send ``text`` and return its event mark once its answer (to
    be streamed slowly: ``chunk_delay``) began."""
    assert await live.say("one") == "echo: one"
    typed = live.send_text(text)
    await live.wait_for_event(lambda event: event.partial, after=typed)
    return typed


async def _drop_after_a_handle(server: FakeLiveServer, connection: int = 1) -> None:
    """Issue a handle on ``connection`` (the open one), then drop it; return once the next
    connection is open."""
    issued = await server.issue_handles_now()
    assert issued.get(connection) is not None, "a handle after the answer"
    await asyncio.sleep(0.1)  # the handle reaches the client before the close frame
    await server.close_open(1011)
    await server.wait_for_connections(connection + 1)


def _output_began(live: LiveDriver, mark: int) -> int:
    """Index of the first event after ``mark`` that carries the model's output."""
    return next(
        i
        for i, event in enumerate(live.events)
        if i >= mark
        and event.author != "user"
        and event.content is not None
        and any(part.text for part in event.content.parts or ())
    )


async def test_speech_begun_during_an_answer_is_not_answered_by_it(
    make_agent: AgentFactory,
) -> None:
    """The user spoke while the model's answer to an earlier
    turn streamed and went quiet before that answer's turn completed. Its completion was
    taken as the answer to the speech too, so the speech's audio left the outbox at the next
    handle and a drop lost it: the model never answered it. A turn answers only utterances
    begun before its output. (``NO_INTERRUPTION``: the answer goes on over the user.)"""
    config = _server_vad_ending_after(3000, talked_over=True)
    # Answer chunks 1 s apart: the answer outlasts the speech and the silence after it even
    # when a loaded machine stretches the microphone's 5 ms sleeps (0.4 s was not enough with
    # eight test workers beside other work on two cores).
    async with FakeLiveServer(chunk_delay=1.0) as server:
        agent = make_agent(server)
        async with await LiveDriver.start(agent, run_config=config) as live:
            typed = await _answer_streaming(live, LONG_TURN)
            spoken = len(live.events)
            await stream_pcm(live, speech_pcm("said over it", seconds=0.6), pace=4.0)
            await stream_pcm(live, silence_pcm(0.6), pace=4.0)
            assert not any(getattr(e, "turn_complete", False) for e in live.events[spoken:]), (
                "the answer still streams after the user went quiet"
            )
            assert await live.answer_after(typed, timeout=15) == f"echo: {LONG_TURN}"
            await _drop_after_a_handle(server)
            await stream_pcm(live, silence_pcm(4.0), pace=4.0)
            answer = await live.answer_after(
                spoken, timeout=15, skip=lambda text: text != "echo: said over it"
            )
            assert answer == "echo: said over it"
            await live.close()
        assert server.connections[1].resumed
        assert server.user_turns_answered() == ["one", LONG_TURN, "said over it"]


async def _speech_begun_as_another_turn_arrives(
    make_agent: AgentFactory,
    *,
    typed: str,
    word: str,
    chunk_delay: float,
    chunk_ms: int,
    pace: float,
) -> None:
    """Type ``typed``, then at once speak ``word`` (2 s, in ``chunk_ms`` chunks at ``pace``
    x real time) through 100 ms of latency each way, so that the typed turn's answer reaches
    the client after the speech began. Then a handle and a drop: the utterance must be
    answered whole, once, on the next connection."""
    config = _server_vad_ending_after(3000, talked_over=True)
    async with (
        FakeLiveServer(chunk_delay=chunk_delay) as server,
        LatencyRelay(server, one_way=0.1) as relay,
    ):
        agent = make_agent(relay)
        async with await LiveDriver.start(agent, run_config=config) as live:
            assert await live.say("one") == "echo: one"
            mark = live.send_text(typed)
            speech = speech_pcm(word, seconds=2.0)
            size = RATE * 2 * chunk_ms // 1000
            speaking = None
            for start in range(0, len(speech), size):
                live.send_audio(speech[start : start + size])
                await asyncio.sleep(chunk_ms / 1000 / pace)
                speaking = len(live.events) if speaking is None else speaking
            await stream_pcm(live, silence_pcm(0.6), pace=4.0)
            assert await live.answer_after(mark, timeout=15) == f"echo: {typed}"
            assert speaking is not None and _output_began(live, mark) >= speaking, (
                "the answer's output reached the client after the speech began"
            )
            await _drop_after_a_handle(server)
            await stream_pcm(live, silence_pcm(4.0), pace=4.0)
            answer = await live.answer_after(
                mark, timeout=15, skip=lambda text: text != f"echo: {word}"
            )
            assert answer == f"echo: {word}"
            await live.close()
        assert server.connections[1].resumed
        assert server.user_turns_answered() == ["one", typed, word]


async def test_speech_begun_just_before_an_answer_to_something_else_is_not_answered_by_it(
    make_agent: AgentFactory,
) -> None:
    """Under load: the user began to speak as the model began a turn it
    had started before hearing them (a background result, here a typed turn's answer), and
    went quiet before that turn completed. The utterance began before the output reached the
    client, so that turn was taken as its answer, and its first sounds left the outbox at the
    next handle: after a drop the model heard "mly" for "jfmly". A turn the user went on
    speaking over (voice sent after its output began) answers nothing of what they said."""
    await _speech_begun_as_another_turn_arrives(
        make_agent, typed=LONG_TURN, word="begun first", chunk_delay=0.15, chunk_ms=20, pace=4.0
    )


async def test_a_short_turn_between_two_chunks_of_speech_answers_nothing_of_it(
    make_agent: AgentFactory,
) -> None:
    """The short form of the above: the other turn's output and its ``turnComplete``
    came together between two chunks of the user's speech. With no audio since its output
    began, the turn was taken for the end of a stream that stopped: the utterance over and
    answered, the rest of the word a new one. A handle then covered its first sounds, and a
    drop lost them. A turn that comes between two chunks of a flowing stream, the user in
    the middle of a word, answers nothing of it. (Real time, 100 ms chunks: the answer's
    burst comes between two of them.)"""
    await _speech_begun_as_another_turn_arrives(
        make_agent, typed="hi", word="in a word", chunk_delay=0.0, chunk_ms=100, pace=1.0
    )


async def test_a_barge_in_answered_after_the_interruption_is_not_replayed(
    make_agent: AgentFactory,
) -> None:
    """The other side of the rule above: the user cut an answer off (``interrupted``, which
    ends no turn) and the model answered the barge-in. That answer's turn answers it, though
    the cut answer's output began first: after a handle and a drop, it is not heard again."""
    async with FakeLiveServer(chunk_delay=0.15) as server:
        agent = make_agent(server)
        async with await LiveDriver.start(agent) as live:
            await _answer_streaming(live, LONG_TURN)
            await stream_pcm(live, speech_pcm("cutting in", seconds=0.6), pace=4.0)
            await stream_pcm(live, silence_pcm(1.2), pace=4.0)
            # (ADK 1.x passes no ``interrupted`` event on: the cut answer's text and this one
            # join in the client's events, so the fake's record says what was answered)
            await server.wait_for(
                lambda: "echo: cutting in" in server.connections[0].answers, 15, what="answer"
            )
            await asyncio.sleep(0.1)  # its turnComplete reaches the client
            await _drop_after_a_handle(server)
            await stream_pcm(live, silence_pcm(1.0), pace=4.0)
            assert await live.say("recall") == f"you said: one | {LONG_TURN} | cutting in"
            await live.close()
        assert server.connections[0].interrupted >= 1
        assert server.connections[1].resumed
        assert server.user_turns_answered().count("cutting in") == 1


async def test_an_utterance_whose_answer_was_cut_by_a_drop_is_replayed_once(
    make_agent: AgentFactory,
) -> None:
    """The answer to an utterance was cut off with its connection. The
    utterance, replayed on the next one, counted as begun during that dead answer, so its
    answer there did not count as answering it: the connection after that heard it again."""
    async with FakeLiveServer(chunk_delay=0.1) as server:
        server.script(Fault.abort(mid_turn=True), connection=1)
        agent = make_agent(server)
        async with await LiveDriver.start(agent) as live:
            mark = len(live.events)
            await stream_pcm(live, speech_pcm("cut once", seconds=0.6), pace=4.0)
            await stream_pcm(live, silence_pcm(1.2), pace=4.0)
            await server.wait_for_connections(2)
            await stream_pcm(live, silence_pcm(1.2), pace=4.0)
            answer = await live.answer_after(mark, timeout=15, skip=lambda t: t == "echo")
            assert answer == "echo: cut once"
            await _drop_after_a_handle(server, connection=2)
            await stream_pcm(live, silence_pcm(1.2), pace=4.0)
            assert await live.say("recall") == "you said: cut once"
            await live.close()
        assert server.connections[0].answers == [], "the first answer was cut"
        assert server.connections[2].resumed


async def test_a_typed_turn_that_cut_an_answer_off_is_answered_after_a_fresh_start(
    make_agent: AgentFactory,
) -> None:
    """A typed turn sent while an answer streams cuts that answer off (``interrupted``), and
    its own answer is cut off with its connection; the handle is refused. ADK wrote the turn
    to its session when it sent it and the cut answer's text when ``interrupted`` came, after
    it: the fresh session's history ended with that model turn, asked for no answer, and the
    turn was never answered. The cut answer goes back before the turn, which the fresh
    session answers, once."""
    async with FakeLiveServer(chunk_delay=0.3) as server:
        server.script(Fault.refuse_resume(), connection=2)
        agent = make_agent(server)
        async with await LiveDriver.start(agent) as live:
            await _answer_streaming(live, LONG_TURN)
            # The next answer (the turn's own) is cut with its connection at its first chunk.
            server.script(Fault.close(1011, mid_turn=True), connection=1)
            later = live.send_text("later")
            assert await live.answer_after(later, timeout=20) == "echo: later"
            assert await live.say("recall") == f"you said: one | {LONG_TURN} | later"
            await live.close()
        first, fresh = server.connections[0], server.connections[2]
        assert first.interrupted == 1, "the turn cut the answer in progress off"
        assert "echo: later" not in first.answers, "its own answer was cut with its connection"
        assert fresh.resume_handle is None, "a fresh session"
        assert server.user_turns_answered().count("later") == 1


async def test_a_turn_typed_while_the_last_answer_streams_survives_a_drop_after_its_handle(
    make_agent: AgentFactory,
) -> None:
    """The user types while the previous answer still streams in. Over a real network the
    server may finish that answer and send its handle before the turn arrives: the handle
    does not hold the turn, although the rest of the answer reached the client after the
    turn was sent. A drop then must not lose the turn: it is answered once, after the
    resume from that handle."""
    async with (
        FakeLiveServer(chunk_delay=0.15) as server,
        LatencyRelay(server, one_way=0.5) as relay,
    ):
        agent = make_agent(relay)
        async with await LiveDriver.start(agent) as live:
            second, handle = await _type_while_the_answer_streams_then_drop(server, live)
            answer = await live.answer_after(
                second, timeout=20, skip=lambda text: text != "echo: two"
            )
            assert answer == "echo: two"
            await live.close()
        resumed = server.connections[1]
        assert resumed.resumed and resumed.resume_handle == handle, "not resumed from it"
        assert server.user_turns_answered() == ["one", "two"]


async def test_a_turn_typed_while_the_last_answer_streams_is_answered_by_a_fresh_session(
    make_agent: AgentFactory,
) -> None:
    """As above, but the handle is refused: ADK stored the turn before the end of the answer
    that was streaming when it was sent (the server had that answer first). The fresh
    session's history ends with the turn, so the model answers it once."""
    async with (
        FakeLiveServer(chunk_delay=0.15) as server,
        LatencyRelay(server, one_way=0.5) as relay,
    ):
        server.script(Fault.refuse_resume(), connection=2)
        agent = make_agent(relay)
        async with await LiveDriver.start(agent) as live:
            # (the answer's end reaches the client before the drop does: ADK stores it after
            # "two")
            second, _ = await _type_while_the_answer_streams_then_drop(server, live)
            answer = await live.answer_after(
                second, timeout=20, skip=lambda text: text != "echo: two"
            )
            assert answer == "echo: two"
            assert await live.say("recall") == "you said: one | two"
            await live.close()
        assert not server.connections[2].resumed, "not a fresh session"
        assert server.user_turns_answered() == ["one", "two", "recall"]


async def _type_while_the_answer_streams_then_drop(
    server: FakeLiveServer, live: LiveDriver
) -> tuple[int, str]:
    """Send "one"; once its answer streams in, send "two". Drop the connection (no close
    frame) as soon as the server sent the handle after the first answer, while "two" is
    still on its way (the relay's latency): it is lost with the connection. Returns the
    event mark of "two" and that handle."""
    mark = live.send_text("one")
    await live.wait_for_event(
        lambda e: bool(e.partial and e.content and e.content.parts), after=mark, timeout=15
    )
    second = live.send_text("two")  # the rest of "echo: one" is still on its way
    await server.wait_for(
        lambda: any(i.point == "turn_complete" for i in server.handle_issues()),
        10,
        what="the handle after the first answer",
    )
    handle = server.handle_issues()[-1].handle
    assert "two" not in server.connections[0].user_turns, "the turn came too soon"
    await server.close_open(1006)
    return second, handle
