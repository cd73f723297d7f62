"""Voice chaos: seeded conversations over a microphone that never stops, with random faults.

Each seed picks a dialect (Gemini API or Vertex AI ``transparent``), a model family (Gemini
2.x Live, or 3.x Live where the installed ADK speaks it), a handle schedule (handles after
turns and at random idle points, the user silent or speaking), a connection lifetime (so
goAways land anywhere) and drops of every style (close codes, aborts, mid-answer,
mid-tool-call, during a reconnect, refused handles, a server restart). Then a microphone task
streams audio the whole time (silence between utterances) while the conversation runs:
spoken utterances, typed turns, parallel tool calls, and barge-ins (speaking over an
answer). Invariants, for every seed:

* every utterance and typed turn is answered exactly once, with the right answer (a turn
  the user talked over is answered at most once), and at the end the model remembers every
  user turn exactly once, in order;
* every tool ran exactly once for its item, each answer carries its own call's result, and
  no response went to a session that never issued its call id;
* no history was delivered twice, and on Vertex nothing the index said was consumed was sent
  again;
* the run ends in bounded time and no task of ours is left behind.

``ADK_LIVE_RESUME_VOICE_CHAOS_RUNS`` seeds (200) from ``ADK_LIVE_RESUME_VOICE_CHAOS_FIRST_SEED``
(0); ``ADK_LIVE_RESUME_VOICE_CHAOS_SEED=N`` replays one. A longer soak on new seeds:
``ADK_LIVE_RESUME_VOICE_CHAOS_FIRST_SEED=200 ADK_LIVE_RESUME_VOICE_CHAOS_RUNS=2000 python3
scripts/dev.py test tests/test_voice_chaos.py``.
"""

from __future__ import annotations

import asyncio
import os
import random
import string
from dataclasses import dataclass, field

import pytest
from google.adk.agents import LlmAgent
from google.adk.agents.run_config import RunConfig
from google.genai import types

import adk_live_resume
from adk_live_resume import ResumePolicy, adk_compat
from adk_live_resume.testing import FakeLiveServer, Fault, HandleSchedule, silence_pcm, speech_pcm
from adk_live_resume.testing.driver import LiveDriver

from .conftest import our_tasks
from .faultplans import random_fault, restart_after, run_seed

# 200 seeds on every run of the suite (about 3 min on 2 cores), on both full-suite releases.
RUNS = int(os.environ.get("ADK_LIVE_RESUME_VOICE_CHAOS_RUNS", "200"))
FIRST = int(os.environ.get("ADK_LIVE_RESUME_VOICE_CHAOS_FIRST_SEED", "0"))
ONLY = os.environ.get("ADK_LIVE_RESUME_VOICE_CHAOS_SEED")
SEEDS = [int(ONLY)] if ONLY else list(range(FIRST, FIRST + RUNS))

pytestmark = [pytest.mark.chaos, pytest.mark.timeout(120)]

GEMINI_3 = "gemini-3.1-flash-live-preview"
RATE = 16000
CHUNK_MS = 40
PACE = 4.0  # the microphone runs at 4x real time (the fake's VAD counts audio, not clocks)
# Small replay bounds, so that the memory invariant bites within a short conversation.
POLICY = ResumePolicy(
    go_away_margin=0.2,
    max_reconnects_per_minute=60,
    replay_audio_seconds=1.0,
    max_utterance_seconds=3.0,
)
#: The outbox's documented bound (RunStats.peak_replay_audio_ms), plus one chunk.
MAX_HELD_AUDIO_MS = 1.25 * 1000 * (POLICY.replay_audio_seconds + POLICY.max_utterance_seconds)
MAX_HELD_MESSAGES = int(MAX_HELD_AUDIO_MS // CHUNK_MS) + 1 + 20  # audio, plus turns and responses
WORDS = ["alpha", "bravo", "cedar", "delta", "ember", "fjord", "grove", "harbor", "indigo"]


@dataclass
class VoicePlan:
    seed: int
    vertex: bool = False
    gemini3: bool = False
    every_audio_ms: int | None = None
    lifetime: float = 60.0
    steps: list[tuple[str, str]] = field(default_factory=list)
    faults: dict[int, Fault] = field(default_factory=dict)
    restart_after: float | None = None

    def describe(self) -> str:
        faults = ", ".join(f"#{n}: {f}" for n, f in sorted(self.faults.items()))
        return (
            f"vertex={self.vertex} gemini3={self.gemini3} every_audio_ms={self.every_audio_ms}"
            f" lifetime={self.lifetime:.2f}s steps={[k for k, _ in self.steps]}"
            f" faults=[{faults}] restart_after={self.restart_after}"
        )


def make_plan(seed: int) -> VoicePlan:
    rng = random.Random(seed)
    plan = VoicePlan(seed)
    plan.vertex = rng.random() < 0.4
    plan.gemini3 = rng.random() < 0.35 and adk_compat.speaks_gemini_3_live(GEMINI_3)
    plan.every_audio_ms = rng.choice([None, 160, 400, 1000])
    plan.lifetime = rng.choice([60.0, rng.uniform(2.5, 6.0)])
    kinds = [
        "speech",
        "text",
        "tools",
        *rng.choices(["speech", "text", "barge"], k=rng.randint(1, 3)),
    ]
    rng.shuffle(kinds)
    # Spoken texts use letters no other utterance of the seed uses, none twice: the fake's
    # "sent again" check knows audio only by its bytes, so two clips must never share a chunk.
    letters = iter(rng.sample(string.ascii_lowercase, 26))
    for n, kind in enumerate(kinds):
        if kind in ("speech", "barge"):
            word = "".join(next(letters) for _ in range(5))
        else:
            word = f"{rng.choice(WORDS)} {seed} {n}"
        if kind == "tools":
            plan.steps.append(
                (
                    kind,
                    f'call lookup {{"item": "a{seed}-{n}"}}'
                    f' and call lookup {{"item": "b{seed}-{n}"}}',
                )
            )
        else:
            plan.steps.append((kind, word))
    for connection in (1, 2, 3):
        if rng.random() < 0.7:
            plan.faults[connection] = random_fault(
                rng, connection, messages=(5, 80), seconds=(0.1, 1.5)
            )
    if rng.random() < 0.25:
        plan.restart_after = rng.uniform(0.2, 2.0)
    return plan


class Microphone:
    """Streams 40 ms chunks the whole time: silence, or the clip being spoken."""

    def __init__(self, live: LiveDriver) -> None:
        self.live = live
        self._clips: asyncio.Queue[tuple[bytes, asyncio.Future[None]]] = asyncio.Queue()
        self._task = asyncio.create_task(self._run(), name="voice chaos microphone")

    async def speak(self, text: str) -> None:
        """Say ``text`` (then the microphone goes back to silence); returns once it was sent."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        pcm = speech_pcm(text) + silence_pcm(0.6)
        await self._clips.put((pcm, done))
        await done

    async def _run(self) -> None:
        size = RATE * 2 * CHUNK_MS // 1000
        silence = silence_pcm(CHUNK_MS / 1000)
        while True:
            if self._clips.empty():
                if not self.live.ended:
                    self.live.send_audio(silence)
                await asyncio.sleep(CHUNK_MS / 1000 / PACE)
                continue
            pcm, done = await self._clips.get()
            for start in range(0, len(pcm), size):
                if not self.live.ended:
                    self.live.send_audio(pcm[start : start + size])
                await asyncio.sleep(CHUNK_MS / 1000 / PACE)
            done.set_result(None)

    async def stop(self) -> None:
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)


def _items(text: str) -> list[str]:
    return [part.split('"item": "')[1].split('"')[0] for part in text.split(" and ")]


async def run_plan(plan: VoicePlan) -> None:
    tool_runs: list[str] = []
    runs: list[adk_live_resume.RunStats] = []
    remove = adk_live_resume.on_run_end(runs.append)
    try:
        await _run_plan(plan, tool_runs, runs)
    finally:
        remove()


async def _run_plan(
    plan: VoicePlan, tool_runs: list[str], runs: list[adk_live_resume.RunStats]
) -> None:

    def lookup(item: str) -> dict[str, str]:
        """Look an item up."""
        tool_runs.append(item)
        return {"item": item, "found": "yes"}

    async with FakeLiveServer(
        chunk_delay=0.004,
        time_scale=1.0,
        connection_lifetime=plan.lifetime,
        go_away_lead=min(1.0, plan.lifetime / 2),
        handle_schedule=HandleSchedule(every_audio_ms=plan.every_audio_ms),
    ) as server:
        for connection, fault in plan.faults.items():
            server.script(fault, connection=connection)
        adk_live_resume.install(POLICY)
        model = server.gemini(GEMINI_3 if plan.gemini3 else "gemini-live-fake", vertex=plan.vertex)
        agent = LlmAgent(name="assistant", model=model, tools=[lookup])
        config = RunConfig(
            response_modalities=[types.Modality.TEXT],
            session_resumption=types.SessionResumptionConfig(),
            context_window_compression=types.ContextWindowCompressionConfig(
                sliding_window=types.SlidingWindow()
            ),
        )
        maybe_cut: list[str] = []
        async with (
            restart_after(server, plan.restart_after),
            await LiveDriver.start(agent, run_config=config) as live,
        ):
            mic = Microphone(live)
            try:
                for kind, text in plan.steps:
                    if kind == "speech":
                        mark = len(live.events)
                        await mic.speak(text)
                        answer = await live.answer_after(mark, timeout=20)
                        assert answer == f"echo: {text}", (kind, text, answer)
                    elif kind == "tools":
                        answer = await live.say(text, timeout=20)
                        for item in _items(text):
                            assert f'"item":"{item}"' in answer, (text, answer)
                    elif kind == "barge":
                        story = f"story {text}"
                        maybe_cut.append(story)
                        live.send_text(story)
                        await live.wait_for_event(
                            lambda e: bool(e.content and e.content.parts and e.partial),
                            after=len(live.events),
                            timeout=20,
                        )
                        mark = len(live.events)
                        await mic.speak(text)
                        # The story may finish first or be cut: wait for this answer.
                        await server.wait_for(
                            lambda t=text: t in server.user_turns_answered(),
                            20,  # type: ignore[misc]
                        )
                        await live.wait_for_event(
                            lambda e, t=text: _says(e, f"echo: {t}"), after=mark, timeout=20
                        )
                    else:
                        assert await live.say(text, timeout=20) == f"echo: {text}"
                recall = await live.say("recall", timeout=20)
            finally:
                await mic.stop()
            assert await live.close(timeout=10) is None
        said = [text for _, text in plan.steps]
        remembered = recall.removeprefix("you said: ").split(" | ")
        # Every turn is remembered once, in order; a turn the user talked over at most once.
        assert [t for t in remembered if t not in maybe_cut] == said, f"memory {remembered}"
        assert all(remembered.count(story) <= 1 for story in maybe_cut), f"memory {remembered}"
        answered = server.user_turns_answered()
        for text in said:
            assert answered.count(text) == 1, (
                f"{text!r} answered {answered.count(text)}x: {answered}"
            )
        for story in maybe_cut:
            assert answered.count(story) <= 1, f"{story!r} answered twice: {answered}"
        expected_items = sorted(
            i for kind, text in plan.steps if kind == "tools" for i in _items(text)
        )
        assert sorted(tool_runs) == expected_items, f"tool ran for {tool_runs}"
        for record in server.connections:
            assert not record.unknown_tool_response_ids, record
            assert not record.stale_tool_response_ids, record
            assert not record.errors, record.errors
        assert server.duplicate_history_sends() == 0
        if plan.vertex:
            assert server.resent_consumed() == [], server.resent_consumed()
        # Memory held by the run for replay stays within the policy's bounds.
        assert len(runs) == 1, runs
        assert runs[0].peak_replay_audio_ms <= MAX_HELD_AUDIO_MS + CHUNK_MS, runs[0]
        assert runs[0].peak_replay_messages <= MAX_HELD_MESSAGES, runs[0]
        assert runs[0].error is None, runs[0]
    await asyncio.sleep(0)
    assert our_tasks() == []


def _says(event: object, text: str) -> bool:
    """A final (non-partial) event of the model whose text is ``text``."""
    content = getattr(event, "content", None)
    if getattr(event, "partial", False) or content is None:
        return False
    return "".join(p.text or "" for p in content.parts or []) == text


@pytest.mark.skipif(not SEEDS, reason="ADK_LIVE_RESUME_VOICE_CHAOS_RUNS=0")
@pytest.mark.parametrize("seed", SEEDS or [0], ids=[f"seed_{s}" for s in SEEDS or [0]])
async def test_voice_chaos(seed: int) -> None:
    plan = make_plan(seed)
    await run_seed(
        "voice chaos",
        seed,
        plan.describe(),
        run_plan(plan),
        timeout=100,
        replay="ADK_LIVE_RESUME_VOICE_CHAOS_SEED={seed}"
        " python3 scripts/dev.py test tests/test_voice_chaos.py",
    )
