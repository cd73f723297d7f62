"""Several workers, as deployed: two ``adk api_server`` processes started through our launcher
share one ``DatabaseSessionService`` on SQLite; a websocket client talks to worker A on
``/run_live``, A is killed with SIGKILL mid-conversation, and the client reconnects to worker B
with the same session id. The fake Gemini Live server (in this process, real TLS on 127.0.0.1)
says what B did.

Every subprocess is killed in a ``finally``; each step has a hard timeout.
"""

from __future__ import annotations

import asyncio
import json
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.fernet import Fernet

from adk_live_resume.handle_store import STATE_KEY
from adk_live_resume.stored_handle import HANDLE_KEY_ENV, HandleSealer, SessionKey
from adk_live_resume.testing import FakeLiveServer

from .adk_processes import AdkProcess, LiveClient, connect_live, http, ready, start_adk

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
    name: str, tmp: Path, server: FakeLiveServer, db: Path, extra: dict[str, str]
) -> AdkProcess:
    session_db = ("--session_service_uri", f"sqlite+aiosqlite:///{db}")  # shared, on SQLite
    return start_adk(name, tmp, tmp / "agents", server, args=session_db, extra_env=extra)


@pytest.fixture
async def deployment(tmp_path: Path) -> AsyncIterator[dict[str, Any]]:
    """The fake server, the agents dir, the key; workers are started by the test."""
    (tmp_path / "agents" / APP).mkdir(parents=True)
    (tmp_path / "agents" / APP / "__init__.py").write_text("from . import agent\n")
    (tmp_path / "agents" / APP / "agent.py").write_text(AGENT)
    workers: list[AdkProcess] = []
    async with FakeLiveServer() as server:
        try:
            yield {
                "server": server,
                "tmp": tmp_path,
                "db": tmp_path / "sessions.db",
                "key": Fernet.generate_key().decode(),
                "workers": workers,
            }
        finally:
            for worker in workers:
                worker.kill()


async def _connect(worker: AdkProcess, session_id: str) -> Any:
    return await connect_live(worker, APP, USER, session_id)


async def _stored_handle(
    worker: AdkProcess, session_id: str, key: str, timeout: float = 20.0
) -> str:
    """The handle sealed in the session's state, read through the worker's public API."""
    owner = SessionKey(APP, USER, session_id)
    url = f"{worker.http}/apps/{APP}/users/{USER}/sessions/{session_id}"
    async with asyncio.timeout(timeout):
        while True:
            token = (await http("GET", url)).get("state", {}).get(STATE_KEY)
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
    await asyncio.gather(ready(a), ready(b))

    session = await http("POST", f"{a.http}/apps/{APP}/users/{USER}/sessions", {})
    session_id = session["id"]
    async with asyncio.timeout(100):
        websocket = await _connect(a, session_id)
        client_a = LiveClient(websocket)
        assert await client_a.say("my name is Ada") == "echo: my name is Ada"
        handle_a = await _stored_handle(b, session_id, key)  # B can read it from the database
        assert handle_a == server.handles_issued()[-1]
        a.kill()  # SIGKILL mid-conversation: the browser's socket to A dies with it
        await websocket.close()
        if case == "expired":
            await asyncio.sleep(1.0)

        async with await _connect(b, session_id) as websocket_b:
            client_b = LiveClient(websocket_b)
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
            await http("GET", f"{b.http}/apps/{APP}/users/{USER}/sessions/{session_id}")
        )
        for handle in server.handles_issued():
            assert handle not in seen
            assert not any(handle in frame for frame in client_a.raw + client_b.raw)
        assert b.proc.poll() is None, b.tail()
