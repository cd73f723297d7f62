"""A worker that goes away right after a tool's response: the next worker has it answered once.

Real ``Runner.run_live`` on two runners (two workers) with ADK's ``DatabaseSessionService``
on one SQLite file, real google-genai, real TLS websockets to the fake server,
``ResumePolicy(store_handle_in_session=True)`` with every handle written at once. A Gemini
3.x model sends a handle right after the client's ``toolResponse`` (recorded on 3.1), which
holds the session before the response; ADK writes the function response as the agent's
event. Worker A's run ends (its client is gone) once that handle is stored, as the answer to
the response streams; worker B takes the session over and must not take the response for
answered. Both entry points; on google-adk 2.13 and 1.27.2.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from adk_live_resume import ResumePolicy
from adk_live_resume.testing import FakeLiveServer

from ..conftest import AgentFactory, blocking
from ..helpers import times_said
from ..worker_runs import handle_stored, move, start, text_config, two_workers

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(90)]

APP = "workers_app"
USER = "caller"
#: Every handle the keeper is given is written at once (no interval).
STORE_EVERY = ResumePolicy(store_handle_in_session=True, handle_store_interval=0)
WEATHER = 'slow_weather returned {"city":"Oslo","sky":"clear"}'


def _slow_weather(ran: list[str]) -> Any:
    """A slow ``slow_weather`` tool that the model waits for (BLOCKING), noting each run."""

    async def slow_weather(city: str) -> dict[str, str]:
        """Return the weather in a city."""
        ran.append(city)
        await asyncio.sleep(0.5)
        return {"city": city, "sky": "clear"}

    return blocking(slow_weather)


@pytest.mark.parametrize("model", ["gemini-3.8-live", "gemini-3.1-flash-live-preview"])
async def test_the_handle_after_a_tool_response_leaves_the_response_to_answer(
    make_agent: AgentFactory, handle_key: str, tmp_path: Path, model: str
) -> None:
    ran: list[str] = []
    # (answer chunks 0.3 s apart: worker A goes while the answer to the response streams)
    async with asyncio.timeout(60), FakeLiveServer(chunk_delay=0.3) as server:
        agent = make_agent(server, model=model, tools=[_slow_weather(ran)], policy=STORE_EVERY)
        worker_a, worker_b = two_workers(agent, tmp_path / "sessions.db", APP)
        session = await worker_a.session_service.create_session(app_name=APP, user_id=USER)
        config = text_config()
        live_a = await start(worker_a, session, config)
        assert await live_a.say("hi", timeout=15) == "echo: hi"
        live_a.send_text('call slow_weather {"city":"Oslo"}')
        await server.wait_for(
            lambda: any(i.point == "after_tool_response" for i in server.handle_issues()),
            15,
            what="the handle after the tool response",
        )
        after = next(i for i in server.handle_issues() if i.point == "after_tool_response")
        await asyncio.wait_for(handle_stored(worker_b.session_service, session, after.handle), 10)
        live_b = await move(live_a, worker_b, config)  # worker A goes as the answer streams
        assert await live_b.answer_after(0, timeout=20) == WEATHER
        recalled = await live_b.say("recall", timeout=15)
        await live_b.close()
    last = server.connections[-1]
    assert last.resume_handle != after.handle, "the handle holds no response"
    assert not last.resumed and last.history_sends == 1
    assert recalled == 'you said: hi | call slow_weather {"city":"Oslo"}'
    assert ran == ["Oslo"] and times_said(live_b, WEATHER) == 1
    assert server.duplicate_history_sends() == 0
