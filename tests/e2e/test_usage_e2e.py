"""Tokens, the context's survival and answer times, end to end: real ``Runner.run_live``, real
google-genai, real TLS websockets on 127.0.0.1, the fake Gemini Live server sending
``usageMetadata`` per turn as the field shows (the whole context counted again each turn; none
on Gemini 3.1 Live in a microphone conversation), on both entry points.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator

import pytest

import adk_live_resume
from adk_live_resume import ReconnectInfo, ResumePolicy, RunStats, TokenUsage
from adk_live_resume.conversation import context_check
from adk_live_resume.testing import (
    FakeLiveServer,
    LiveDriver,
    WireShapes,
    silence_pcm,
    speech_pcm,
)
from adk_live_resume.testing.records import ConnectionRecord

from ..conftest import AgentFactory

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]


@pytest.fixture
def reports() -> Iterator[tuple[list[ReconnectInfo], list[RunStats]]]:
    infos: list[ReconnectInfo] = []
    ended: list[RunStats] = []
    removers = [
        adk_live_resume.on_reconnect(infos.append),
        adk_live_resume.on_run_end(ended.append),
    ]
    yield infos, ended
    for remove in removers:
        remove()


def sent_usage(record: ConnectionRecord) -> TokenUsage | None:
    """What the fake sent on one connection, summed (``None``: no ``usageMetadata``)."""
    sent = [m["usageMetadata"] for m in record.server_messages if "usageMetadata" in m]
    if not sent:
        return None
    prompt = sum(u["promptTokenCount"] for u in sent)
    response = sum(u["responseTokenCount"] for u in sent)
    return TokenUsage(
        prompt_tokens=prompt,
        response_tokens=response,
        total_tokens=sum(u["totalTokenCount"] for u in sent),
        prompt_by_modality=(("TEXT", prompt),),
        response_by_modality=(("TEXT", response),),
        reports=len(sent),
    )


def prompts(record: ConnectionRecord) -> list[int]:
    return [
        m["usageMetadata"]["promptTokenCount"]
        for m in record.server_messages
        if "usageMetadata" in m
    ]


async def test_tokens_are_summed_per_connection_and_per_run_as_each_turn_sent_them(
    make_agent: AgentFactory, reports: tuple[list[ReconnectInfo], list[RunStats]]
) -> None:
    infos, ended = reports
    async with asyncio.timeout(40), FakeLiveServer(chunk_delay=0.0) as server:
        async with await LiveDriver.start(make_agent(server)) as live:
            assert await live.say("one") == "echo: one"
            assert await live.say("two words") == "echo: two words"
            await server.restart()  # a drop
            assert await live.say("three") == "echo: three"
            assert await live.close() is None
        first, second = await server.wait_for_connections(2, finished=True)
    # per turn, the whole context again: never a running total
    assert prompts(first) == [1, 5] and prompts(second) == [9]
    stats = ended[0]
    assert stats.usage_by_connection == (sent_usage(first), sent_usage(second))
    assert stats.usage is not None and stats.usage.prompt_tokens == 15
    assert stats.usage.reports == 3 and stats.usage.total_tokens == 15 + 2 + 3 + 2
    # the reconnect carries the connection the session left, and the context survived
    (info,) = infos
    assert info.reason == "drop" and info.usage == sent_usage(first)
    assert info.context_restored is True and stats.contexts_lost == 0


async def test_a_resumed_session_that_forgot_its_context_is_reported_and_warned_once(
    make_agent: AgentFactory,
    reports: tuple[list[ReconnectInfo], list[RunStats]],
    caplog: pytest.LogCaptureFixture,
) -> None:
    infos, ended = reports
    server_ = FakeLiveServer(chunk_delay=0.0, forget_context_on_resume=True)
    with caplog.at_level(logging.WARNING, logger="adk_live_resume"):
        async with asyncio.timeout(40), server_ as server:
            async with await LiveDriver.start(make_agent(server)) as live:
                assert await live.say("one") == "echo: one"
                assert await live.say("two") == "echo: two"
                await server.restart()
                assert await live.say("recall") == "you said nothing"  # it forgot
                assert await live.say("four") == "echo: four"
                assert await live.close() is None
            first, second = await server.wait_for_connections(2, finished=True)
    assert prompts(first) == [1, 4] and prompts(second) == [1, 5]
    (info,) = infos
    assert info.state_restored and info.context_restored is False
    assert ended[0].contexts_lost == 1 and ended[0].connections == 2  # (the policy is off)
    lost = [r for r in caplog.records if "without its context" in r.getMessage()]
    assert len(lost) == 1 and lost[0].levelno == logging.WARNING
    assert "fell from 4 to 1 tokens" in lost[0].getMessage()
    assert "fresh_start_when_context_lost=True" in lost[0].getMessage()


async def test_a_resume_is_reported_promptly_while_the_user_is_silent_and_judged_later(
    make_agent: AgentFactory,
    reports: tuple[list[ReconnectInfo], list[RunStats]],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The resumed session's first prompt count comes only with its first answer: while the
    user says nothing, the reconnect is reported after ``REPORT_WAIT`` all the same (its
    context not known yet), and the count that comes later is still judged: the lost context
    is warned once and counted."""
    monkeypatch.setattr(context_check, "REPORT_WAIT", 0.5)
    infos, ended = reports
    server_ = FakeLiveServer(chunk_delay=0.0, forget_context_on_resume=True)
    with caplog.at_level(logging.WARNING, logger="adk_live_resume"):
        async with asyncio.timeout(40), server_ as server:
            async with await LiveDriver.start(make_agent(server)) as live:
                assert await live.say("one") == "echo: one"
                assert await live.say("two") == "echo: two"
                await server.restart()
                await server.wait_for(lambda: len(infos) == 1, 5, what="the reconnect report")
                assert infos[0].state_restored and infos[0].context_restored is None
                assert await live.say("recall") == "you said nothing"  # it forgot
                assert await live.close() is None
            await server.wait_for_connections(2, finished=True)
    assert len(infos) == 1 and ended[0].contexts_lost == 1
    lost = [r for r in caplog.records if "without its context" in r.getMessage()]
    assert len(lost) == 1 and "fell from 4 to 1 tokens" in lost[0].getMessage()


async def test_a_lost_context_starts_a_fresh_session_from_the_history_when_asked_to(
    make_agent: AgentFactory, reports: tuple[list[ReconnectInfo], list[RunStats]]
) -> None:
    infos, ended = reports
    notices: list[adk_live_resume.MoveNotice] = []
    remove = adk_live_resume.on_before_move(notices.append)
    policy = ResumePolicy(fresh_start_when_context_lost=True)
    try:
        server_ = FakeLiveServer(chunk_delay=0.0, forget_context_on_resume=True)
        async with asyncio.timeout(40), server_ as server:
            async with await LiveDriver.start(make_agent(server, policy=policy)) as live:
                assert await live.say("one") == "echo: one"
                assert await live.say("two") == "echo: two"
                await server.restart()
                assert await live.say("three") == "echo: three"  # (answered without context)
                await server.wait_for_connections(3)
                assert await live.say("recall") == "you said: one | two | three"
                assert await live.close() is None
            _, second, third = await server.wait_for_connections(3, finished=True)
    finally:
        remove()
    assert second.resumed and not third.resumed and third.history_sends == 1
    assert [(i.reason, i.state_restored, i.context_restored) for i in infos] == [
        ("drop", True, False),
        ("restart", False, None),
    ]
    assert infos[1].cause == "the context was lost on resume"
    assert [(n.reason, n.fresh, n.connection_number) for n in notices] == [("restart", True, 2)]
    assert ended[0].contexts_lost == 1 and ended[0].fresh_starts == 1


async def test_each_answer_is_timed_from_its_user_turn_and_the_run_reports_percentiles(
    make_agent: AgentFactory, reports: tuple[list[ReconnectInfo], list[RunStats]]
) -> None:
    _, ended = reports
    async with (
        asyncio.timeout(40),
        FakeLiveServer(chunk_delay=0.05) as server,
        await LiveDriver.start(make_agent(server)) as live,
    ):
        for text in ("one", "two", "three", "four"):
            loop = asyncio.get_running_loop()
            began = loop.time()
            assert await live.say(text) == f"echo: {text}"
            took = (loop.time() - began) * 1000
        assert await live.close() is None
    stats = ended[0]
    assert stats.answers == 4
    assert stats.first_output_p50_ms is not None and stats.first_output_p95_ms is not None
    # the first output comes before the answer's end: its chunks are 50 ms apart
    assert 0 < stats.first_output_p50_ms <= stats.first_output_p95_ms < took


@pytest.mark.parametrize(
    ("model", "usage"),
    [
        ("gemini-3.1-flash-live-preview", True),  # (the family sends none with a microphone)
        ("gemini-live-fake", False),  # a service that sends none at all, on every release
        ("gemini-live-fake", True),
    ],
    ids=["3.1", "2.x-no-usage", "2.x"],
)
async def test_a_conversation_without_usage_reports_none_and_waits_for_none(
    make_agent: AgentFactory,
    reports: tuple[list[ReconnectInfo], list[RunStats]],
    model: str,
    usage: bool,
) -> None:
    from adk_live_resume.compat import adk_compat

    if model.startswith("gemini-3") and not adk_compat.speaks_gemini_3_live(model):
        pytest.skip("this google-adk release does not know the Gemini 3.x Live dialect")
    infos, ended = reports
    shapes = WireShapes(usage_metadata=usage)
    async with asyncio.timeout(40), FakeLiveServer(chunk_delay=0.01, wire_shapes=shapes) as server:
        async with await LiveDriver.start(make_agent(server, model=model)) as live:
            mark = len(live.events)
            live.send_audio(speech_pcm("spoken words", seconds=0.6) + silence_pcm(0.65))
            assert await live.answer_after(mark) == "echo: spoken words"
            await server.restart()
            await server.wait_for_connections(2)
            # the reconnect is told once the new connection is up: nothing to compare
            await server.wait_for(lambda: bool(infos), 10, what="the reconnect's report")
            assert await live.close() is None
        first, _ = await server.wait_for_connections(2, finished=True)
    (info,) = infos
    if model.startswith("gemini-3.1") or not usage:
        assert sent_usage(first) is None  # 3.1: as measured, none in a microphone conversation
        assert info.usage is None and info.context_restored is None
        assert ended[0].usage is None and ended[0].usage_by_connection == (None, None)
    else:  # (the 2.x family counts a microphone conversation too)
        assert info.usage is not None and info.usage.response_by_modality == (("TEXT", 3),)
