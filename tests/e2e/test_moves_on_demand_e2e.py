"""A notice before a move, and moves the app asks for, end to end: real ``Runner.run_live``,
real google-genai, real TLS websockets on 127.0.0.1, the fake Gemini Live server, on both
entry points.

``on_before_move`` hooks hear of each goAway once, as it arrives, before the old connection is
given up; ``request_move`` moves the session to a resumed connection at the next safe point
(an answer in flight is let finish), ``request_fresh_start`` starts a fresh session from the
history; ``on_reconnect`` reports either with ``reason="requested"`` and the app's reason.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from google.adk.agents.live_request_queue import LiveRequestQueue

import adk_live_resume
from adk_live_resume import MoveNotice, NoLiveRunError, ReconnectInfo, ResumePolicy, RunStats
from adk_live_resume.testing import FakeLiveServer, Fault, LiveDriver

from ..conftest import AgentFactory
from ..helpers import go_away_server

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]

Heard = tuple[list[MoveNotice], list[ReconnectInfo], list[RunStats]]


@pytest.fixture
def heard() -> Iterator[Heard]:
    notices: list[MoveNotice] = []
    infos: list[ReconnectInfo] = []
    ended: list[RunStats] = []
    removers = [
        adk_live_resume.on_before_move(notices.append),
        adk_live_resume.on_reconnect(infos.append),
        adk_live_resume.on_run_end(ended.append),
    ]
    yield notices, infos, ended
    for remove in removers:
        remove()


async def test_a_go_away_is_announced_once_before_the_old_connection_is_given_up(
    make_agent: AgentFactory, heard: Heard
) -> None:
    notices, infos, _ = heard
    noticed_at: list[float] = []
    remove = adk_live_resume.on_before_move(
        lambda notice: noticed_at.append(asyncio.get_running_loop().time())
    )
    try:
        # goAway 0.8 s after the setup with 1.2 s left; the answer streams past it
        server_ = go_away_server(lifetime=200, lead=120, chunk_delay=0.25)
        async with asyncio.timeout(40), server_ as server:
            agent = make_agent(server, policy=ResumePolicy(go_away_margin=0.1))
            async with await LiveDriver.start(agent) as live:
                await asyncio.sleep(0.3)
                assert await live.say("a long answer please") == "echo: a long answer please"
                old, new = await server.wait_for_connections(2)
                await server.wait_for(lambda: old.finished, 5, what="the old connection")
                assert await live.say("after") == "echo: after"
                assert await live.close() is None
    finally:
        remove()
    (notice,) = notices
    assert notice.reason == "go_away" and notice.connection_number == 1 and not notice.fresh
    assert notice.seconds_left == pytest.approx(1.2)
    assert notice.agent_name == "assistant" and notice.session_id
    # before the next connection was even opened, while the answer still streamed
    assert new.accepted_at is not None and noticed_at[0] < new.accepted_at
    assert old.answered_user_turns == ["a long answer please"]
    assert [i.reason for i in infos] == ["go_away"]


async def test_a_move_the_app_asks_for_waits_for_the_answer_then_resumes(
    make_agent: AgentFactory, heard: Heard
) -> None:
    notices, infos, ended = heard
    async with (
        asyncio.timeout(40),
        FakeLiveServer(chunk_delay=0.15) as server,
        await LiveDriver.start(make_agent(server)) as live,
    ):
        assert await live.say("one") == "echo: one"
        mark = live.send_text("a long answer please")
        await live.wait_for_event(lambda e: e.content is not None, after=mark)
        adk_live_resume.request_move(live.queue, "  the language switch went wrong ")
        assert await live.answer_after(mark) == "echo: a long answer please"
        old, new = await server.wait_for_connections(2)
        assert await live.say("recall") == "you said: one | a long answer please"
        assert await live.close() is None
    assert old.answered_user_turns == ["one", "a long answer please"], "nothing was cut"
    assert new.resumed and new.history_sends == 0
    # moved at the safe point after the answer: its handle holds everything, nothing is sent
    # again (a move begun mid-answer resumes an older handle and sends the exchange again)
    assert new.resume_handle == old.handles_issued[-1]
    assert new.user_turns == ["recall"] and len(new.client_messages) == 1
    (info,) = infos
    assert (info.reason, info.cause, info.state_restored) == (
        "requested",
        "the language switch went wrong",
        True,
    )
    assert info.context_restored is True and info.usage is not None
    assert [(n.reason, n.detail, n.seconds_left) for n in notices] == [
        ("requested", "the language switch went wrong", None)
    ]
    assert ended[0].connections == 2 and ended[0].fresh_starts == 0


async def test_a_fresh_start_the_app_asks_for_rebuilds_the_session_from_the_history(
    make_agent: AgentFactory, heard: Heard
) -> None:
    notices, infos, ended = heard
    async with (
        asyncio.timeout(40),
        FakeLiveServer(chunk_delay=0.0) as server,
        await LiveDriver.start(make_agent(server)) as live,
    ):
        assert await live.say("one") == "echo: one"
        assert await live.say("two") == "echo: two"
        # from another thread, as an app's watchdog might
        await asyncio.to_thread(
            adk_live_resume.request_fresh_start, live.queue, "the model keeps refusing"
        )
        old, new = await server.wait_for_connections(2)
        assert await live.say("recall") == "you said: one | two"
        assert await live.close() is None
    assert not new.resumed and new.history_sends == 1
    assert old.handles_issued and new.resume_handle is None
    (info,) = infos
    assert (info.reason, info.cause, info.state_restored) == (
        "requested",
        "the model keeps refusing",
        False,
    )
    assert [(n.reason, n.fresh) for n in notices] == [("requested", True)]
    assert ended[0].fresh_starts == 1 and ended[0].history_sends == 1


async def test_a_move_asked_during_an_outage_is_made_on_the_next_connection(
    make_agent: AgentFactory, heard: Heard
) -> None:
    _, infos, _ = heard
    async with FakeLiveServer(chunk_delay=0.0, time_scale=0.01) as server:
        async with await LiveDriver.start(make_agent(server)) as live:
            assert await live.say("one") == "echo: one"
            server.script(Fault.setup_delay(0.5))  # the next setup takes 0.5 s
            await server.restart()
            await server.wait_for_connections(2)  # (being set up: the run is in an outage)
            adk_live_resume.request_fresh_start(live.queue, "start over")
            await server.wait_for_connections(3)
            assert await live.say("recall") == "you said: one"
            assert await live.close() is None
        records = await server.wait_for_connections(3, finished=True)
    assert [r.resumed for r in records] == [False, True, False]
    assert [(i.reason, i.cause) for i in infos] == [
        ("drop", "1006 abnormal closure [internal]"),
        ("requested", "start over"),
    ]


async def test_a_move_asked_of_a_connection_that_fails_at_its_setup_is_made_on_the_next(
    make_agent: AgentFactory, heard: Heard
) -> None:
    _, infos, _ = heard
    async with asyncio.timeout(40), FakeLiveServer(chunk_delay=0.0) as server:
        async with await LiveDriver.start(make_agent(server)) as live:
            assert await live.say("one") == "echo: one"
            # the next connection never completes its setup and is lost 0.5 s later
            server.script(Fault.no_setup_complete(), Fault.abort(after_seconds=0.5))
            await server.restart()
            await server.wait_for_connections(2)  # (its setup is waited for)
            adk_live_resume.request_fresh_start(live.queue, "start over")
            await server.wait_for_connections(4)
            assert await live.say("recall") == "you said: one"
            assert await live.close() is None
        records = await server.wait_for_connections(4, finished=True)
    assert [r.resumed for r in records] == [False, True, True, False]
    assert records[1].ended_by == "fault"
    assert [(i.reason, i.cause) for i in infos] == [
        ("drop", "1006 abnormal closure [internal]"),
        ("requested", "start over"),
    ]


async def test_asking_without_a_live_run_or_a_reason_is_refused_saying_what_to_do(
    make_agent: AgentFactory,
) -> None:
    with pytest.raises(NoLiveRunError, match="no live run serves this LiveRequestQueue"):
        adk_live_resume.request_move(LiveRequestQueue(), "why")
    async with asyncio.timeout(40), FakeLiveServer(chunk_delay=0.0) as server:
        async with await LiveDriver.start(make_agent(server)) as live:
            assert await live.say("one") == "echo: one"
            with pytest.raises(ValueError, match="needs a reason"):
                adk_live_resume.request_move(live.queue, "  ")
            with pytest.raises(TypeError, match="needs the reason as a string"):
                adk_live_resume.request_fresh_start(live.queue, None)  # type: ignore[arg-type]
            with pytest.raises(NoLiveRunError):  # another queue
                adk_live_resume.request_move(LiveRequestQueue(), "why")
            assert await live.close() is None
        with pytest.raises(NoLiveRunError):  # the run has ended
            adk_live_resume.request_move(live.queue, "why")
        assert len(server.connections) == 1
