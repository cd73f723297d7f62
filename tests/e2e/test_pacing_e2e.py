"""The reconnect pacer end to end: 40 real ``Runner.run_live`` sessions in one process lose
their sockets at once; every one resumes, none loses a turn, and the herd went through the
pacer (counted, not timed); a lone drop afterwards does not wait.
"""

from __future__ import annotations

import asyncio

import pytest
from google.adk.agents import LlmAgent
from google.adk.runners import InMemoryRunner

import adk_live_resume
from adk_live_resume import ReconnectInfo, ResumePolicy
from adk_live_resume.shell.pacing import WINDOW, pacer_for
from adk_live_resume.testing import FakeLiveServer, LiveDriver

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

SESSIONS = 40
BURST = 2


async def test_a_mass_drop_is_spread_every_session_resumes_and_no_turn_is_lost() -> None:
    adk_live_resume.set_testing(False)  # the pacer's waits are what this test is about
    # 2 attempts per 100 ms whatever the herd's size: 2 s for the herd, much longer than
    # noticing the drops takes
    policy = ResumePolicy(process_reconnect_burst=BURST, process_reconnect_share=0.0)
    reconnects: list[ReconnectInfo] = []
    remove = adk_live_resume.on_reconnect(reconnects.append)
    async with asyncio.timeout(100), FakeLiveServer() as server:
        adk_live_resume.install(policy)
        agent = LlmAgent(name="herd", model=server.gemini())
        runner = InMemoryRunner(agent=agent, app_name="herd")
        gate = asyncio.Semaphore(10)

        async def start(i: int) -> LiveDriver:
            async with gate:
                live = await LiveDriver.start(agent, runner=runner, user_id=f"user-{i}")
                assert await live.say(f"before {i}", timeout=30) == f"echo: before {i}"
                await server.wait_for(
                    lambda: adk_live_resume.current_handle(live.queue) is not None, 30
                )
                return live

        drivers = await asyncio.gather(*(start(i) for i in range(SESSIONS)))
        try:
            schedule = pacer_for(asyncio.get_running_loop()).schedule
            started, paced = schedule.started, schedule.paced
            await server.restart()  # every socket dropped at once, no close frame
            marks = [live.send_text("recall") for live in drivers]
            answers = await asyncio.gather(
                *(
                    live.answer_after(mark, timeout=60)
                    for live, mark in zip(drivers, marks, strict=True)
                )
            )
            assert answers == [f"you said: before {i}" for i in range(SESSIONS)]
            assert len({info.session_id for info in reconnects}) == SESSIONS
            assert all(info.state_restored and info.reason == "drop" for info in reconnects)
            resumed = server.connections[SESSIONS:]
            assert len(resumed) == SESSIONS and all(c.resumed for c in resumed)
            # every reconnect asked the pacer; most had to wait their turn (those that asked
            # while the window had room, as the drops were being noticed, did not)
            assert schedule.started - started == SESSIONS
            assert schedule.paced - paced >= SESSIONS // 2

            # a lone drop in a quiet process (the bucket refilled): no wait
            for live in drivers[1:]:
                assert await live.close() is None
            await asyncio.sleep(2 * WINDOW)  # no attempt in the window: the process is quiet
            started, paced = schedule.started, schedule.paced
            await server.close_open(1011)
            assert await drivers[0].say("lone", timeout=30) == "echo: lone"
            assert (schedule.started - started, schedule.paced - paced) == (1, 0)
            assert await drivers[0].close() is None
        finally:
            remove()
            for live in drivers:
                if not live.ended:
                    await live.cancel()
