"""Chaos: seeded conversations whose worker is lost at a random instant of a request in flight.

Each seed plays one conversation on Gemini 3.8 Live, with or without extended thinking, on
two workers (two runners on one session store: ADK's ``InMemorySessionService``, worker A
through a door that closes when it is lost; the workers' tests run SQLite and PostgreSQL),
``ResumePolicy(store_handle_in_session=True)`` with a random ``handle_store_interval``: a few
typed turns on worker A, then a request in flight when worker A is lost (it writes nothing
more and its run ends, as a killed worker's) at a random instant:

* of a tool's answer (3.8, a BLOCKING tool of random latency): while the tool runs, as its
  response goes, while the answer to it streams, or after;
* of the model's work (3.8 with extended thinking, the work of random length): while it says
  its working utterance, while it works, while the answer streams, or after.

Worker B takes the session over (its client comes back to another worker, and sends the
request again if worker A was lost before it kept it in the session). Invariants: the
request's answer is told once: by A's stream, by the session's history (A wrote it and was
lost before its stream told it), or by B; the model's memory holds every typed turn once,
in order; a tool whose response the session holds is not run again, and each worker runs a
tool at most once; no history twice; no error in the fake; B's run ends cleanly, no task left.

The soak (``python3 scripts/dev.py soak``, marked ``soak``) covers
``ADK_LIVE_RESUME_WORKERS_CHAOS_RUNS`` seeds (200) from
``ADK_LIVE_RESUME_WORKERS_CHAOS_FIRST_SEED`` (0); ``ADK_LIVE_RESUME_WORKERS_CHAOS_SEED=N``
replays one. A failing seed says how to replay it alone.
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import os
import random
from dataclasses import dataclass
from typing import Any

import pytest

import adk_live_resume
from adk_live_resume import ResumableLlmAgent, ResumePolicy
from adk_live_resume.conversation.model_work import WORK_KEY
from adk_live_resume.testing import FakeLiveServer
from adk_live_resume.testing.driver import LiveDriver

from ..conftest import blocking, our_tasks
from ..faultplans import run_seed
from ..helpers import answer_like, answers, working_utterance
from ..worker_runs import move, start, text_config

RUNS = int(os.environ.get("ADK_LIVE_RESUME_WORKERS_CHAOS_RUNS", "200"))
FIRST = int(os.environ.get("ADK_LIVE_RESUME_WORKERS_CHAOS_FIRST_SEED", "0"))
ONLY = os.environ.get("ADK_LIVE_RESUME_WORKERS_CHAOS_SEED")
SEEDS = [int(ONLY)] if ONLY else list(range(FIRST, FIRST + RUNS))

pytestmark = [pytest.mark.chaos, pytest.mark.timeout(90)]

APP = "workers_chaos"
USER = "caller"

#: The worker whose run is calling: set before a worker's run starts, so every task the run
#: makes (ADK's pumps, its tool's task) carries it. A tool tells by it which worker ran it.
WORKER: contextvars.ContextVar[str] = contextvars.ContextVar("worker")


@dataclass(frozen=True)
class Plan:
    seed: int
    thinking: bool
    entry: str
    warmups: int
    work_delay: float
    tool_latency: float
    #: Seconds from the request's send to worker A's loss.
    lost_after: float
    store_interval: float
    chunk_delay: float

    @property
    def model(self) -> str:
        return "gemini-3.8-live-extended-thinking" if self.thinking else "gemini-3.8-live"

    @property
    def request(self) -> str:
        if self.thinking:
            return f"think about {self.seed}"
        return f'call lookup {{"item": "thing {self.seed}"}}'

    def answered(self, text: str) -> bool:
        """Whether ``text`` is the request's answer."""
        if self.thinking:
            return text == f"echo: {self.request}"
        item = f"thing {self.seed}"
        return text in (
            f'lookup returned {{"found":"yes","item":"{item}"}}',
            f'lookup returned {{"item":"{item}","found":"yes"}}',
        )

    def describe(self) -> str:
        return (
            f"model={self.model} entry={self.entry} warmups={self.warmups}"
            f" work_delay={self.work_delay:.2f}s tool_latency={self.tool_latency:.2f}s"
            f" lost_after={self.lost_after:.2f}s store_interval={self.store_interval:g}s"
            f" chunk_delay={self.chunk_delay:g}s"
        )


def make_plan(seed: int) -> Plan:
    rng = random.Random(seed)
    thinking = rng.random() < 0.5
    work_delay = rng.uniform(0.2, 0.8)
    tool_latency = rng.uniform(0.05, 0.6)
    chunk_delay = rng.choice([0.01, 0.04, 0.1])
    # (the window: what is said before the work or the tool, the work or the tool, the
    # answer after it, and a little after that)
    window = (work_delay if thinking else tool_latency) + 0.4 + 8 * chunk_delay
    return Plan(
        seed=seed,
        thinking=thinking,
        entry=rng.choice(["install", "subclass"]),
        warmups=rng.randint(0, 1),
        work_delay=work_delay,
        tool_latency=tool_latency,
        lost_after=rng.uniform(0.0, window),
        store_interval=rng.choice([0.0, 30.0]),
        chunk_delay=chunk_delay,
    )


def _door(store: Any) -> tuple[Any, list[bool]]:
    """Worker A's way to the session ``store`` (a shallow copy: the same sessions), and the
    flag that closes it when the worker is lost: it then writes nothing more (a killed
    process's writes do not land; its locks go with it)."""
    door = copy.copy(store)
    closed = [False]
    write = door.append_event

    async def append_event(session: Any, event: Any) -> Any:
        if closed[0]:
            raise ConnectionError("worker A is gone")
        return await write(session=session, event=event)

    door.append_event = append_event
    return door, closed


def _agent(plan: Plan, server: FakeLiveServer, tools: list[Any]) -> Any:
    policy = ResumePolicy(store_handle_in_session=True, handle_store_interval=plan.store_interval)
    model = server.gemini(plan.model)
    if plan.entry == "install":
        from google.adk.agents import LlmAgent

        adk_live_resume.install(policy)
        return LlmAgent(name="assistant", model=model, tools=tools)
    return ResumableLlmAgent(name="assistant", model=model, tools=tools, resume_policy=policy)


def _user_texts(session: Any) -> list[str]:
    """The user's typed turns the ADK session holds."""
    return [
        part.text
        for event in session.events
        if getattr(event, "author", None) == "user"
        for part in (getattr(getattr(event, "content", None), "parts", None) or [])
        if getattr(part, "text", None)
    ]


def _story(server: FakeLiveServer, live_b: LiveDriver) -> str:
    """What worker B started from and what each connection did, for a failure's message."""
    from adk_live_resume.testing.driver import summarize

    kinds = []
    for event in live_b.session.events:
        parts = getattr(getattr(event, "content", None), "parts", None) or []
        if not parts:
            continue
        part = parts[0]
        kind = (
            "call"
            if part.function_call is not None
            else "response"
            if part.function_response is not None
            else repr(part.text)
        )
        working = "(working)" if (event.custom_metadata or {}).get(WORK_KEY) else ""
        kinds.append(f"{event.author}:{kind}{working}")
    connections = [
        (
            c.index,
            f"resumed={c.resumed}",
            f"handle={'yes' if c.resume_handle else 'no'}",
            f"history={c.history_sends}",
            f"turns={c.user_turns}",
            f"answers={c.answers}",
            f"issued={[i.point for i in c.handle_issues]}",
            f"ended_by={c.ended_by}",
        )
        for c in server.connections
    ]
    events = [summarize(e) for e in live_b.events]
    return (
        f"B's session: {kinds}; connections: {connections}; B's events: {events};"
        f" B's run: {'ended with ' + repr(live_b.error) if live_b.ended else 'going on'}"
    )


def _model_texts(session: Any) -> list[str]:
    """The model's text turns the ADK session holds (a turn's text parts joined)."""
    texts = []
    for event in session.events:
        parts = getattr(getattr(event, "content", None), "parts", None) or []
        if getattr(event, "author", "user") != "user" and parts:
            texts.append("".join(p.text for p in parts if p.text and not p.thought))
    return texts


def _holds_response(session: Any) -> bool:
    """Whether the ADK session holds a function response (its tool's result)."""
    return any(
        getattr(part, "function_response", None) is not None
        for event in session.events
        for part in (getattr(getattr(event, "content", None), "parts", None) or [])
    )


async def run_plan(plan: Plan) -> None:
    runs: list[str] = []

    async def lookup(item: str) -> dict[str, str]:
        """Look an item up."""
        await asyncio.sleep(plan.tool_latency)
        # (the worker whose run called it, not the one current when it ends: worker A's tool
        # may end in the few loop turns its run's cancellation takes to reach it)
        runs.append(WORKER.get())
        return {"item": item, "found": "yes"}

    tools = [] if plan.thinking else [blocking(lookup)]
    server = FakeLiveServer(work_delay=plan.work_delay, chunk_delay=plan.chunk_delay)
    async with server:
        from google.adk.runners import Runner
        from google.adk.sessions import InMemorySessionService

        agent = _agent(plan, server, tools)
        store = InMemorySessionService()
        door, lost = _door(store)
        worker_a = Runner(agent=agent, app_name=APP, session_service=door)
        worker_b = Runner(agent=agent, app_name=APP, session_service=store)
        session = await store.create_session(app_name=APP, user_id=USER)
        config = text_config()
        WORKER.set("a")
        live_a = await start(worker_a, session, config)
        said = [f"t{n}" for n in range(plan.warmups)]
        for text in said:
            assert await live_a.say(text, skip=working_utterance, timeout=15) == f"echo: {text}"
        live_a.send_text(plan.request)
        await asyncio.sleep(plan.lost_after)

        # Worker A is lost: it writes nothing more, and its run ends (its client is gone).
        lost[0] = True
        WORKER.set("b")
        live_b = await move(live_a, worker_b, config)
        # The answer reached the user if A's stream told it, or if A wrote it to the session
        # and was lost before its stream did (the client shows the session's history when it
        # comes back): then it is told, once, and B must not tell it again.
        streamed_on_a = [t for t in answers(live_a, 0) if plan.answered(t)]
        in_history = any(plan.answered(t) for t in _model_texts(live_b.session))
        assert len(streamed_on_a) <= 1, f"A told the answer {len(streamed_on_a)} times"
        told_before_b = bool(streamed_on_a) or in_history
        holds_response = _holds_response(live_b.session)
        if plan.request not in _user_texts(live_b.session):
            # Worker A was lost before it kept the request: nothing can know of it but the
            # client, which sends it again (its worker never acknowledged it).
            assert not told_before_b
            live_b.send_text(plan.request)
        if not told_before_b:
            first = "echo: " if plan.thinking else "lookup returned"
            try:
                await answer_like(live_b, 0, first, timeout=25)
            except TimeoutError:
                raise AssertionError(f"B never answered; {_story(server, live_b)}") from None
        recalled = await live_b.say("recall", skip=working_utterance, timeout=20)
        assert await live_b.close(timeout=10) is None
        told_on_b = [t for t in answers(live_b, 0) if plan.answered(t)]
        assert int(told_before_b) + len(told_on_b) == 1, (
            f"told before B: {told_before_b}, by B: {told_on_b}; {_story(server, live_b)}"
        )
        assert recalled == "you said: " + " | ".join([*said, plan.request])
        assert runs.count("a") <= 1 and runs.count("b") <= 1, f"the tool ran on {runs}"
        if holds_response:
            assert "b" not in runs, "the tool ran again for a result the session held"
        for record in server.connections:
            assert not record.errors, record.errors
            assert not record.unknown_tool_response_ids, record
        assert server.duplicate_history_sends() == 0
    await asyncio.sleep(0)
    assert our_tasks() == []


async def _play(seed: int) -> None:
    plan = make_plan(seed)
    await run_seed(
        "workers chaos",
        seed,
        plan.describe(),
        run_plan(plan),
        timeout=75,
        replay=(
            "ADK_LIVE_RESUME_WORKERS_CHAOS_SEED={seed} python3 scripts/dev.py soak"
            " tests/soak/test_workers_chaos.py"
        ),
    )


@pytest.mark.soak
@pytest.mark.parametrize("seed", SEEDS, ids=[f"seed_{s}" for s in SEEDS])
async def test_workers_chaos(seed: int, handle_key: str) -> None:
    await _play(seed)
