"""Tool results that outlive their connection, end to end: real ``Runner.run_live``, real
google-genai, real TLS websockets, the fake server. Both entry points, both dialects.

The field says a resumed connection does not act on a ``toolResponse`` under an id an
earlier connection issued (Pipecat PR 5497, Strands PR 4244, voiceclaw PR 53); the fake
does the same by default (``tool_ids_outlive_connection=False``). Each run here is made with
the fake either way: the result must reach the model once whatever the service does with
old ids, as content naming the call, its arguments and its result, and the tool runs once.

* a NON_BLOCKING call the handle covers, still running when the session moves (goAway) or
  the socket drops, on Gemini 2.x Live, 2.5 native audio and 3.8 Live;
* a NON_BLOCKING result sent to the old connection just before it dropped (no handle
  covers it): the replay leaves the response out and tells it as content.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import pytest
from google.adk.agents import LlmAgent

import adk_live_resume
from adk_live_resume import ResumableLlmAgent, ResumePolicy
from adk_live_resume.testing import FakeLiveServer, Fault, HandleSchedule, LatencyRelay
from adk_live_resume.testing.driver import LiveDriver
from adk_live_resume.testing.records import ConnectionRecord

from ..conftest import AgentFactory
from ..helpers import SlowTool, answer_like, late_results_told, slow_job_tool, told_once
from .test_tool_calls_e2e import needs_background_tools

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60), needs_background_tools]

#: (model, Vertex AI dialect, how the session leaves its connection)
CASES = [
    ("gemini-live-fake", False, "drop"),
    ("gemini-live-fake", True, "move"),
    ("gemini-live-2.5-flash-native-audio", True, "drop"),
    ("gemini-live-2.5-flash-native-audio", False, "move"),
    ("gemini-3.8-live", False, "drop"),
    ("gemini-3.8-live", True, "move"),
]

IDS = pytest.mark.parametrize("old_ids", [False, True], ids=["ids-per-connection", "ids-kept"])


def agent_for(
    make_agent: AgentFactory,
    server: FakeLiveServer,
    model: str,
    vertex: bool,
    tools: list[Any],
    policy: ResumePolicy | None = None,
) -> Any:
    """An agent through the entry point ``make_agent`` stands for, on either dialect."""
    kwargs: dict[str, Any] = dict(
        name="assistant",
        model=server.gemini(model, vertex=vertex),
        instruction="You are a helpful assistant.",
        tools=tools,
    )
    if make_agent.entry == "install":  # type: ignore[attr-defined]
        adk_live_resume.install(policy)
        return LlmAgent(**kwargs)
    return ResumableLlmAgent(resume_policy=policy, **kwargs)


def result_of(job: str) -> str:
    """How the model tells the slow job's first run for ``job``."""
    return f'slow_job returned {{"job":"{job}","run":1}}'


def clean(records: list[ConnectionRecord]) -> None:
    for record in records:
        assert not record.stale_tool_response_ids and not record.unknown_tool_response_ids
        assert not record.errors


@IDS
@pytest.mark.parametrize(("model", "vertex", "how"), CASES)
async def test_a_running_call_the_handle_covers_is_told_once_after_the_session_leaves(
    make_agent: AgentFactory, old_ids: bool, model: str, vertex: bool, how: str
) -> None:
    job = SlowTool(1.5)
    async with asyncio.timeout(40):
        async with FakeLiveServer(tool_ids_outlive_connection=old_ids) as server:
            agent = agent_for(make_agent, server, model, vertex, [slow_job_tool(job)])
            async with await LiveDriver.start(agent) as live:
                mark = live.send_text('call slow_job {"job_name": "order"}')
                await asyncio.wait_for(job.started.wait(), 10)
                assert await answer_like(live, mark, "slow_job started")
                first = server.connections[0]
                await server.wait_for(lambda: first.handles_issued, 5, what="a handle")
                assert not job.ended.is_set(), "the handle covers the running call"
                if how == "move":
                    assert server.go_away_now(5.0) == [1]
                else:
                    await server.close_open(1011)
                await server.wait_for_connections(2)
                await told_once(live, mark, result_of("order"), timeout=15, quiet=0.4)
                await live.close()
            second = server.connections[1]
            assert second.resumed and second.resume_handle == first.handles_issued[-1]
            assert job.runs == ["order"], "the tool ran once"
            assert second.tool_calls == [] and second.tool_responses == []
            assert late_results_told(second) == [
                ("slow_job", {"job_name": "order"}, {"job": "order", "run": 1})
            ]
            if how == "move":
                assert first.go_away_sent and first.ended_by == "client"
            clean(server.connections)


@IDS
@pytest.mark.parametrize("vertex", [False, True], ids=["gemini", "vertex"])
async def test_a_result_sent_to_the_connection_that_dropped_is_told_once_as_content(
    make_agent: AgentFactory, old_ids: bool, vertex: bool
) -> None:
    # The job's response reaches the old connection, which closes on it: no handle covers
    # it, and the resumed session takes no toolResponse under the old id. The replay
    # leaves it out; it goes as content instead, once.
    job = SlowTool(gated=True)
    async with asyncio.timeout(40):
        async with FakeLiveServer(tool_ids_outlive_connection=old_ids) as server:
            agent = agent_for(make_agent, server, "gemini-live-fake", vertex, [slow_job_tool(job)])
            async with await LiveDriver.start(agent) as live:
                mark = live.send_text('call slow_job {"job_name": "mail"}')
                assert await answer_like(live, mark, "slow_job started")
                first = server.connections[0]
                await server.wait_for(lambda: first.handles_issued, 5, what="a handle")
                server.script(
                    Fault.close(1011, after_client_messages=len(first.client_messages) + 1),
                    connection=1,
                )
                job.gate.set()
                await server.wait_for_connections(2)
                await told_once(live, mark, result_of("mail"), timeout=15, quiet=0.4)
                await live.close()
            second = server.connections[1]
            assert [r.get("id") for r in first.tool_responses] == [first.tool_calls[0].id]
            assert second.resumed and second.tool_responses == [], "no old id sent again"
            assert late_results_told(second) == [
                ("slow_job", {"job_name": "mail"}, {"job": "mail", "run": 1})
            ]
            assert job.runs == ["mail"]
            clean(server.connections)


#: A typed turn whose echo streams for a while (the fake's chunks are 0.3 s apart here).
QUESTION = "one long question that takes the model a while to echo"


@dataclass(frozen=True)
class ToldWhileStreaming:
    """Where :func:`_told_while_an_answer_streams` left the run."""

    mark: int  #: the event mark of the call that started the job
    first: ConnectionRecord
    second: ConnectionRecord
    handles_before: int  #: handles the second connection issued before the question
    question: int  #: the event mark of :data:`QUESTION`


async def _told_while_an_answer_streams(
    live: LiveDriver, server: FakeLiveServer, job: SlowTool, *, then: HandleSchedule | None = None
) -> ToldWhileStreaming:
    """Start the gated job "order" on the first connection and drop it (1011) once a handle
    holds the call (the next connections issue handles by ``then``, when given); on the second,
    ask :data:`QUESTION` and let the job end while its answer streams in: the result is told as
    content (its call's id belongs to the first connection) with the rest of the answer on its
    way."""
    mark = live.send_text('call slow_job {"job_name": "order"}')
    assert await answer_like(live, mark, "slow_job started", timeout=15)
    first = server.connections[0]
    await server.wait_for(lambda: first.handles_issued, 5, what="a handle")
    if then is not None:
        server.change_settings(handle_schedule=then)
    await server.close_open(1011)
    second = (await server.wait_for_connections(2))[1]
    handles_before = len(second.handle_issues)
    question = live.send_text(QUESTION)
    await live.wait_for_event(
        lambda e: bool(e.partial and e.content and e.content.parts), after=question, timeout=15
    )
    job.gate.set()
    return ToldWhileStreaming(mark, first, second, handles_before, question)


async def test_a_result_told_as_content_while_an_answer_streams_survives_a_drop_after_its_handle(
    make_agent: AgentFactory,
) -> None:
    # The job's result is told as content (its call's id belongs to the connection before)
    # while the answer to a long question still streams in. Behind 1 s of latency the server ends
    # that answer and sends its handle before the content reaches it: the handle does not
    # hold the content, though model output reached the client after it was sent (as a
    # typed turn crossing a handle). The connection then drops: the resumed session must
    # still be told the result, once.
    job = SlowTool(gated=True)
    async with asyncio.timeout(55):
        async with (
            FakeLiveServer(chunk_delay=0.3) as server,
            LatencyRelay(server, one_way=1.0) as relay,
        ):
            agent = agent_for(make_agent, relay, "gemini-live-fake", False, [slow_job_tool(job)])
            async with await LiveDriver.start(agent) as live:
                told = await _told_while_an_answer_streams(live, server, job)
                mark, second, issued = told.mark, told.second, told.handles_before
                await server.wait_for(
                    lambda: any(i.point == "turn_complete" for i in second.handle_issues[issued:]),
                    10,
                    what="the handle after the answer",
                )
                handle = next(
                    i.handle for i in second.handle_issues[issued:] if i.point == "turn_complete"
                )
                assert late_results_told(second) == [], "the content came too soon"
                await server.close_open(1006)
                third = (await server.wait_for_connections(3))[2]
                await told_once(live, mark, result_of("order"), timeout=15, quiet=0.4)
                await live.close()
    assert third.resumed and third.resume_handle == handle, "not resumed from it"
    assert job.runs == ["order"], "the tool ran once"
    told = [t for c in server.connections for t in late_results_told(c)]
    assert told == [("slow_job", {"job_name": "order"}, {"job": "order", "run": 1})]


@pytest.mark.parametrize("make_agent", ["install"], indirect=True)  # (the split is the outbox's)
async def test_a_result_told_as_content_while_an_answer_streams_survives_a_drop_with_no_handle(
    make_agent: AgentFactory,
) -> None:
    # As above, but no handle follows the content: the client reads the rest of the answer and
    # its turnComplete, then the close. That answer began before the content was sent, so it
    # resolves the typed turn (given back as context), not the content: the content carries
    # no text, and given back as context it would be lost. It goes again as it was sent.
    job = SlowTool(gated=True)
    async with asyncio.timeout(55):
        async with (
            FakeLiveServer(chunk_delay=0.3) as server,
            LatencyRelay(server, one_way=1.0) as relay,
        ):
            agent = agent_for(make_agent, relay, "gemini-live-fake", False, [slow_job_tool(job)])
            async with await LiveDriver.start(agent) as live:
                told = await _told_while_an_answer_streams(
                    live, server, job, then=HandleSchedule(on_turn_complete=False)
                )
                mark, first, second = told.mark, told.first, told.second
                await live.wait_for_event(
                    lambda e: bool(e.turn_complete), after=told.question, timeout=15
                )
                assert second.handles_issued == [], "a handle after the content"
                await server.close_open(1011)
                third = (await server.wait_for_connections(3))[2]
                await told_once(live, mark, result_of("order"), timeout=15, quiet=0.4)
                await live.close()
    assert third.resumed and third.resume_handle == first.handles_issued[-1]
    assert job.runs == ["order"], "the tool ran once"
    told = [t for c in server.connections for t in late_results_told(c)]
    assert told[-1] == ("slow_job", {"job_name": "order"}, {"job": "order", "run": 1})
    assert server.user_turns_answered().count(QUESTION) == 1, "answered again"
