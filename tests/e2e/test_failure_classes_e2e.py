"""When the service says no, end to end: quota, idle closes, poisoned handles, refused models.

Real ``Runner.run_live``, real google-genai, TLS websockets on 127.0.0.1, the fake server
behaving as the field reports (``Fault.quota_close``, ``idle_close_after``,
``Fault.poison_session``, ``refused_models``: each cites its source); every scenario on both
entry points (``install()`` and ``ResumableLlmAgent``). One row of the failure classes' table
each: what the service does, and what the run does for the user.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

import adk_live_resume
from adk_live_resume import (
    IdleCloseError,
    ModelRefusedError,
    PoisonedSessionError,
    QuotaExceededError,
    ReconnectInfo,
    RunStats,
)
from adk_live_resume.rules.errors import Drop
from adk_live_resume.testing import FakeLiveServer, Fault
from adk_live_resume.testing.driver import LiveDriver
from adk_live_resume.testing.faults import INTERNAL_ERROR_REASON, QUOTA_REASON

from ..conftest import AgentFactory

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]

#: Real seconds without a client message before the fake's idle close: long enough to count
#: as an idle socket for the loop (``failure_classes.IDLE_QUIET``, 3 s), short for a test.
IDLE_AFTER = 4.0
RETIRED = "gemini-live-retired"


class Reports:
    """The reconnects and the run ends reported while it is open."""

    def __init__(self) -> None:
        self.reconnects: list[ReconnectInfo] = []
        self.runs: list[RunStats] = []

    def steps(self) -> list[tuple[str, bool, str]]:
        return [(r.reason, r.state_restored, r.failure_class) for r in self.reconnects]


@pytest.fixture
def reports() -> Iterator[Reports]:
    seen = Reports()
    removers = [
        adk_live_resume.on_reconnect(seen.reconnects.append),
        adk_live_resume.on_run_end(seen.runs.append),
    ]
    yield seen
    for remove in removers:
        remove()


# ---- a transient close ------------------------------------------------------------------


async def test_one_internal_error_resumes_at_once_as_before(
    make_agent: AgentFactory, reports: Reports
) -> None:
    async with FakeLiveServer() as server:
        async with await LiveDriver.start(make_agent(server)) as live:
            assert await live.say("one") == "echo: one"
            await server.close_open(1011, INTERNAL_ERROR_REASON)
            assert await live.say("two") == "echo: two"
            assert await live.close() is None
        assert len(server.connections) == 2 and server.connections[1].resumed
    assert reports.steps() == [("drop", True, "")]
    assert (
        reports.reconnects[0].attempt == 1 and INTERNAL_ERROR_REASON in reports.reconnects[0].cause
    )


# ---- quota ------------------------------------------------------------------------------


async def test_a_spent_quota_ends_the_run_after_one_confirming_attempt_quoting_the_reason(
    make_agent: AgentFactory, reports: Reports
) -> None:
    async with FakeLiveServer() as server:
        async with await LiveDriver.start(make_agent(server)) as live:
            assert await live.say("one") == "echo: one"
            server.script(Fault.quota_close(), connection=2)  # set up, then closed 0.8 s later
            server.script(Fault.quota_close(after_seconds=0), connection=1)
            error = await live.wait_ended(timeout=20)
        first, confirming = server.connections
        assert (first.close_code, first.close_reason) == (1011, QUOTA_REASON)
        assert confirming.resumed and confirming.close_reason == QUOTA_REASON
    assert isinstance(error, QuotaExceededError), error
    assert error.reason == QUOTA_REASON and QUOTA_REASON in str(error)
    assert str(error).startswith("The Live API quota is spent")
    assert reports.runs[0].connections == 2 and "QuotaExceededError" in str(reports.runs[0].error)


async def test_a_quota_close_that_one_more_connection_does_not_confirm_goes_on(
    make_agent: AgentFactory, reports: Reports
) -> None:
    async with FakeLiveServer() as server, await LiveDriver.start(make_agent(server)) as live:
        assert await live.say("one") == "echo: one"
        server.script(Fault.quota_close(after_seconds=0), connection=1)
        await server.wait_for_connections(2)
        assert await live.say("two") == "echo: two"
        assert await live.close() is None
    assert reports.steps() == [("drop", True, "quota")]


async def test_a_retry_hook_may_wait_for_the_quota_instead(
    make_agent: AgentFactory, reports: Reports
) -> None:
    asked: list[tuple[int | None, int]] = []

    def wait_for_the_bucket(drop: Drop, attempt: int) -> float | None:
        asked.append((drop.code, attempt))
        return 0.3 if "quota" in drop.reason else None

    remove = adk_live_resume.on_retry(wait_for_the_bucket)
    try:
        async with FakeLiveServer() as server:
            async with await LiveDriver.start(make_agent(server)) as live:
                assert await live.say("one") == "echo: one"
                server.script(Fault.quota_close(), connection=2)
                server.script(Fault.quota_close(after_seconds=0), connection=1)
                await server.wait_for_connections(3, timeout=20)
                assert await live.say("two") == "echo: two"
                assert await live.close() is None
            assert [c.close_reason for c in server.connections[:2]] == [QUOTA_REASON] * 2
    finally:
        remove()
    assert asked == [(1011, 1), (1011, 2)]
    assert [step[2] for step in reports.steps()] == ["quota", "quota"]


# ---- idle closes ------------------------------------------------------------------------


async def test_an_idle_close_resumes_the_session(
    make_agent: AgentFactory, reports: Reports
) -> None:
    async with FakeLiveServer(idle_close_after=IDLE_AFTER) as server:
        async with await LiveDriver.start(make_agent(server)) as live:
            assert await live.say("one") == "echo: one"
            await server.wait_for_connections(2, timeout=IDLE_AFTER + 10)
            assert await live.say("what did I say first?") == "you first said: one"
            assert await live.close() is None
        idle, resumed = server.connections
        assert (idle.ended_by, idle.close_code, idle.go_away_sent) == ("idle", 1008, False)
        assert resumed.resumed and server.history_sends() == 0
    assert reports.steps() == [("drop", True, "idle_close")]


async def test_a_second_idle_close_in_a_row_ends_the_run_saying_so(
    make_agent: AgentFactory, reports: Reports
) -> None:
    async with FakeLiveServer(idle_close_after=IDLE_AFTER) as server:
        async with await LiveDriver.start(make_agent(server)) as live:
            assert await live.say("one") == "echo: one"
            error = await live.wait_ended(timeout=2 * IDLE_AFTER + 15)
        assert [c.ended_by for c in server.connections] == ["idle", "idle"]
    assert isinstance(error, IdleCloseError), error
    assert "idle connection twice in a row" in str(error) and error.code == 1008
    assert reports.steps() == [("drop", True, "idle_close")]


async def test_an_idle_close_whose_handle_is_refused_starts_fresh_with_the_conversation(
    make_agent: AgentFactory, reports: Reports
) -> None:
    async with FakeLiveServer(idle_close_after=IDLE_AFTER) as server:
        server.script(Fault.refuse_resume(), connection=2)
        async with await LiveDriver.start(make_agent(server)) as live:
            assert await live.say("one") == "echo: one"
            await server.wait_for_connections(3, timeout=IDLE_AFTER + 10)
            assert await live.say("what did I say first?") == "you first said: one"
            assert await live.close() is None
        idle, refused, fresh = server.connections
        assert (idle.ended_by, refused.ended_by) == ("idle", "refused")
        assert fresh.resume_handle is None and fresh.history_sends == 1
    assert reports.steps() == [("restart", False, "refused_handle")]
    assert reports.reconnects[0].cause.startswith("1008")  # the idle close began it


# ---- poisoned handles -------------------------------------------------------------------


@pytest.mark.parametrize("where", ["setup", "first input"])
async def test_a_poisoned_handle_is_left_for_a_fresh_start_that_saves_the_conversation(
    make_agent: AgentFactory, reports: Reports, where: str
) -> None:
    async with FakeLiveServer() as server:
        async with await LiveDriver.start(make_agent(server)) as live:
            assert await live.say("one") == "echo: one"
            poison = Fault.poison_session(at_first_input=where == "first input")
            server.script(poison, connection=1)  # the server error, now
            assert await live.say("two", timeout=20) == "echo: two"
            assert await live.say("what did I say first?") == "you first said: one"
            assert await live.close() is None
        first, *poisoned, fresh = server.connections
        assert first.close_reason == INTERNAL_ERROR_REASON
        assert [(c.resumed, c.ended_by) for c in poisoned] == [(True, "poisoned")] * 2
        assert not fresh.resumed and fresh.history_sends == 1
        assert server.user_turns_answered()[-2:] == ["two", "what did I say first?"]
    assert reports.steps()[-1] == ("restart", False, "poisoned_handle")
    assert reports.runs[0].fresh_starts == 1


async def test_a_conversation_that_dies_on_a_fresh_session_too_ends_naming_model_and_close(
    make_agent: AgentFactory, reports: Reports
) -> None:
    async with FakeLiveServer() as server:
        async with await LiveDriver.start(make_agent(server)) as live:
            assert await live.say("one") == "echo: one"
            server.flap(1011, INTERNAL_ERROR_REASON, resuming_only=False)
            await server.close_open(1011, INTERNAL_ERROR_REASON)
            error = await live.wait_ended(timeout=20)
        assert [c.resumed for c in server.connections] == [False, True, True, False]
    assert isinstance(error, PoisonedSessionError), error
    assert error.model == "gemini-live-fake" and "'gemini-live-fake'" in str(error)
    assert INTERNAL_ERROR_REASON in str(error) and error.code == 1011


# ---- refused models ---------------------------------------------------------------------


async def test_a_model_refused_at_every_setup_ends_the_run_naming_it(
    make_agent: AgentFactory, reports: Reports
) -> None:
    async with FakeLiveServer(refused_models={RETIRED}) as server:
        live = await LiveDriver.start(make_agent(server, model=RETIRED))
        error = await live.wait_ended(timeout=20)
        assert [(c.ended_by, c.close_code) for c in server.connections] == [("refused", 1011)] * 2
    assert isinstance(error, ModelRefusedError), error
    assert error.model == RETIRED and repr(RETIRED) in str(error)
    assert INTERNAL_ERROR_REASON in str(error) and reports.steps() == []


async def test_a_model_refused_mid_run_is_told_from_a_poisoned_handle(
    make_agent: AgentFactory, reports: Reports
) -> None:
    async with FakeLiveServer() as server:
        async with await LiveDriver.start(make_agent(server)) as live:
            assert await live.say("one") == "echo: one"
            server.change_settings(refused_models=frozenset({"gemini-live-fake"}))
            await server.close_open(1011, INTERNAL_ERROR_REASON)
            error = await live.wait_ended(timeout=20)
        later = server.connections[1:]
        assert [(c.ended_by, c.resume_handle is not None) for c in later] == [
            ("refused", True),
            ("refused", True),
            ("refused", False),
        ]
    assert isinstance(error, ModelRefusedError), error
    assert error.model == "gemini-live-fake"


async def test_nothing_is_left_running_after_a_class_ends_the_run(
    make_agent: AgentFactory,
) -> None:
    async with FakeLiveServer(refused_models={RETIRED}) as server:
        live = await LiveDriver.start(make_agent(server, model=RETIRED))
        await live.wait_ended(timeout=20)
        await asyncio.sleep(0.1)
        assert server.open_connections() == 0 and len(server.connections) == 2
