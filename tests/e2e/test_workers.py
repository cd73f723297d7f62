"""Several workers, one conversation, in one process: real ``Runner.run_live``, real google-genai,
real TLS websockets to the fake server, and ADK's own session services.

Two runners with their own ``DatabaseSessionService`` on one SQLite file stand for two workers;
``tests/e2e/test_workers_deployment.py`` does the same with two ``adk api_server`` processes.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.sessions import InMemorySessionService

import adk_live_resume
from adk_live_resume import HandleKeyError, ReconnectInfo, ResumePolicy
from adk_live_resume.resumption.handle_coverage import CatchUp, catch_up
from adk_live_resume.resumption.handle_store import STATE_KEY
from adk_live_resume.resumption.stored_handle import HANDLE_KEY_ENV, HandleSealer, SessionKey
from adk_live_resume.testing import FakeLiveServer, Fault
from adk_live_resume.testing.driver import LiveDriver

from ..conftest import AgentFactory, our_tasks
from ..worker_runs import database as _database
from ..worker_runs import move as _move
from ..worker_runs import start as _start
from ..worker_runs import stored_token as _stored_token
from ..worker_runs import text_config as _text_config

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]

APP = "workers_app"
USER = "caller"
STORE = ResumePolicy(store_handle_in_session=True)


@pytest.fixture
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Path | str:
    """Where the workers of the test keep sessions, per its ``kind`` parameter."""
    if request.node.callspec.params["kind"] == "postgresql":
        return str(request.getfixturevalue("postgres").create_database("workers"))
    return tmp_path / "sessions.db"


def _handles_in_events(events: list[Any]) -> list[str]:
    found = []
    for event in events:
        update = getattr(event, "live_session_resumption_update", None)
        if update is not None and update.new_handle:
            found.append(update.new_handle)
    return found


def _adk_yields_handle_events() -> bool:
    """ADK turns resumption updates into events from 1.29 on (matrix: 1.33.0 and 2.x do);
    1.27 and 1.28 drop them in their postprocessing."""
    from adk_live_resume.compat.adk_compat import adk_version, parse_version

    return parse_version(adk_version()) >= (1, 29, 0)


# ---- handles stay server-side ---------------------------------------------------------------


@pytest.mark.parametrize("asked", [False, True], ids=["not-asked", "asked"])
async def test_events_carry_handles_only_when_the_run_config_asked(asked: bool) -> None:
    adk_live_resume.install()
    async with asyncio.timeout(30), FakeLiveServer() as server:
        agent = LlmAgent(name="assistant", model=server.gemini())
        async with await LiveDriver.start(agent, run_config=_text_config(resumption=asked)) as live:
            assert await live.say("one") == "echo: one"
            await server.close_open(1011)  # still resumes: the loop keeps the handle itself
            await server.wait_for_connections(2)
            assert await live.say("two") == "echo: two"
            assert await live.close() is None
        issued = server.handles_issued()
        assert issued and server.connections[1].resumed
        stored = await live.runner.session_service.get_session(
            app_name=live.session.app_name, user_id=live.session.user_id, session_id=live.session.id
        )
        in_db = [h for h in issued if h in stored.model_dump_json()]
        in_events = _handles_in_events(live.events)
    if asked:  # ADK's behaviour stays
        assert set(in_events) <= set(issued)
        assert bool(in_events) == _adk_yields_handle_events()
    else:
        assert in_events == [] and in_db == []


async def test_go_away_moves_at_a_safe_point_when_handles_are_kept_from_adk() -> None:
    reconnects: list[ReconnectInfo] = []
    remove = adk_live_resume.on_reconnect(reconnects.append)
    adk_live_resume.install(ResumePolicy(go_away_margin=0.05))
    # 300 service s at 0.01: the connection lives 3 s real; goAway at 0.5 s, the timer at 2.95 s.
    server = FakeLiveServer(
        time_scale=0.01, connection_lifetime=300, go_away_lead=250, chunk_delay=0.2
    )
    try:
        async with asyncio.timeout(30), server:
            agent = LlmAgent(name="assistant", model=server.gemini())
            config = _text_config(resumption=False)
            async with await LiveDriver.start(agent, run_config=config) as live:
                assert await live.say("a long answer please") == "echo: a long answer please"
                await server.wait_for_connections(2)
                assert await live.say("after") == "echo: after"
                await live.close()
            first = server.connections[0]
            assert first.go_away_sent and first.ended_by == "client"
            assert server.connections[1].resumed and server.history_sends() == 0
            assert _handles_in_events(live.events) == []
    finally:
        remove()
    assert [(r.reason, r.state_restored, r.cause) for r in reconnects] == [
        ("go_away", True, "goAway at a safe point")
    ]


# ---- resume across workers --------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["database", "sqlite", "postgresql"])
async def test_a_second_worker_resumes_from_the_handle_the_first_stored(
    database: Path | str, handle_key: str, kind: str
) -> None:
    from google.adk.runners import Runner

    adk_live_resume.install(STORE)
    async with asyncio.timeout(45), FakeLiveServer() as server:
        agent = LlmAgent(name="assistant", model=server.gemini())
        worker_a = Runner(agent=agent, app_name=APP, session_service=_database(kind, database))
        worker_b = Runner(agent=agent, app_name=APP, session_service=_database(kind, database))
        session = await worker_a.session_service.create_session(app_name=APP, user_id=USER)
        config = _text_config(resumption=False)  # the app never asked for handles

        live_a = await _start(worker_a, session, config)
        assert await live_a.say("my name is Ada") == "echo: my name is Ada"
        token = await _stored_token(worker_b.session_service, session)
        newest = server.handles_issued()[-1]
        owner = SessionKey(APP, USER, session.id)
        assert HandleSealer.from_environment().open(token, owner).handle.handle == newest
        live_b = await _move(live_a, worker_b, config)  # worker A goes away mid-conversation
        assert await live_b.say("what did I say first?") == "you first said: my name is Ada"
        await live_b.close()
        second = server.connections[1]
        assert second.resume_handle == newest and second.resumed and second.history_sends == 0
        assert server.history_sends() == 0
        # what a client of the API can read holds the sealed token only
        seen = await worker_b.session_service.get_session(
            app_name=APP, user_id=USER, session_id=session.id
        )
        dump = seen.model_dump_json()
        assert all(h not in dump for h in server.handles_issued())
        assert _handles_in_events(live_a.events + live_b.events) == []
        # B stored its own newest handle for the next worker
        token_b = await _stored_token(worker_a.session_service, session, changed_from=token)
        opened = HandleSealer.from_environment().open(token_b, owner).handle.handle
        assert opened == server.connections[1].handles_issued[-1]
    assert our_tasks() == []


@pytest.mark.parametrize("why", ["expired", "refused"])
async def test_a_dead_stored_handle_starts_one_fresh_session_with_the_history(
    why: str, handle_key: str
) -> None:
    reconnects: list[ReconnectInfo] = []
    remove = adk_live_resume.on_reconnect(reconnects.append)
    policy = STORE.replace(handle_ttl=0.3) if why == "expired" else STORE
    adk_live_resume.install(policy)
    try:
        async with asyncio.timeout(45), FakeLiveServer() as server:
            agent = LlmAgent(name="assistant", model=server.gemini())
            live = await LiveDriver.start(agent, run_config=_text_config(resumption=False))
            async with live:
                assert await live.say("my name is Ada") == "echo: my name is Ada"
                await _stored_token(live.runner.session_service, live.session)
                await live.close()
            if why == "expired":
                await asyncio.sleep(0.4)
            else:
                server.script(Fault.refuse_resume(), connection=2)
            again = await live.runner.session_service.get_session(
                app_name=live.session.app_name,
                user_id=live.session.user_id,
                session_id=live.session.id,
            )
            later = await _start(live.runner, again, _text_config(resumption=False))
            async with later:
                assert await later.say("what did I say first?") == "you first said: my name is Ada"
                await later.close()
            fresh = server.connections[-1]
            assert not fresh.resumed and fresh.history_sends == 1
            assert server.duplicate_history_sends() == 0
            if why == "refused":
                assert len(server.connections) == 3
                assert (
                    server.connections[1].resume_handle == server.connections[0].handles_issued[-1]
                )
                assert [(r.reason, r.state_restored) for r in reconnects] == [("restart", False)]
            else:
                assert len(server.connections) == 2 and fresh.resume_handle is None
    finally:
        remove()


async def test_opting_in_without_a_key_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(HANDLE_KEY_ENV, raising=False)
    adk_live_resume.install(STORE)
    async with asyncio.timeout(20), FakeLiveServer() as server:
        agent = LlmAgent(name="assistant", model=server.gemini())
        async with await LiveDriver.start(agent) as live:
            error = await live.wait_ended(timeout=10)
    assert isinstance(error, HandleKeyError) and HANDLE_KEY_ENV in str(error)
    assert server.connections == []


async def test_a_token_copied_from_another_session_is_not_used(handle_key: str) -> None:
    from google.adk.events.event import Event
    from google.adk.events.event_actions import EventActions

    adk_live_resume.install(STORE)
    async with asyncio.timeout(30), FakeLiveServer() as server:
        agent = LlmAgent(name="assistant", model=server.gemini())
        async with await LiveDriver.start(agent, run_config=_text_config(resumption=False)) as live:
            assert await live.say("secret of session one") == "echo: secret of session one"
            token = await _stored_token(live.runner.session_service, live.session)
            await live.close()
        service = live.runner.session_service
        other = await service.create_session(
            app_name=live.session.app_name, user_id=live.session.user_id
        )
        planted = Event(author="user", actions=EventActions(state_delta={STATE_KEY: token}))
        await service.append_event(other, planted)  # a client copies the token over
        thief = await _start(live.runner, other, _text_config(resumption=False))
        async with thief:
            assert await thief.say("what did I say first?") == "you said nothing yet"
            await thief.close()
        assert server.connections[-1].resume_handle is None


# ---- the typed API for apps that keep handles themselves ----------------------------------------


async def test_an_app_reads_the_current_handle_and_starts_a_run_from_it() -> None:
    adk_live_resume.install()
    async with asyncio.timeout(30), FakeLiveServer() as server:
        agent = LlmAgent(name="assistant", model=server.gemini())
        async with await LiveDriver.start(agent, run_config=_text_config(resumption=False)) as live:
            assert adk_live_resume.current_handle(live.queue) is None
            assert await live.say("remember me") == "echo: remember me"
            kept = adk_live_resume.current_handle(live.queue)
            assert kept is not None and kept.handle == server.handles_issued()[-1]
            assert 0 <= kept.age() < 30
            await live.close()
        assert adk_live_resume.current_handle(live.queue) == kept  # still there after the run
        config = adk_live_resume.run_config_resuming(kept, _text_config(resumption=False))
        async with await LiveDriver.start(agent, run_config=config) as again:
            assert await again.say("what did I say first?") == "you first said: remember me"
            await again.close()
        second = server.connections[-1]
        assert second.resume_handle == kept.handle and second.resumed
        assert second.history_sends == 0
    assert json.dumps(repr(kept)).count(kept.handle) == 0


# ---- bounded writes, rollback ------------------------------------------------------------------


def _handle_writes(session: Any) -> int:
    return sum(1 for event in session.events if STATE_KEY in (event.actions.state_delta or {}))


@pytest.mark.parametrize("kind", ["database", "postgresql"])
async def test_thirty_turns_add_at_most_three_session_events(
    database: Path | str, handle_key: str, kind: str
) -> None:
    adk_live_resume.install(STORE)  # handle_store_interval: the default 30 s
    async with asyncio.timeout(50), FakeLiveServer(chunk_delay=0.0) as server:
        agent = LlmAgent(name="assistant", model=server.gemini())
        service = _database(kind, database)
        config = _text_config(resumption=False)
        async with await LiveDriver.start(
            agent, run_config=config, session_service=service
        ) as live:
            for turn in range(30):
                assert await live.say(f"turn {turn}") == f"echo: turn {turn}"
            await live.close()
        stored = await service.get_session(
            app_name=live.session.app_name, user_id=live.session.user_id, session_id=live.session.id
        )
    assert len(server.handles_issued()) >= 30
    assert _handle_writes(stored) <= 3  # the first handle, the run's end
    # the newest handle is the one stored, and it covers the whole conversation
    owner = SessionKey(stored.app_name, stored.user_id, stored.id)
    sealed = HandleSealer.from_environment().open(stored.state[STATE_KEY], owner)
    assert sealed.handle.handle == server.handles_issued()[-1]
    assert catch_up(stored.events, sealed.covers or "", "assistant") == CatchUp()


async def test_an_old_token_put_back_by_a_client_is_refused(handle_key: str) -> None:
    from google.adk.events.event import Event
    from google.adk.events.event_actions import EventActions

    adk_live_resume.install(STORE)
    async with asyncio.timeout(45), FakeLiveServer() as server:
        agent = LlmAgent(name="assistant", model=server.gemini())
        config = _text_config(resumption=False)
        async with await LiveDriver.start(agent, run_config=config) as first:
            assert await first.say("my name is Ada") == "echo: my name is Ada"
            old = await _stored_token(first.runner.session_service, first.session)
            await first.close()
        service, session = first.runner.session_service, first.session

        async def latest() -> Any:
            return await service.get_session(
                app_name=session.app_name, user_id=session.user_id, session_id=session.id
            )

        second = await _start(first.runner, await latest(), config)
        async with second:
            assert await second.say("I live in Paris") == "echo: I live in Paris"
            await second.close()
        assert (await latest()).state[STATE_KEY] != old
        # a client that may write state (ADK 2.x /run_live state_delta) puts the old one back
        planted = Event(author="user", actions=EventActions(state_delta={STATE_KEY: old}))
        await service.append_event(await latest(), planted)
        third = await _start(first.runner, await latest(), config)
        async with third:
            assert await third.say("recall") == "you said: my name is Ada | I live in Paris"
            await third.close()
        assert server.connections[-1].resume_handle is None  # a fresh start, not a rollback


@pytest.mark.parametrize(
    "model", ["gemini-live-fake", "gemini-3.1-flash-live-preview", "gemini-3.8-live"]
)
@pytest.mark.parametrize("kind", ["database", "postgresql"])
async def test_a_worker_that_dies_before_writing_its_newest_handle_loses_nothing(
    database: Path | str, handle_key: str, kind: str, model: str
) -> None:
    """A's newest handle waits for handle_store_interval when A dies (its session service
    goes with it): B resumes from the older stored handle and gives the model the exchange
    after it as context (Gemini 3.8 Live takes it too); on Gemini 3.1 Live (kept on the side
    of no client content mid-session, see model_families) B starts one fresh session with the
    whole conversation instead."""
    from google.adk.runners import Runner

    from adk_live_resume.compat.adk_compat import speaks_gemini_3_live

    if "gemini-3" in model and not speaks_gemini_3_live(model):
        pytest.skip("this ADK release does not speak the Gemini 3.x Live dialect")
    adk_live_resume.install(STORE.replace(handle_store_interval=600))
    async with asyncio.timeout(45), FakeLiveServer() as server:
        agent = LlmAgent(name="assistant", model=server.gemini(model))
        worker_a = Runner(agent=agent, app_name=APP, session_service=_database(kind, database))
        worker_b = Runner(agent=agent, app_name=APP, session_service=_database(kind, database))
        session = await worker_a.session_service.create_session(app_name=APP, user_id=USER)
        config = _text_config(resumption=False)
        live_a = await _start(worker_a, session, config)
        assert await live_a.say("my name is Ada") == "echo: my name is Ada"
        await _stored_token(worker_b.session_service, session)
        assert await live_a.say("I live in Paris") == "echo: I live in Paris"

        async def gone(*args: Any, **kwargs: Any) -> None:
            raise ConnectionError("worker A is gone")

        worker_a.session_service.append_event = gone  # type: ignore[method-assign]
        live_b = await _move(live_a, worker_b, config)
        assert await live_b.say("recall") == "you said: my name is Ada | I live in Paris"
        await live_b.close()
        last = server.connections[-1]
        if model != "gemini-3.1-flash-live-preview":
            assert last.resumed and last.resume_handle == server.connections[0].handles_issued[0]
        else:
            assert not last.resumed and last.resume_handle is None and last.history_sends == 1
        assert server.duplicate_history_sends() == 0


# ---- a cancelled run and a slow session service --------------------------------------------------


class SlowHandleWrites(InMemorySessionService):  # type: ignore[misc]
    """Writes of the stored handle by the run of invocation ``slow_invocation`` take
    ``delay`` seconds, like a session database far away; ``handle_writes`` counts the writes
    of the stored handle that completed."""

    def __init__(self, delay: float) -> None:
        super().__init__()
        self.delay = delay
        self.slow_invocation = ""
        self.handle_writes = 0

    async def append_event(self, session: Any, event: Any) -> Any:
        delta = getattr(event.actions, "state_delta", None) or {}
        if STATE_KEY in delta and event.invocation_id == self.slow_invocation:
            await asyncio.sleep(self.delay)
        stored = await super().append_event(session, event)
        if STATE_KEY in delta:
            self.handle_writes += 1
        return stored


@pytest.mark.parametrize("next_run", ["after the write", "at once"])
async def test_a_cancelled_run_ends_at_once_and_the_next_run_resumes_what_the_model_heard(
    make_agent: AgentFactory, handle_key: str, next_run: str
) -> None:
    """The run's end does not wait for the session service: the newest handle is written
    after the run ended. A next run that starts after that resumes with it; one that starts
    while it is written gives that write up (it read the session without it) and resumes with
    the older handle, the exchange after it as catch-up. Either way it knows everything."""
    async with asyncio.timeout(45), FakeLiveServer() as server:
        service = SlowHandleWrites(delay=1.5)
        agent = make_agent(server, policy=STORE)  # handle_store_interval: the default 30 s
        config = _text_config(resumption=False)
        live = await LiveDriver.start(agent, run_config=config, session_service=service)
        assert await live.say("my name is Ada") == "echo: my name is Ada"
        first = await _stored_token(service, live.session)  # the first write goes at once
        # this run's next write waits for its end (the interval), then takes 1.5 s
        service.slow_invocation = live.events[-1].invocation_id
        assert await live.say("I live in Paris") == "echo: I live in Paris"
        owner = SessionKey(live.session.app_name, live.session.user_id, live.session.id)
        older = HandleSealer.from_environment().open(first, owner).handle.handle
        newest = server.handles_issued()[-1]
        assert older != newest
        await server.wait_for(
            lambda: getattr(adk_live_resume.current_handle(live.queue), "handle", None) == newest,
            5,
            what="the run holds the newest handle",
        )
        assert await live.cancel() < 1.0
        cancelled_at = asyncio.get_running_loop().time()
        if next_run == "after the write":
            token = await asyncio.wait_for(
                _stored_token(service, live.session, changed_from=first), 5
            )
            assert HandleSealer.from_environment().open(token, owner).handle.handle == newest
            assert service.handle_writes == 2
            await asyncio.sleep(0.05)
            assert our_tasks() == [], "the write ended with itself"
        again = await service.get_session(
            app_name=owner.app_name, user_id=owner.user_id, session_id=owner.session_id
        )
        later = await _start(live.runner, again, config)
        async with later:
            assert await later.say("recall") == "you said: my name is Ada | I live in Paris"
            await later.close()
        resumed = server.connections[-1]
        assert resumed.resumed
        if next_run == "after the write":
            assert resumed.resume_handle == newest and server.history_sends() == 0
        else:  # the exchange after the older handle went as context (the catch-up)
            assert resumed.resume_handle == older and resumed.history_sends == 1
        assert server.user_turns_answered().count("recall") == 1
        assert server.duplicate_history_sends() == 0
        # the session ends with the next run's newest handle: nothing of the first run's
        # landed under it (its slow write would have by now)
        await asyncio.sleep(max(0.0, cancelled_at + 2.0 - asyncio.get_running_loop().time()))
        stored = await service.get_session(
            app_name=owner.app_name, user_id=owner.user_id, session_id=owner.session_id
        )
        sealed = HandleSealer.from_environment().open(stored.state[STATE_KEY], owner)
        assert sealed.handle.handle == resumed.handles_issued[-1]
