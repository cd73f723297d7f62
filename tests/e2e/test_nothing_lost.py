"""Nothing lost, nothing said twice, no tool run twice: targeted reconnect scenarios.

Real ``Runner.run_live`` and google-genai against the fake server, both entry points.
"""

from __future__ import annotations

import asyncio

import pytest

import adk_live_resume
from adk_live_resume import ReconnectInfo, ResumePolicy
from adk_live_resume.testing import FakeLiveServer, Fault, silence_pcm, speech_pcm
from adk_live_resume.testing.driver import LiveDriver

from ..conftest import AgentFactory

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]


def _counted_tool(calls: list[str]):  # type: ignore[no-untyped-def]
    def get_weather(city: str) -> dict[str, str]:
        """Return the weather for a city."""
        calls.append(city)
        return {"city": city, "sky": "clear"}

    return get_weather


async def test_the_message_in_flight_at_the_drop_is_answered_once(make_agent: AgentFactory) -> None:
    async with FakeLiveServer() as server:
        server.script(Fault.close(1011, after_client_messages=2), connection=1)
        agent = make_agent(server)
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one") == "echo: one"
            assert await live.say("two") == "echo: two"  # sent as the socket died: replayed
            assert await live.say("recall") == "you said: one | two"
            await live.close()
        assert server.user_turns_answered() == ["one", "two", "recall"]
        assert server.connections[1].resumed


async def test_a_turn_cut_mid_answer_is_marked_interrupted_and_answered_once(
    make_agent: AgentFactory,
) -> None:
    async with FakeLiveServer(chunk_delay=0.05) as server:
        # connection 1 answers "one", then dies after the first chunk of the next answer
        server.script(Fault.abort(after_client_messages=2), connection=1)
        server.script(Fault.abort(mid_turn=True), connection=2)
        agent = make_agent(server)
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one") == "echo: one"
            mark = live.send_text("a longer sentence to be cut")
            cut = await live.wait_for_event(lambda e: e.interrupted, after=mark, timeout=10)
            assert cut.author == agent.name
            assert await live.answer_after(live.events.index(cut) + 1) == (
                "echo: a longer sentence to be cut"
            )
            assert await live.say("recall") == "you said: one | a longer sentence to be cut"
            await live.close()
        assert server.user_turns_answered().count("a longer sentence to be cut") == 1
        assert server.connections[1].ended_by == "fault"


async def test_drop_mid_tool_call_the_model_asks_again_and_the_tool_runs_once(
    make_agent: AgentFactory,
) -> None:
    calls: list[str] = []
    async with FakeLiveServer() as server:
        server.script(Fault.close(1011, mid_tool_call=True), connection=1)
        agent = make_agent(server, tools=[_counted_tool(calls)])
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one") == "echo: one"
            answer = await live.say('call get_weather {"city": "Paris"}')
            assert answer == 'get_weather returned {"city":"Paris","sky":"clear"}'
            await live.close()
        assert calls == ["Paris"]
        assert all(not c.unknown_tool_response_ids for c in server.connections)
        assert all(not c.stale_tool_response_ids for c in server.connections)


async def test_drop_after_the_tool_ran_reuses_its_result_for_the_repeated_call(
    make_agent: AgentFactory,
) -> None:
    calls: list[str] = []
    async with FakeLiveServer() as server:
        # messages: "one", the tool-call turn, the tool response -> the socket dies with it.
        server.script(Fault.close(1011, after_client_messages=3), connection=1)
        agent = make_agent(server, tools=[_counted_tool(calls)])
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one") == "echo: one"
            answer = await live.say('call get_weather {"city": "Oslo"}')
            assert answer == 'get_weather returned {"city":"Oslo","sky":"clear"}'
            await live.close()
        assert calls == ["Oslo"], "one call, one execution"
        issued = server.tool_calls_issued()
        assert [c.connection for c in issued] == [1, 2]  # the resumed model asked again
        second = server.connections[1]
        assert [r.get("id") for r in second.tool_responses] == [issued[1].id]
        assert not second.unknown_tool_response_ids and not second.stale_tool_response_ids


async def test_audio_is_replayed_within_the_window_and_older_audio_is_reported(
    make_agent: AgentFactory,
) -> None:
    reconnects: list[ReconnectInfo] = []
    remove = adk_live_resume.on_reconnect(reconnects.append)
    try:
        async with FakeLiveServer() as server:
            policy = ResumePolicy(replay_audio_seconds=1.0)
            agent = make_agent(server, policy=policy)
            async with await LiveDriver.start(agent) as live:
                assert await live.say("one") == "echo: one"
                silence = b"\0\0" * 16000 * 3  # 3 s of a quiet microphone
                for chunk in _chunks(silence, 3200):
                    live.send_audio(chunk)
                speech = speech_pcm("hello there", seconds=0.6)
                head, tail = speech[: len(speech) // 2], speech[len(speech) // 2 :]
                live.send_audio(head)
                record = server.connections[0]
                await server.wait_for(lambda: len(record.client_messages) >= 1 + 30 + 1, 5)
                await server.restart()
                await server.wait_for_connections(2)
                mark = len(live.events)
                live.send_audio(tail + silence_pcm(0.6))  # the utterance ends on the new connection
                assert await live.answer_after(mark) == "echo: hello there"
                await live.close()
    finally:
        remove()
    assert len(reconnects) == 1 and reconnects[0].state_restored
    assert reconnects[0].dropped_silence_ms >= 2000  # of the 3 s of silence, at most 1 s fits
    assert reconnects[0].dropped_audio_ms == 0
    assert reconnects[0].replayed_messages >= 1


def _chunks(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


async def test_content_sent_while_disconnected_reaches_the_model_after_resume(
    make_agent: AgentFactory,
) -> None:
    adk_live_resume.set_testing(False)
    async with FakeLiveServer() as server:
        policy = ResumePolicy(initial_wait=0.5, max_wait=0.5, jitter=False)
        agent = make_agent(server, policy=policy)
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one") == "echo: one"
            server.script(Fault.close(1011, after_setup=True), connection=2)
            await server.close_open(1011)
            await server.wait_for_connections(2)  # attempt 1 failed; now waiting 0.5 s
            assert await live.say("said during the gap") == "echo: said during the gap"
            await live.close()
        assert len(server.connections) == 3


async def test_expired_handle_starts_fresh_with_the_conversation_so_far(
    make_agent: AgentFactory,
) -> None:
    async with FakeLiveServer() as server:
        agent = make_agent(server)
        history = [("user", "my name is Ada"), ("model", "hello Ada")]
        async with await LiveDriver.start(agent, history=history) as live:
            assert await live.say("one") == "echo: one"
            server.expire_handles()
            await server.close_open(1011)
            await server.wait_for_connections(3)
            assert await live.say("recall") == "you said: my name is Ada | one"
            await live.close()
        assert [c.ended_by for c in server.connections[:2]] == ["fault", "refused"]
        assert server.connections[2].history_sends == 1
        assert server.duplicate_history_sends() == 0


async def test_a_handle_older_than_its_validity_is_not_tried(make_agent: AgentFactory) -> None:
    async with FakeLiveServer() as server:
        agent = make_agent(server, policy=ResumePolicy(handle_ttl=0.0))
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one") == "echo: one"
            await asyncio.sleep(0.05)
            await server.close_open(1011)
            await server.wait_for_connections(2)
            assert await live.say("what did I say first?") == "you first said: one"
            await live.close()
        assert server.handles_used() == []
        assert server.connections[1].history_sends == 1


async def test_vertex_transparent_replays_exactly_what_the_handle_did_not_consume() -> None:
    async with FakeLiveServer(chunk_delay=0.05) as server:
        adk_live_resume.install()
        from google.adk.agents import LlmAgent

        agent = LlmAgent(name="assistant", model=server.gemini(vertex=True))
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one") == "echo: one"
            # The answer to "two" is cut once its first chunk went out (a close right after
            # the server took "two" in could come before any of it, with nothing to cut).
            server.script(Fault.close(1011, mid_turn=True), connection=1)
            mark = live.send_text("two")
            cut = await live.wait_for_event(lambda e: e.interrupted, after=mark, timeout=10)
            assert await live.answer_after(live.events.index(cut) + 1) == "echo: two"
            assert await live.say("recall") == "you said: one | two"
            await live.close()
        first, second = server.connections[:2]
        assert first.transparent and second.transparent and second.resumed
        updates = [
            m["sessionResumptionUpdate"]
            for m in first.server_messages
            if "sessionResumptionUpdate" in m and m["sessionResumptionUpdate"].get("newHandle")
        ]
        assert updates and "lastConsumedClientMessageIndex" in updates[-1]
        # "one" was consumed by the handle's state: only "two" went again
        assert [m for m in second.client_messages if "client_content" in m or "clientContent" in m]
        assert second.user_turns[:1] == ["two"]
