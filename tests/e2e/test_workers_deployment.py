"""Several workers, as deployed: two ``adk api_server`` processes started through our launcher
share one ``DatabaseSessionService`` (on SQLite, and on a throwaway PostgreSQL); a websocket
client talks to worker A on ``/run_live``, A is killed with SIGKILL mid-conversation, and the
client reconnects to worker B with the same session id. The fake Gemini Live server (in this
process, real TLS on 127.0.0.1) says what B did.

Every subprocess is killed in a ``finally``; each step has a hard timeout.
"""

from __future__ import annotations

import asyncio
import json
import socket
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.fernet import Fernet

from adk_live_resume.resumption.handle_store import STATE_KEY
from adk_live_resume.resumption.stored_handle import HANDLE_KEY_ENV, HandleSealer, SessionKey
from adk_live_resume.testing import FakeLiveServer
from adk_live_resume.testing.handles import HandleSchedule
from adk_live_resume.testing.workers import (
    ApiWorker,
    RunLiveClient,
    http_json,
    start_api_worker,
    wait_ready,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(150)]

APP = "voice"
USER = "caller"

AGENT = textwrap.dedent(
    """
    from google.adk.agents import LlmAgent

    root_agent = LlmAgent(
        name="voice",
        model="gemini-live-fake",
        instruction="You are a helpful voice assistant.",
    )
    """
)


def _start_worker(
    name: str, tmp: Path, server: FakeLiveServer, db: str, extra: dict[str, str]
) -> ApiWorker:
    return start_api_worker(
        name, cwd=tmp, agents_dir=tmp / "agents", server=server, session_uri=db, extra_env=extra
    )


_ready = wait_ready
_http = http_json


@pytest.fixture(params=["sqlite", "postgresql"])
def session_db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The workers' ``--session_service_uri``: a SQLite file, or a throwaway PostgreSQL."""
    if request.param == "postgresql":
        return str(request.getfixturevalue("postgres").create_database("deployment"))
    return f"sqlite+aiosqlite:///{tmp_path / 'sessions.db'}"


@pytest.fixture
async def deployment(
    request: pytest.FixtureRequest, tmp_path: Path, session_db: str
) -> AsyncIterator[dict[str, Any]]:
    """The fake server (its settings from an indirect parameter, if any), the agents dir,
    the key; workers are started by the test."""
    (tmp_path / "agents" / APP).mkdir(parents=True)
    (tmp_path / "agents" / APP / "__init__.py").write_text("from . import agent\n")
    (tmp_path / "agents" / APP / "agent.py").write_text(AGENT)
    workers: list[ApiWorker] = []
    async with FakeLiveServer(**getattr(request, "param", {})) as server:
        try:
            yield {
                "server": server,
                "tmp": tmp_path,
                "db": session_db,
                "key": Fernet.generate_key().decode(),
                "workers": workers,
            }
        finally:
            for worker in workers:
                worker.kill()


async def _connect(worker: ApiWorker, session_id: str) -> RunLiveClient:
    return await RunLiveClient.connect(worker, app=APP, user=USER, session_id=session_id)


async def _stored_handle(
    worker: ApiWorker, session_id: str, key: str, timeout: float = 20.0
) -> str:
    """The handle sealed in the session's state, read through the worker's public API."""
    owner = SessionKey(APP, USER, session_id)
    url = f"{worker.http}/apps/{APP}/users/{USER}/sessions/{session_id}"
    async with asyncio.timeout(timeout):
        while True:
            token = (await _http("GET", url)).get("state", {}).get(STATE_KEY)
            if token:
                return HandleSealer([key]).open(token, owner).handle.handle
            await asyncio.sleep(0.1)


@pytest.mark.parametrize("case", ["resume", "expired"])
async def test_worker_b_resumes_the_conversation_of_killed_worker_a(
    deployment: dict[str, Any], case: str
) -> None:
    server: FakeLiveServer = deployment["server"]
    key: str = deployment["key"]
    common = {"ADK_LIVE_RESUME_STORE_HANDLE_IN_SESSION": "true", HANDLE_KEY_ENV: key}
    b_extra = dict(common)
    if case == "expired":
        b_extra["ADK_LIVE_RESUME_HANDLE_TTL"] = "0.5"  # A's handle is too old for B
    a = _start_worker("a", deployment["tmp"], server, deployment["db"], common)
    deployment["workers"].append(a)
    b = _start_worker("b", deployment["tmp"], server, deployment["db"], b_extra)
    deployment["workers"].append(b)
    await asyncio.gather(_ready(a), _ready(b))

    session = await _http("POST", f"{a.http}/apps/{APP}/users/{USER}/sessions", {})
    session_id = session["id"]
    async with asyncio.timeout(100):
        client_a = await _connect(a, session_id)
        assert await client_a.say("my name is Ada") == "echo: my name is Ada"
        handle_a = await _stored_handle(b, session_id, key)  # B can read it from the database
        assert handle_a == server.handles_issued()[-1]
        a.kill()  # SIGKILL mid-conversation: the browser's socket to A dies with it
        await client_a.websocket.close()
        if case == "expired":
            await asyncio.sleep(1.0)

        client_b = await _connect(b, session_id)
        async with client_b.websocket:
            assert await client_b.say("what did I say first?") == "you first said: my name is Ada"
        last = server.connections[-1]
        if case == "resume":
            assert last.resume_handle == handle_a and last.resumed
            assert last.history_sends == 0 and server.history_sends() == 0
        else:
            assert last.resume_handle is None and not last.resumed
            assert last.history_sends == 1 and server.duplicate_history_sends() == 0
        # handles stay server-side: never in an event, never in what the session API returns
        seen = json.dumps(
            await _http("GET", f"{b.http}/apps/{APP}/users/{USER}/sessions/{session_id}")
        )
        for handle in server.handles_issued():
            assert handle not in seen
            assert not any(handle in frame for frame in client_a.raw + client_b.raw)
        assert b.proc.poll() is None, b.tail()


async def _session_holds(worker: ApiWorker, session_id: str, text: str) -> None:
    """Wait until the session (read through ``worker``'s API) holds a user turn ``text``."""
    url = f"{worker.http}/apps/{APP}/users/{USER}/sessions/{session_id}"
    async with asyncio.timeout(20):
        while True:
            events = (await _http("GET", url)).get("events", [])
            said = [
                part.get("text")
                for event in events
                if event.get("author") == "user"
                for part in (event.get("content") or {}).get("parts") or []
            ]
            if text in said:
                return
            await asyncio.sleep(0.05)


#: Answer chunks 1 s apart: an answer streams for about 3 s, so that "mid-answer" still holds
#: when worker B's API shows the turn stored (that read took over 1.2 s with the suite's
#: workers beside it, the answer was complete and B had nothing left to answer).
SLOW_LATE = {"chunk_delay": 1.0, "handle_schedule": HandleSchedule(turn_handle_late=True)}


@pytest.mark.parametrize("deployment", [SLOW_LATE], indirect=True, ids=["late-handles"])
@pytest.mark.parametrize("when", ["mid-answer", "after-answer"])
async def test_nothing_the_session_holds_is_lost_when_a_worker_dies_mid_turn(
    deployment: dict[str, Any], when: str
) -> None:
    """The stored handle is one turn old when A dies (its server sends a turn's handle only
    with the next client message, as a handle can cross a turn on a real network): B gives
    the model what the session holds after it, once."""
    server: FakeLiveServer = deployment["server"]
    key: str = deployment["key"]
    common = {"ADK_LIVE_RESUME_STORE_HANDLE_IN_SESSION": "true", HANDLE_KEY_ENV: key}
    a = _start_worker("a", deployment["tmp"], server, deployment["db"], common)
    b = _start_worker("b", deployment["tmp"], server, deployment["db"], common)
    deployment["workers"] += [a, b]
    await asyncio.gather(_ready(a), _ready(b))
    session_id = (await _http("POST", f"{a.http}/apps/{APP}/users/{USER}/sessions", {}))["id"]
    async with asyncio.timeout(100):
        client_a = await _connect(a, session_id)
        assert await client_a.say("my name is Ada") == "echo: my name is Ada"
        if when == "mid-answer":
            await client_a.send_text("I live in Paris")
            await _session_holds(b, session_id, "I live in Paris")
        else:
            assert await client_a.say("I live in Paris") == "echo: I live in Paris"
        stored = await _stored_handle(b, session_id, key)
        assert stored == server.handles_issued()[0]  # the handle from before Paris
        a.kill()
        await client_a.websocket.close()

        client_b = await _connect(b, session_id)
        async with client_b.websocket:
            if when == "mid-answer":  # B answers the turn A never did, unasked
                assert await client_b.next_answer() == "echo: I live in Paris"
            recalled = await client_b.say("recall")
        assert recalled == "you said: my name is Ada | I live in Paris"
        last = server.connections[-1]
        assert last.resumed and last.resume_handle == stored
        # the finished exchange goes back once, as context; an unanswered turn as a turn
        assert last.history_sends == (1 if when == "after-answer" else 0)
        assert server.duplicate_history_sends() == 0
        assert b.proc.poll() is None, b.tail()


@pytest.mark.parametrize("session_db", ["sqlite"], indirect=True)
async def test_a_worker_whose_port_was_taken_starts_again_on_another(
    deployment: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A port found free can be taken before the worker binds it (any TLS client's ephemeral
    port may be it, with the suite's workers beside it): the worker starts again elsewhere."""
    from adk_live_resume.testing import workers

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        ports = iter([taken.getsockname()[1]])
        real_free_port = workers.free_port
        monkeypatch.setattr(workers, "free_port", lambda: next(ports, None) or real_free_port())
        a = _start_worker("a", deployment["tmp"], deployment["server"], deployment["db"], {})
        deployment["workers"].append(a)
        first = a.port
        await _ready(a)
    assert a.port != first and "address already in use" not in a.tail()
    assert await _http("GET", f"{a.http}/list-apps") == [APP]
