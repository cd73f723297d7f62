"""goAway moves while a model that works in the background (``interactionStatus``) works.

Real ``Runner.run_live``, real google-genai, real TLS websockets on 127.0.0.1, the fake's
extended-thinking family (:mod:`adk_live_resume.testing.families`): its task is done
(``IDLE``) only when its answer is told and no call it issued is open; meanwhile every
``turnComplete`` says ``IN_PROGRESS`` (or ``REQUIRES_ACTION`` behind the server's switch).
A goAway move waits for ``IDLE``. Both entry points (``install()`` and the subclasses) run
every test, on the Gemini API and Vertex AI dialects.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from google.adk.agents import LlmAgent

import adk_live_resume
from adk_live_resume import ResumableLlmAgent, ResumePolicy
from adk_live_resume.testing import FakeLiveServer, Fault
from adk_live_resume.testing.driver import LiveDriver
from adk_live_resume.testing.generation import WORKING

from ..helpers import times_said, working_utterance

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]

MODEL = "gemini-3.8-live-extended-thinking"
POLICY = ResumePolicy(go_away_margin=0.05)
LOOKED_UP = 'slow_lookup returned {"found":"yes","item":"x"}'

#: ADK declares Python functions with ``parametersJsonSchema``, which extended thinking refuses
#: at setup (1007; :mod:`adk_live_resume.testing.setup_rules`): these tests turn the fake's
#: setup rules off to reach the behaviour they check.
SETUP = {"setup_rules": False}


def _cut(server: FakeLiveServer) -> bool:
    """The first connection sent ``interrupted`` (ADK 1.x shows its consumer no such event)."""
    sent = server.connections[0].server_messages if server.connections else []
    return any("interrupted" in message.get("serverContent", {}) for message in sent)


@pytest.fixture(params=["install", "subclass"])
def entry(request: pytest.FixtureRequest) -> str:
    """The entry point: ``install()`` and a plain ``LlmAgent``, or ``ResumableLlmAgent``."""
    return str(request.param)


def _agent(entry: str, server: FakeLiveServer, *, vertex: bool = False, **kwargs: Any) -> Any:
    """A live agent on the extended-thinking model, resumable through ``entry``."""
    model = server.gemini(MODEL, vertex=vertex)
    if entry == "install":
        adk_live_resume.install(POLICY)
        return LlmAgent(name="assistant", model=model, **kwargs)
    return ResumableLlmAgent(name="assistant", model=model, resume_policy=POLICY, **kwargs)


def _slow_lookup(runs: list[str]) -> Any:
    async def slow_lookup(item: str) -> dict[str, str]:
        """Look an item up (takes a second)."""
        runs.append(item)
        await asyncio.sleep(1.0)
        return {"item": item, "found": "yes"}

    return slow_lookup


async def test_on_vertex_ai_a_go_away_while_the_model_works_moves_once_it_is_idle(
    entry: str,
) -> None:
    async with FakeLiveServer(work_delay=1.0) as server:
        agent = _agent(entry, server, vertex=True)
        async with await LiveDriver.start(agent) as live:
            assert await live.say("one", skip=working_utterance) == "echo: one"
            mark = live.send_text("two")
            assert await live.answer_after(mark) == WORKING + "two"
            # the goAway lands in the work; its deadline (5 s) is far
            assert server.go_away_now(5.0) == [1]
            assert await live.answer_after(mark, skip=working_utterance) == "echo: two"
            await server.wait_for_connections(2)
            assert await live.say("recall", skip=working_utterance) == "you said: one | two"
            await live.close()
    first, second = server.connections
    assert first.transparent and second.resumed
    # the move resumed the handle issued with IDLE, not the one issued while the model worked
    points = [issue.point for issue in first.handle_issues]
    assert "working" in points and points[-1] == "turn_complete", points
    assert second.resume_handle == first.handle_issues[-1].handle
    assert first.ended_by == "client"
    assert server.user_turns_answered() == ["one", "two", "recall"]
    assert first.user_turns == ["one", "two"] and second.user_turns == ["recall"]
    assert times_said(live, "echo: two") == 1 and times_said(live, WORKING + "two") == 1
    assert server.resent_consumed() == [] and server.history_sends() == 0


@pytest.mark.parametrize("vertex", [False, True], ids=["gemini-api", "vertex-ai"])
@pytest.mark.parametrize("requires_action", [False, True], ids=["in-progress", "requires-action"])
async def test_a_go_away_during_an_async_tool_moves_once_the_result_is_told(
    entry: str, vertex: bool, requires_action: bool
) -> None:
    # The model calls slow_lookup (async: it says the call started, its turnComplete saying
    # the task goes on), the goAway lands while the tool runs: the session moves only after
    # the result is told (IDLE); the tool runs once and its result is told once.
    runs: list[str] = []
    async with FakeLiveServer(requires_action=requires_action, **SETUP) as server:
        agent = _agent(entry, server, vertex=vertex, tools=[_slow_lookup(runs)])
        async with await LiveDriver.start(agent) as live:
            mark = live.send_text('call slow_lookup {"item": "x"}')
            assert await live.answer_after(mark, timeout=15) == "slow_lookup started"
            assert server.go_away_now(5.0) == [1]
            told = await live.answer_after(mark, skip=lambda t: t.endswith(" started"))
            assert told == LOOKED_UP
            # at IDLE, not at the goAway's deadline (about 4 s after the telling)
            await server.wait_for_connections(2, timeout=2.5)
            assert await live.say("after", skip=working_utterance) == "echo: after"
            await live.close()
    first, second = server.connections
    assert runs == ["x"], "the tool ran again"
    assert [call.non_blocking for call in first.tool_calls] == [True]
    assert first.accepted_tool_response_ids == [first.tool_calls[0].id]
    assert first.answers == ["slow_lookup started", LOOKED_UP]
    # the move came after the telling: the handle issued with it, nothing asked again
    assert first.ended_by == "client"
    assert second.resumed and second.resume_handle == first.handle_issues[-1].handle
    assert second.tool_calls == [] and second.user_turns == ["after"]
    assert times_said(live, LOOKED_UP) == 1
    assert server.resent_consumed() == [] and server.history_sends() == 0


async def test_a_go_away_after_the_server_cut_the_answer_waits_while_the_work_goes_on(
    entry: str,
) -> None:
    # The server cuts the answer (``interrupted``, scripted: no input of the client asked for
    # it) while its status still says the work goes on: the cut generation counts as taking
    # the request in, so no turn or utterance waits for an answer, and the newest handle (the
    # one issued while the model worked) is resumable. Only the model's status holds the move
    # until IDLE; moved at once, the session would resume without the request.
    request = "tell me about the weather up north"
    cut = Fault.server_message({"serverContent": {"interrupted": True}}, mid_turn=True)
    async with FakeLiveServer(work_delay=0.2, chunk_delay=0.3) as server:
        server.script(cut, connection=1)
        agent = _agent(entry, server)
        async with await LiveDriver.start(agent) as live:
            live.send_text(request)
            await server.wait_for(lambda: _cut(server), 10, what="the answer cut")
            assert server.go_away_now(5.0) == [1]
            await server.wait_for_connections(2)
            assert await live.say("recall", skip=working_utterance) == "you said: " + request
            await live.close()
    first, second = server.connections
    assert first.answers == ["echo: " + request]
    assert second.resumed and second.resume_handle == first.handle_issues[-1].handle
    assert first.handle_issues[-1].point == "turn_complete"
    assert server.user_turns_answered() == [request, "recall"]
