"""Runs of one conversation on several workers in one process: two runners, one session store.

Plain functions the worker tests share (``tests/e2e/test_workers.py``, the workers' mid-request
tests and soak): a run started on a runner's copy of the session, moved to another worker
when the first one's client goes away, and the sealed handle the session holds.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from adk_live_resume.resumption.handle_store import STATE_KEY
from adk_live_resume.resumption.stored_handle import HandleSealer, SessionKey
from adk_live_resume.testing.driver import LiveDriver


def text_config(*, resumption: bool = False) -> Any:
    """A ``RunConfig`` for text answers; ``resumption``: the app asks for handles itself."""
    from google.adk.agents.run_config import RunConfig
    from google.genai import types

    return RunConfig(
        response_modalities=[types.Modality.TEXT],
        session_resumption=types.SessionResumptionConfig() if resumption else None,
    )


def database(kind: str, where: Path | str) -> Any:
    """ADK's session service ``kind`` on the SQLite file (or PostgreSQL URL) ``where`` (one
    per worker)."""
    if kind == "sqlite":
        from google.adk.sessions.sqlite_session_service import SqliteSessionService

        return SqliteSessionService(db_path=str(where))
    pytest.importorskip("sqlalchemy", reason="DatabaseSessionService needs sqlalchemy")
    from google.adk.sessions import DatabaseSessionService

    if kind == "postgresql":
        return DatabaseSessionService(db_url=str(where))
    return DatabaseSessionService(db_url=f"sqlite+aiosqlite:///{where}")


async def start(runner: Any, session: Any, run_config: Any) -> LiveDriver:
    """A LiveDriver on ``runner``'s ``session`` (LiveDriver.start makes its own runner)."""
    from google.adk.agents.live_request_queue import LiveRequestQueue

    driver = LiveDriver(runner, session, LiveRequestQueue(), run_config)
    driver._task = asyncio.create_task(driver._consume(session.user_id), name="LiveDriver.run_live")
    return driver


async def move(live_a: LiveDriver, worker_b: Any, run_config: Any) -> LiveDriver:
    """Worker A's run ends (cancelled: its client is gone); the session goes on on worker B,
    read from B's session service."""
    live_a.task.cancel()
    await asyncio.wait({live_a.task}, timeout=5)
    session = live_a.session
    session_b = await worker_b.session_service.get_session(
        app_name=session.app_name, user_id=session.user_id, session_id=session.id
    )
    return await start(worker_b, session_b, run_config)


async def stored_token(service: Any, session: Any, *, changed_from: object = None) -> str:
    """Wait until the session's state holds a sealed handle (other than ``changed_from``)."""
    while True:
        stored = await service.get_session(
            app_name=session.app_name, user_id=session.user_id, session_id=session.id
        )
        token = stored.state.get(STATE_KEY)
        if isinstance(token, str) and token != changed_from:
            return token
        await asyncio.sleep(0.02)


def two_workers(agent: Any, where: Path, app_name: str) -> tuple[Any, Any]:
    """Two workers (runners) of ``agent``, each with its own ``DatabaseSessionService`` on the
    SQLite file ``where``."""
    from google.adk.runners import Runner

    return (
        Runner(agent=agent, app_name=app_name, session_service=database("database", where)),
        Runner(agent=agent, app_name=app_name, session_service=database("database", where)),
    )


async def handle_stored(service: Any, session: Any, handle: str) -> None:
    """Wait until ``session``'s state (read through ``service``) holds ``handle`` sealed."""
    owner = SessionKey(session.app_name, session.user_id, session.id)
    token: object = None
    while True:
        token = await stored_token(service, session, changed_from=token)
        if HandleSealer.from_environment().open(token, owner).handle.handle == handle:
            return
