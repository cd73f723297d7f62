"""Each Live model family of the fake, end to end through real ``Runner.run_live``.

Real google-adk, real google-genai, real TLS websockets on 127.0.0.1, the fake server choosing
the family by the setup's model name (:mod:`adk_live_resume.testing.families`). Both entry
points (``install()`` and the subclasses) run every test.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterator
from typing import Any

import pytest
from google.adk.agents.run_config import RunConfig
from google.genai import types

from adk_live_resume import ReconnectInfo, ResumePolicy, on_reconnect
from adk_live_resume.compat import adk_compat
from adk_live_resume.testing import FakeLiveServer, Fault, HandleSchedule
from adk_live_resume.testing.driver import LiveDriver

from ..conftest import AgentFactory, non_blocking
from ..helpers import get_weather, late_results_told

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]

GEMINI_2 = "gemini-live-fake"
NATIVE_AUDIO = "gemini-2.5-flash-native-audio-preview-09-2025"
GEMINI_3_1 = "gemini-3.1-flash-live-preview"
GEMINI_3_8 = "gemini-3.8-live"
WEATHER = 'get_weather returned {"city":"Oslo","sky":"clear"}'


@pytest.fixture
def reconnects() -> Iterator[list[ReconnectInfo]]:
    """Every reconnect reported while the test runs."""
    seen: list[ReconnectInfo] = []
    remove = on_reconnect(seen.append)
    try:
        yield seen
    finally:
        remove()


def _skip_unless_adk_speaks_3x() -> None:
    if not adk_compat.speaks_gemini_3_live(GEMINI_3_1):
        pytest.skip("this google-adk release sends clientContent turns, which 3.1 refuses")


def _family_agent(
    make_agent: AgentFactory, server: FakeLiveServer, model: str, **kwargs: Any
) -> Any:
    if model == GEMINI_3_1:
        _skip_unless_adk_speaks_3x()
    return make_agent(server, model=model, **kwargs)


@pytest.mark.parametrize("model", [GEMINI_2, NATIVE_AUDIO, GEMINI_3_1, GEMINI_3_8])
async def test_every_family_keeps_the_conversation_across_a_drop_and_a_go_away(
    make_agent: AgentFactory, model: str
) -> None:
    async with FakeLiveServer() as server:
        agent = _family_agent(make_agent, server, model, policy=ResumePolicy(go_away_margin=0.05))
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one") == "echo: one"
            await server.close_open(1011, "Internal error")
            assert await live.say("two") == "echo: two"
            assert server.go_away_now(0.5) == [2]
            await server.wait_for_connections(3)
            assert await live.say("recall") == "you said: one | two"
            await live.close()
    assert [c.resumed for c in server.connections] == [False, True, True]
    assert server.user_turns_answered() == ["one", "two", "recall"]
    assert server.rejected_client_content() == [] and server.history_sends() == 0
    assert server.resent_consumed() == []


@pytest.mark.parametrize("model", [NATIVE_AUDIO, GEMINI_3_1])
async def test_a_tool_turn_without_turn_complete_reaches_the_tool_and_survives_a_drop(
    make_agent: AgentFactory, model: str
) -> None:
    # Native audio (and 3.x) send no turnComplete after a toolCall; ADK 1.28+ holds the calls
    # of every non-3.x model until one comes: without the tap's help the tool never runs.
    async with FakeLiveServer() as server:
        agent = _family_agent(make_agent, server, model, tools=[get_weather])
        async with await LiveDriver.start(agent) as live:
            assert await live.say('call get_weather {"city": "Oslo"}', timeout=15) == WEATHER
            await server.close_open(1011)
            assert await live.say('call get_weather {"city": "Oslo"}', timeout=15) == WEATHER
            await live.close()
    for connection in server.connections:
        kinds = [next(iter(m)) for m in connection.server_messages]
        call_at = kinds.index("toolCall")
        after = connection.server_messages[call_at + 1 :]
        # nothing but a resumption update between the call and the answer
        assert "turnComplete" not in str(after[: after.index(after[-1])][:1]), kinds
        assert connection.tool_responses and connection.answers[-1] == WEATHER
    assert server.connections[1].resumed


def _adk_marks_thoughts() -> bool:
    """ADK 2.x passes a ``thought`` text part on as a thought; 1.27 joins it to the answer."""
    from google.adk.models.gemini_llm_connection import GeminiLlmConnection

    return "is_thought" in inspect.getsource(GeminiLlmConnection.receive)


async def test_thought_parts_open_the_answer_and_count_as_model_output(
    make_agent: AgentFactory,
) -> None:
    # What ADK makes of a thought is its own (2.x: a thought part; 1.27: text joined to the
    # answer); the loop treats it as model output: a drop after it cuts a model turn.
    thinking = "Planning the answer: "
    async with FakeLiveServer(thought_summaries=True, chunk_delay=0.05) as server:
        agent = make_agent(server, model=NATIVE_AUDIO)
        async with await LiveDriver.start(agent) as live:
            mark = len(live.events)
            answer = await live.say("one")
            if _adk_marks_thoughts():
                assert answer == "echo: one"
                thought = await live.wait_for_event(
                    lambda e: any(p.thought for p in (e.content.parts if e.content else [])),
                    after=mark,
                )
                assert thought.content.parts[0].text == thinking + "echo: one"
            else:
                assert answer == thinking + "echo: one" + "echo: one"
            # armed on the open connection: a drop after the thought and the first chunk
            server.script(Fault.close(1011, "Internal error", mid_turn=True), connection=1)
            mark = len(live.events)
            assert (await live.say("two")).endswith("echo: two")
            assert any(getattr(e, "interrupted", False) for e in live.events[mark:])
            await live.close()
    assert server.user_turns_answered() == ["one", "two"]
    cut, resumed = server.connections
    assert cut.ended_by == "fault" and cut.answers == ["echo: one"] and resumed.resumed
    assert "two" in cut.user_turns and resumed.answered_user_turns == ["two"]
    assert thinking in str(cut.server_messages[-2:]), "the thought went out before the drop"


async def test_gemini_3_8_takes_what_the_handle_lacks_as_context_on_resume(
    make_agent: AgentFactory, reconnects: list[ReconnectInfo]
) -> None:
    # On 3.1 this conversation needs a fresh session (test_voice_regressions); 3.8 takes
    # clientContent with roles all session long, so the resumed session gets it as context.
    schedule = HandleSchedule(on_turn_complete=False)
    async with FakeLiveServer(handle_schedule=schedule) as server:
        agent = make_agent(server, model=GEMINI_3_8)
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one") == "echo: one"
            issued = await server.issue_handles_now()
            assert issued[1] is not None and issued[1].turns == 2
            assert await live.say("two") == "echo: two"  # no handle holds this exchange
            await server.close_open(1011)
            assert await live.say("recall") == "you said: one | two"
            await live.close()
    first, resumed = server.connections
    assert resumed.resume_handle == first.handles_issued[0], "resumed, not a fresh start"
    assert [t.text for t in resumed.heard if t.how == "history"] == ["two"]
    assert server.rejected_client_content() == [] and server.duplicate_history_sends() == 0
    assert server.user_turns_answered() == ["one", "two", "recall"]
    assert [r.state_restored for r in reconnects] == [True]


async def test_gemini_3_8_calls_functions_non_blocking_by_default(
    make_agent: AgentFactory,
) -> None:
    async with FakeLiveServer() as server:
        agent = make_agent(server, model=GEMINI_3_8, tools=[get_weather])
        async with await LiveDriver.start(agent) as live:
            mark = live.send_text('call get_weather {"city": "Oslo"}')
            assert await live.answer_after(mark) == "get_weather started"
            await server.wait_for(lambda: len(server.connections[0].answers) == 2, 10)
            await live.close()
    (call,) = server.tool_calls_issued()
    assert call.non_blocking, "declared without behavior: NON_BLOCKING on 3.8"
    assert server.connections[0].answers == ["get_weather started", WEATHER]


async def test_gemini_3_1_calls_a_non_blocking_function_synchronously(
    make_agent: AgentFactory,
) -> None:
    _skip_unless_adk_speaks_3x()
    async with FakeLiveServer() as server:
        agent = make_agent(server, model=GEMINI_3_1, tools=[non_blocking(get_weather)])
        async with await LiveDriver.start(agent) as live:
            assert await live.say('call get_weather {"city": "Oslo"}', timeout=15) == WEATHER
            await live.close()
    (call,) = server.tool_calls_issued()
    assert not call.non_blocking


async def test_gemini_3_8_closes_at_58_minutes_and_the_refused_resume_starts_afresh(
    make_agent: AgentFactory, reconnects: list[ReconnectInfo]
) -> None:
    # 0.001 real seconds per service second: the 58-minute cap comes after 3.48 s. The
    # session carries compression, which does not save it on 3.8.
    server = FakeLiveServer(time_scale=0.001, connection_lifetime=1e6, handle_ttl=1e6)
    async with server:
        agent = make_agent(server, model=GEMINI_3_8)
        run_config = RunConfig(
            response_modalities=[types.Modality.TEXT],
            session_resumption=types.SessionResumptionConfig(),
            context_window_compression=types.ContextWindowCompressionConfig(
                sliding_window=types.SlidingWindow()
            ),
        )
        async with await LiveDriver.start(agent, run_config=run_config) as live:
            assert await live.say("one") == "echo: one"
            await server.wait_for_connections(3, timeout=20)
            assert await live.say("recall") == "you said: one"
            error = await live.close()
        assert error is None
    capped, refused, fresh = server.connections[:3]
    assert capped.ended_by == "session_limit" and capped.close_code == 1011
    assert "Deadline expired" in capped.close_reason
    assert refused.resume_handle is not None and refused.ended_by == "refused"
    assert refused.close_code == 1007
    assert fresh.resume_handle is None and [t.text for t in fresh.heard] == ["one", "recall"]
    assert server.user_turns_answered() == ["one", "recall"]
    assert [r.reason for r in reconnects] == ["restart"]


async def test_pongs_held_past_the_client_timeout_resume_on_one_socket_at_a_time(
    make_agent: AgentFactory,
) -> None:
    # The service answered pings 8-30 s late; websockets' keepalive then closes the socket
    # from the client side. Here: a ping every 0.2 s, 0.5 s to answer, pongs 8 s late.
    async with FakeLiveServer() as server:
        server.script(Fault.hold_pongs(8.0), connection=1)
        make_agent(server)  # installs the patch for the "install" entry point
        agent = _keepalive_agent(server, make_agent.entry)
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one") == "echo: one"
            await server.wait_for_connections(2, timeout=10)
            assert await live.say("two") == "echo: two"
            assert await live.say("recall") == "you said: one | two"
            await live.close()
    first, second = server.connections[:2]
    assert first.ended_by == "client", first
    assert second.resumed and first.ended_at is not None
    assert first.ended_at <= second.accepted_at, "a second socket while the first was open"
    assert server.user_turns_answered()[:3] == ["one", "two", "recall"]


def _keepalive_agent(server: FakeLiveServer, entry: str) -> Any:
    from google.adk.agents import LlmAgent

    from adk_live_resume import ResumableLlmAgent

    model = server.gemini(ping_interval=0.2, ping_timeout=0.5)
    cls = LlmAgent if entry == "install" else ResumableLlmAgent
    return cls(name="assistant", model=model)


async def test_gemini_3_8_background_call_open_across_a_resume_is_answered_once(
    make_agent: AgentFactory,
) -> None:
    # 3.8 calls NON_BLOCKING: the model says "started" and the call stays open in the
    # session. A handle issued meanwhile holds it; the connection drops while the tool still
    # runs; its result goes to the resumed session as content (no id of an earlier
    # connection is taken), told once. (ADK runs a tool it does not
    # know as NON_BLOCKING inside its receive step, so the tool is declared so for ADK.)
    if not adk_compat.runs_tools_in_background():
        pytest.skip("this google-adk release runs every live tool inside its receive step")
    release = asyncio.Event()

    async def slow_weather(city: str) -> dict[str, str]:
        """The weather in ``city``, slowly."""
        await release.wait()
        return {"city": city, "sky": "clear"}

    async with FakeLiveServer() as server:
        agent = make_agent(server, model=GEMINI_3_8, tools=[non_blocking(slow_weather)])
        async with await LiveDriver.start(agent) as live:
            mark = live.send_text('call slow_weather {"city": "Oslo"}')
            assert await live.answer_after(mark) == "slow_weather started"
            issued = await server.issue_handles_now()
            assert issued[1] is not None, "idle with the call open: resumable"
            await server.close_open(1011)
            await server.wait_for_connections(2)
            release.set()
            await server.wait_for(lambda: len(server.connections[1].answers) == 1, 15)
            told = "slow_weather returned"
            assert await live.say("after", skip=lambda t: t.startswith(told)) == "echo: after"
            await live.close()
    old, resumed = server.connections[:2]
    assert resumed.resume_handle == issued[1].handle
    (call,) = server.tool_calls_issued()
    assert call.non_blocking and resumed.tool_responses == [] and old.tool_responses == []
    assert late_results_told(resumed) == [
        ("slow_weather", {"city": "Oslo"}, {"city": "Oslo", "sky": "clear"})
    ]
    assert resumed.answers[0] == 'slow_weather returned {"city":"Oslo","sky":"clear"}'
    assert [a for c in server.connections for a in c.answers].count(resumed.answers[0]) == 1
