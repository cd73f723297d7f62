"""A handle the server issues while a reply streams is not the one a resume uses, end to end.

Two field sources (Omi probes ``lane5-session-resumption.py`` / ``-bargein.py`` on native
audio; pydantic-ai PR 7379; notes, "Field facts of 2026-11-29") say a session resumed from
a handle issued mid-reply says that reply again, glued before the answer to the user's next
question; the older notes say a generation in flight is never continued after a resume. The
fake does the first with ``resume_replays_cut_reply=True`` and the second with
``HandleSchedule(mid_reply=True)`` (handles mid-reply, nothing replayed). Under both, a drop
mid-reply resumes from the handle issued before the reply began, as the Omi client does: the
turn is asked again and answered once, whole, and nothing is said twice. Real
``Runner.run_live``, real google-genai, real TLS websockets on 127.0.0.1, both entry points
(``make_agent``).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from adk_live_resume.testing import FakeLiveServer, HandleSchedule
from adk_live_resume.testing.driver import LiveDriver

from ..conftest import AgentFactory
from ..helpers import times_said

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]

LONG = "tell me about the lighthouse on the northern cape"

BEHAVIOURS = pytest.mark.parametrize(
    "server_kwargs",
    [
        {"resume_replays_cut_reply": True},
        {"handle_schedule": HandleSchedule(mid_reply=True)},
    ],
    ids=["replays-cut-reply", "drops-cut-reply"],
)


@BEHAVIOURS
async def test_a_drop_mid_reply_resumes_from_before_the_reply_and_says_nothing_twice(
    make_agent: AgentFactory, server_kwargs: dict[str, Any]
) -> None:
    async with asyncio.timeout(45), FakeLiveServer(chunk_delay=0.4, **server_kwargs) as server:
        agent = make_agent(server)
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one") == "echo: one"
            mark = live.send_text(LONG)
            await server.wait_for(
                lambda: any(i.point == "mid_reply" for i in server.connections[0].handle_issues),
                10,
                what="a handle issued mid-reply",
            )
            await asyncio.sleep(0.3)  # (the client reads it; the reply streams 0.9 s more)
            assert server.connections[0].answers == ["echo: one"], "the reply was not cut"
            await server.close_open(1011)
            assert await live.answer_after(mark, timeout=15) == "echo: " + LONG
            assert await live.say("three") == "echo: three"
            await live.close()
    first, second = server.connections[:2]
    before_reply = [i for i in first.handle_issues if i.point == "turn_complete"][-1]
    assert second.resumed and second.resume_handle == before_reply.handle
    assert server.user_turns_answered() == ["one", LONG, "three"]
    assert times_said(live, "echo: " + LONG) == 1 and times_said(live, "echo: three") == 1
    assert all(LONG not in answer for answer in second.answers[1:]), second.answers
    assert server.resent_consumed() == [] and server.history_sends() == 0


async def test_the_fake_replays_a_cut_reply_before_the_next_answer_when_resumed_from_it(
    fake_live_server_factory: Any,
) -> None:
    # (what the loop avoids: the fake's switch on its own, through the bare SDK)
    from tests.fake.test_fake_server import config, live_session, text_of, turn

    server = await fake_live_server_factory(resume_replays_cut_reply=True, chunk_delay=0.05)
    async with live_session(server, "gemini-live-fake") as live:
        await live.send_client_content(
            turns={"role": "user", "parts": [{"text": LONG}]}, turn_complete=True
        )
        await turn(live)
    (mid,) = [i for i in server.connections[0].handle_issues if i.point == "mid_reply"]
    resumed = config(resume=True, handle=mid.handle)
    async with server.genai_client().aio.live.connect(
        model="gemini-live-fake", config=resumed
    ) as live:
        await live.send_client_content(
            turns={"role": "user", "parts": [{"text": "next"}]}, turn_complete=True
        )
        said = text_of(await turn(live))
    assert said == f"echo: {LONG} echo: next", "glued before the next answer"
