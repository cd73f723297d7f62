"""A worker that goes away while the model works in the background: the request is asked again.

Real ``Runner.run_live`` on two runners (two workers) with ADK's ``DatabaseSessionService``
on one SQLite file, real google-genai, real TLS websockets to the fake server,
``ResumePolicy(store_handle_in_session=True)`` with every handle written at once, the fake's
extended-thinking family (3.8): for each request the model says ``working on: <request>``,
ending it with ``turnComplete`` and ``interactionStatus: IN_PROGRESS`` (a handle follows,
issued during the work), works for the server's ``work_delay`` and then answers. Worker A's
run ends (its client is gone) during the work; worker B takes the session over:

* on the first request, whose handles are all issued during the work: no handle is stored,
  and B's fresh session, whose history ADK rebuilds with the working utterance in it, is
  asked the request;
* on a later request, with the handle of the finished turn before it stored: B resumes it
  and is given the request as unanswered, not as context (the working utterance is no
  answer).

Both entry points; on google-adk 2.13 and 1.27.2.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from adk_live_resume import ResumePolicy
from adk_live_resume.testing import FakeLiveServer
from adk_live_resume.testing.driver import LiveDriver
from adk_live_resume.testing.generation import WORKING

from ..conftest import AgentFactory
from ..helpers import times_said, working_utterance
from ..worker_runs import handle_stored, move, start, text_config, two_workers

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(90)]

APP = "workers_app"
USER = "caller"
#: Every handle the keeper is given is written at once (no interval).
STORE_EVERY = ResumePolicy(store_handle_in_session=True, handle_store_interval=0)
THINKING = "gemini-3.8-live-extended-thinking"


async def _working_on(live: LiveDriver, text: str, server: FakeLiveServer) -> None:
    """Send ``text`` and return once the model said its working utterance for it and the
    handle issued during the work had time to be stored (it must not be)."""
    mark = live.send_text(text)
    assert await live.answer_after(mark, timeout=15) == WORKING + text
    await server.wait_for(
        lambda: any(i.point == "working" for i in server.connections[-1].handle_issues),
        10,
        what="the handle issued while the model works",
    )
    await asyncio.sleep(1.0)  # (a write of it would have landed: one SQLite row)


async def test_a_worker_gone_while_the_model_works_on_the_first_request_loses_nothing(
    make_agent: AgentFactory, handle_key: str, tmp_path: Path
) -> None:
    async with asyncio.timeout(60), FakeLiveServer(work_delay=4.0) as server:
        agent = make_agent(server, model=THINKING, policy=STORE_EVERY)
        worker_a, worker_b = two_workers(agent, tmp_path / "sessions.db", APP)
        session = await worker_a.session_service.create_session(app_name=APP, user_id=USER)
        config = text_config()
        live_a = await start(worker_a, session, config)
        await _working_on(live_a, "one", server)
        live_b = await move(live_a, worker_b, config)
        answer = await live_b.answer_after(0, skip=working_utterance, timeout=20)
        assert answer == "echo: one"
        recalled = await live_b.say("recall", skip=working_utterance, timeout=20)
        await live_b.close()
    first, last = server.connections[0], server.connections[-1]
    assert [i.point for i in first.handle_issues] == ["working"]
    assert last.resume_handle is None and last.history_sends == 1
    assert recalled == "you said: one"
    assert last.user_turns.count("one") == 1 and times_said(live_b, "echo: one") == 1


async def test_a_worker_gone_while_the_model_works_has_the_request_asked_again(
    make_agent: AgentFactory, handle_key: str, tmp_path: Path
) -> None:
    async with asyncio.timeout(60), FakeLiveServer(work_delay=4.0) as server:
        agent = make_agent(server, model=THINKING, policy=STORE_EVERY)
        worker_a, worker_b = two_workers(agent, tmp_path / "sessions.db", APP)
        session = await worker_a.session_service.create_session(app_name=APP, user_id=USER)
        config = text_config()
        live_a = await start(worker_a, session, config)
        assert await live_a.say("one", skip=working_utterance, timeout=15) == "echo: one"
        finished = server.connections[0].handle_issues[-1]
        assert finished.point == "turn_complete"
        await asyncio.wait_for(
            handle_stored(worker_b.session_service, session, finished.handle), 10
        )
        await _working_on(live_a, "two", server)
        live_b = await move(live_a, worker_b, config)
        answer = await live_b.answer_after(0, skip=working_utterance, timeout=20)
        assert answer == "echo: two"
        recalled = await live_b.say("recall", skip=working_utterance, timeout=20)
        await live_b.close()
    last = server.connections[-1]
    assert last.resumed and last.resume_handle == finished.handle
    assert recalled == "you said: one | two"
    assert last.user_turns.count("two") == 1 and times_said(live_b, "echo: two") == 1
    assert server.history_sends() == 0 and server.resent_consumed() == []
