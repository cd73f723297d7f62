"""The retry decision end to end: a handshake refused with 429 and ``Retry-After``, and the
user's retry hook (``on_retry``), through the real ``Runner.run_live``, google-genai and TLS
websockets against the fake server on 127.0.0.1. Both entry points. Also the fake's
``Fault.refuse_handshake`` constructor.

The suite's testing switch is on (no backoff sleeps): a wait seen here is one the server's
``Retry-After`` or the hook asked for.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

import adk_live_resume
from adk_live_resume import Drop, ReconnectFailedError, ReconnectInfo
from adk_live_resume.testing import FakeLiveServer, Fault
from adk_live_resume.testing.driver import LiveDriver

from ..conftest import AgentFactory

pytestmark = [pytest.mark.timeout(60)]


@pytest.fixture
def asked() -> Iterator[list[tuple[Drop, int]]]:
    """Every question a retry hook is asked during the test (the hook is removed after)."""
    seen: list[tuple[Drop, int]] = []
    yield seen


@pytest.mark.e2e
async def test_a_429_with_retry_after_is_waited_out_then_the_session_resumes_with_nothing_lost(
    make_agent: AgentFactory,
) -> None:
    reconnects: list[ReconnectInfo] = []
    remove = adk_live_resume.on_reconnect(reconnects.append)
    try:
        async with FakeLiveServer() as server:
            agent = make_agent(server)
            async with await LiveDriver.start(agent) as live:
                assert await live.say("first") == "echo: first"
                # the next connection attempt is refused: busy, come back in 1.5 s
                server.script(Fault.refuse_handshake(429, retry_after=1.5), connection=2)
                await server.close_open(1011)
                await server.wait_for_connections(2)
                mark = live.send_text("second")  # typed during the outage
                assert await live.answer_after(mark, timeout=15) == "echo: second"
                assert await live.say("recall") == "you said: first | second"
                assert await live.close() is None
            first, refused, resumed = server.connections
            assert (first.ended_by, first.close_code) == ("fault", 1011)
            assert refused.ended_by == "handshake_refused" and refused.setup is None
            assert refused.close_reason == "HTTP 429 (Retry-After: 1.5)"
            assert resumed.resumed and resumed.resume_handle == first.handles_issued[-1]
            assert refused.ended_at is not None
            waited = resumed.accepted_at - refused.ended_at
            assert 1.5 <= waited < 1.5 + 3.0, waited  # about what the server asked
            assert server.user_turns_answered() == ["first", "second", "recall"]
            assert server.history_sends() == 0 and server.duplicate_history_sends() == 0
            assert server.resent_consumed() == []
        assert [(r.reason, r.attempt) for r in reconnects] == [("drop", 2)]
    finally:
        remove()


@pytest.mark.e2e
async def test_a_retry_after_past_the_outage_deadline_gives_up_at_once_saying_so(
    make_agent: AgentFactory,
) -> None:
    policy = adk_live_resume.ResumePolicy(outage_timeout=5.0)
    async with FakeLiveServer() as server:
        agent = make_agent(server, policy=policy)
        async with await LiveDriver.start(agent) as live:
            assert await live.say("first") == "echo: first"
            server.script(Fault.refuse_handshake(429, retry_after=600), connection=2)
            started = asyncio.get_running_loop().time()
            await server.close_open(1011)
            error = await live.wait_ended(timeout=10)
            took = asyncio.get_running_loop().time() - started
        assert isinstance(error, ReconnectFailedError), error
        assert "the server (Retry-After) asked to wait 600 s" in str(error)
        assert "outage_timeout=5 s" in str(error)
        assert took < 4.0  # not a sleep towards a certain failure
        assert len(server.connections) == 2


@pytest.mark.e2e
async def test_a_hook_that_gives_up_ends_the_run_with_a_clear_error(
    make_agent: AgentFactory, asked: list[tuple[Drop, int]]
) -> None:
    def give_up_on_1011(drop: Drop, attempt: int) -> bool | None:
        asked.append((drop, attempt))
        return False if drop.code == 1011 else None

    remove = adk_live_resume.on_retry(give_up_on_1011)
    try:
        async with FakeLiveServer() as server:
            agent = make_agent(server)
            async with await LiveDriver.start(agent) as live:
                assert await live.say("first") == "echo: first"
                await server.close_open(1011, "overloaded")
                error = await live.wait_ended(timeout=10)
            assert isinstance(error, ReconnectFailedError), error
            assert "the retry hook" in str(error) and "give_up_on_1011" in str(error)
            assert "on_retry()" in str(error)
            assert isinstance(error.__cause__, Exception)
            assert len(server.connections) == 1  # not even an early dial reached it
    finally:
        remove()
    # asked once, on the close frame (the loop's later question reused the answer)
    assert [(d.kind, d.code, d.reason, a) for d, a in asked] == [("closed", 1011, "overloaded", 1)]


@pytest.mark.e2e
async def test_a_hook_that_returns_a_wait_is_used(
    make_agent: AgentFactory, asked: list[tuple[Drop, int]]
) -> None:
    def wait_a_second(drop: Drop, attempt: int) -> float:
        asked.append((drop, attempt))
        return 1.0

    remove = adk_live_resume.on_retry(wait_a_second)
    try:
        async with FakeLiveServer() as server:
            agent = make_agent(server)
            async with await LiveDriver.start(agent) as live:
                assert await live.say("first") == "echo: first"
                await server.close_open(1011)
                await server.wait_for_connections(2, timeout=10)
                assert await live.say("second") == "echo: second"
                await live.close()
            first, second = server.connections
            assert first.ended_at is not None
            waited = second.accepted_at - first.ended_at
            assert 1.0 <= waited < 1.0 + 3.0, waited
            assert second.resumed
            assert server.user_turns_answered() == ["first", "second"]
    finally:
        remove()
    assert [(d.code, a) for d, a in asked] == [(1011, 1)]


@pytest.mark.e2e
async def test_a_hook_that_raises_ends_the_run_with_a_clear_error_not_a_hang(
    make_agent: AgentFactory,
) -> None:
    def broken(drop: Drop, attempt: int) -> float:
        raise KeyError("no such tenant")

    remove = adk_live_resume.on_retry(broken)
    try:
        async with FakeLiveServer() as server:
            agent = make_agent(server)
            async with await LiveDriver.start(agent) as live:
                assert await live.say("first") == "echo: first"
                await server.close_open(1011)
                error = await live.wait_ended(timeout=10)
        assert isinstance(error, ReconnectFailedError), error
        assert "the retry hook" in str(error) and "broken raised KeyError" in str(error)
        assert isinstance(error.__cause__, KeyError)
    finally:
        remove()


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("answer", "problem"),
    [("soon", "answered 'soon'"), (-1.0, "answered -1.0 seconds"), (float("nan"), "nan")],
    ids=["text", "negative", "nan"],
)
async def test_a_hook_answering_nonsense_ends_the_run_naming_it(
    make_agent: AgentFactory, answer: object, problem: str
) -> None:
    def odd_hook(drop: Drop, attempt: int) -> object:
        return answer

    remove = adk_live_resume.on_retry(odd_hook)  # type: ignore[arg-type]
    try:
        async with FakeLiveServer() as server:
            agent = make_agent(server)
            async with await LiveDriver.start(agent) as live:
                assert await live.say("first") == "echo: first"
                await server.close_open(1011)
                error = await live.wait_ended(timeout=10)
        assert isinstance(error, ReconnectFailedError), error
        assert "odd_hook" in str(error) and problem in str(error)
        assert "on_retry()" in str(error)
        assert len(server.connections) == 1
    finally:
        remove()


def test_refuse_handshake_takes_an_http_error_and_a_retry_after_of_seconds_or_a_date() -> None:
    assert Fault.refuse_handshake().status == 429
    assert Fault.refuse_handshake(503, retry_after=2).retry_after == "2"
    date = "Fri, 27 Nov 2026 06:00:00 GMT"
    assert Fault.refuse_handshake(retry_after=date).retry_after == date
    assert "status" not in repr(Fault.refuse_handshake())  # (pinned plans record reprs)
    with pytest.raises(ValueError, match="HTTP error status"):
        Fault.refuse_handshake(200)
    with pytest.raises(ValueError, match="retry_after must be >= 0"):
        Fault.refuse_handshake(retry_after=-1)
