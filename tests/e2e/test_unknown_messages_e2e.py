"""A server message of a kind google-genai does not know is skipped and the conversation goes on.

google-genai 1.75 and later raise ``TypeError`` in ``AsyncSession._receive`` on a message
whose top-level keys it does not know, and the live run died with it (stock ADK too). The
service adds kinds over time. End to end: real ``Runner.run_live``, real google-genai, real
TLS websockets to the fake server, which sends ``{"someFutureMessage": {...}}`` between turns
(:meth:`FakeLiveServer.send_message_now`) and in the middle of an answer
(:meth:`Fault.server_message`), and right after the setup, on both entry points.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator

import pytest

import adk_live_resume
from adk_live_resume import RunStats
from adk_live_resume.testing import FakeLiveServer, Fault
from adk_live_resume.testing.driver import LiveDriver

from ..conftest import AgentFactory

pytestmark = [pytest.mark.core, pytest.mark.e2e, pytest.mark.timeout(60)]

FUTURE = {"someFutureMessage": {"detail": 1}}
LATER = {"anotherFutureMessage": {}}


@pytest.fixture
async def run_stats() -> AsyncIterator[list[RunStats]]:
    """The stats of every patched live run that ends during the test."""
    stats: list[RunStats] = []
    remove = adk_live_resume.on_run_end(stats.append)
    yield stats
    remove()


def _skip_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        record.getMessage()
        for record in caplog.records
        if record.levelno == logging.WARNING and "skipped a server message" in record.getMessage()
    ]


async def test_unknown_messages_between_turns_are_skipped_counted_and_named_once(
    make_agent: AgentFactory,
    run_stats: list[RunStats],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="adk_live_resume")
    async with asyncio.timeout(40), FakeLiveServer() as server:
        async with await LiveDriver.start(make_agent(server)) as live:
            assert await live.say("first") == "echo: first"
            assert await server.send_message_now(FUTURE) == [1]
            assert await server.send_message_now(FUTURE) == [1]  # the same kind: not named again
            assert await server.send_message_now(LATER) == [1]
            assert await live.say("second") == "echo: second"
            assert await live.close() is None
        assert len(server.connections) == 1  # no reconnect: the connection went on
        assert server.user_turns_answered() == ["first", "second"]
    [stats] = run_stats
    assert stats.error is None and stats.connections == 1
    assert stats.unknown_messages_skipped == 3
    warnings = _skip_warnings(caplog)
    assert len(warnings) == 2, warnings
    assert "'someFutureMessage'" in warnings[0] and "'anotherFutureMessage'" in warnings[1]


async def test_an_unknown_message_mid_answer_loses_and_repeats_nothing(
    make_agent: AgentFactory, run_stats: list[RunStats]
) -> None:
    question = "a question long enough for an answer in several pieces"
    async with asyncio.timeout(40), FakeLiveServer() as server:
        server.script(Fault.server_message(FUTURE, mid_turn=True), connection=1)
        async with await LiveDriver.start(make_agent(server)) as live:
            assert await live.say(question) == f"echo: {question}"
            assert await live.say("next") == "echo: next"
            assert await live.close() is None
        [record] = server.connections
        kinds = [next(iter(message)) for message in record.server_messages]
        sent_at = kinds.index("someFutureMessage")
        # sent in the middle of the answer: model output on both sides, before its turnComplete
        before, after = record.server_messages[:sent_at], record.server_messages[sent_at + 1 :]
        assert any("modelTurn" in m.get("serverContent", {}) for m in before)
        assert any("modelTurn" in m.get("serverContent", {}) for m in after)
        assert not any(m.get("serverContent", {}).get("turnComplete") for m in before[1:])
        assert server.user_turns_answered() == [question, "next"]
    [stats] = run_stats
    assert stats.error is None and stats.connections == 1
    assert stats.unknown_messages_skipped == 1


async def test_an_unknown_message_right_after_the_setup_is_skipped_too(
    make_agent: AgentFactory, run_stats: list[RunStats]
) -> None:
    """It can arrive with ``setupComplete``, before the loop watches the connection: it is
    taken out of the frames websockets holds unread."""
    async with asyncio.timeout(40), FakeLiveServer() as server:
        server.script(Fault.server_message(FUTURE, after_setup=True), connection=1)
        async with await LiveDriver.start(make_agent(server)) as live:
            assert await live.say("first") == "echo: first"
            assert await live.close() is None
        assert server.connections[0].server_keys()[:2] == ["setupComplete", "someFutureMessage"]
        assert server.user_turns_answered() == ["first"]
    [stats] = run_stats
    assert stats.error is None and stats.connections == 1
    assert stats.unknown_messages_skipped == 1


async def test_a_flood_of_unknown_kinds_is_named_up_to_a_cap_and_logged_in_a_few_lines(
    make_agent: AgentFactory,
    run_stats: list[RunStats],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A broken or hostile server sends messages of hundreds of new 100-character keys: the
    run names 32 kinds (cut short), says once that it names no more, counts the rest, and
    the conversation goes on."""
    caplog.set_level(logging.INFO, logger="adk_live_resume")
    flood = [
        {f"flood{message}-{n:03d}-" + "x" * 88: {} for n in range(500)} for message in range(5)
    ]
    async with asyncio.timeout(40), FakeLiveServer() as server:
        async with await LiveDriver.start(make_agent(server)) as live:
            assert await live.say("first") == "echo: first"
            for message in flood:
                assert await server.send_message_now(message) == [1]
            assert await live.say("second") == "echo: second"
            assert await live.close() is None
        assert len(server.connections) == 1
    loud = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert sum(len(m) for m in loud) < 4000, [len(m) for m in loud]
    named = _skip_warnings(caplog)
    assert len(named) == 1 and named[0].count("'flood0-") == 32, named
    kinds = re.findall(r"'(flood[^']*)'", named[0])
    assert len(kinds) == 32 and all(len(kind) == 64 and kind.endswith("…") for kind in kinds)
    assert sum("further kinds are skipped and counted, not named" in m for m in loud) == 1
    [stats] = run_stats
    assert stats.error is None and stats.unknown_messages_skipped == 5
    assert stats.unknown_kinds_unnamed == 5 * 500 - 32


async def test_unknown_fields_of_known_kinds_mid_answer_pass_unnoticed(
    make_agent: AgentFactory, run_stats: list[RunStats], caplog: pytest.LogCaptureFixture
) -> None:
    """A message of known kinds with fields google-genai does not know (the service adds
    fields too) is read as any other: nothing is skipped, nothing is lost or said twice."""
    newer = {
        "serverContent": {"someFutureField": {"detail": 1}},
        "usageMetadata": {"totalTokenCount": 7, "futureTokenCount": 3},
    }
    question = "a question long enough for an answer in several pieces"
    async with asyncio.timeout(40), FakeLiveServer() as server:
        server.script(Fault.server_message(newer, mid_turn=True), connection=1)
        async with await LiveDriver.start(make_agent(server)) as live:
            assert await live.say(question) == f"echo: {question}"
            assert await live.say("next") == "echo: next"
            assert await live.close() is None
        [record] = server.connections
        assert newer in record.server_messages
        assert server.user_turns_answered() == [question, "next"]
    [stats] = run_stats
    assert stats.error is None and stats.connections == 1
    assert stats.unknown_messages_skipped == 0 and _skip_warnings(caplog) == []
