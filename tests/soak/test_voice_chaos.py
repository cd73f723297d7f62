"""Voice chaos: seeded conversations over a microphone that never stops, with random faults.

Each seed picks an entry point (``install()`` or ``ResumableLlmAgent``), a dialect (Gemini API
or Vertex AI ``transparent``), a model family (Gemini 2.x Live, or 3.x Live where the installed
ADK speaks it), a handle schedule (handles after turns and at random idle points, the user
silent or speaking), a connection lifetime (so goAways land anywhere) and drops of every style
(close codes, aborts, mid-answer, mid-tool-call, during a reconnect, refused handles, a server
restart), and stalls (a connection, or the live session, that stops answering with its socket
open: silence, empty or rejected turns, answers of near-silent audio; drawn from a random
stream of their own, never for a pinned seed, whose plan stays as it failed). ADK's own work
between connections is made slow at random: a ``before_model_callback`` that screens every
typed turn for a random time (sometimes longer than ``close_timeout``) and blocks some, and a
session service whose writes take a random time.
Then a microphone task streams audio the whole time (silence between utterances) while the
conversation runs: spoken utterances, typed turns, parallel tool calls, barge-ins (speaking
over an answer), typed turns sent inside a window between connections (the instant the next
connection is being opened after a goAway, or while a dropped one reconnects, or while ADK's
sender still screens the turn), blocked turns, an agent transfer, and repeats: typed words
the user already typed, and a tool asked for again with the same arguments (each a new turn,
answered again, its tools run again). Some seeds have the model answer in audio with output
transcription off (a voice app that shows no text); their answers are read from the audio.
Invariants, for every seed:

* every utterance and typed turn is answered exactly once (a repeat once more), with the
  right answer (a turn the user talked over is answered at most once), and at the end the
  model remembers every user turn exactly once, in order (but the answered turns ADK's own
  history rule leaves out
  of a fresh session whose history ends with a background job's late result, a documented
  limitation);
* no content the callback blocks ever reaches the server;
* every tool ran exactly once for each time its item was asked for, each answer carries its
  own call's result, and no response went to a session that never issued its call id; each
  background job ran once, its result was told at most once and reached the model (as a tool
  response, or in the history a fresh session began with);
* no history was delivered twice, and on Vertex nothing the index said was consumed was sent
  again;
* no socket stays open without a setup longer than ``early_dial.MAX_AGE``;
* every stalled turn is answered exactly once (after the recovery), and no recovery happens
  without a stall: the run's stalls are at most the connections that stalled, none without
  a stall in the plan;
* every WARNING the run logs is one this plan can cause, and true;
* the run ends in bounded time and no task of ours is left behind.

The soak (``python3 scripts/dev.py soak``, marked ``soak``) plays
``ADK_LIVE_RESUME_VOICE_CHAOS_RUNS`` seeds (200) from ``ADK_LIVE_RESUME_VOICE_CHAOS_FIRST_SEED``
(0); ``ADK_LIVE_RESUME_VOICE_CHAOS_SEED=N`` replays one. ``ADK_LIVE_RESUME_CHAOS_LOAD=N`` runs N
busy processes beside the test for its whole duration (a slow event loop opens the windows an
idle one hides). The seeds that once failed (:data:`PINNED`) run on every run of the fast suite,
each under a test id that names the behaviour it guards, and their plans are held by a golden
record (``tests/pinned_plans.json``, checked by ``tests/soak/test_pinned_plans.py``). A longer soak
on new seeds, under load: ``python3 scripts/dev.py soak --seeds 2000 --first-seed 200 --load 2``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import random
import string
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.agents.run_config import RunConfig
from google.adk.models.llm_response import LlmResponse
from google.adk.sessions import InMemorySessionService
from google.genai import live as genai_live
from google.genai import types

import adk_live_resume
from adk_live_resume import ResumableLlmAgent, ResumePolicy
from adk_live_resume.compat import adk_compat, chunk_encoding
from adk_live_resume.conversation.fresh_history import SPOKEN_ANSWER
from adk_live_resume.shell import early_dial
from adk_live_resume.testing import FakeLiveServer, Fault, HandleSchedule, silence_pcm, speech_pcm
from adk_live_resume.testing.children import busy_processes
from adk_live_resume.testing.driver import LiveDriver
from adk_live_resume.testing.protocol import pick, pick_list

from ..conftest import adk_screens_live_content, non_blocking, our_tasks
from ..faultplans import RETRYABLE, random_fault, restart_after, run_seed, watch_wire
from ..pinned_seeds import PinnedSeed, pinned_params

RUNS = int(os.environ.get("ADK_LIVE_RESUME_VOICE_CHAOS_RUNS", "200"))
FIRST = int(os.environ.get("ADK_LIVE_RESUME_VOICE_CHAOS_FIRST_SEED", "0"))
ONLY = os.environ.get("ADK_LIVE_RESUME_VOICE_CHAOS_SEED")
SEEDS = [int(ONLY)] if ONLY else list(range(FIRST, FIRST + RUNS))
#: Seeds that once failed (most in the 2,000-seed soaks, some under load), each with the
#: behaviour it guards; 273, 570, 32, 149, 174, 596, 993 and 1456 failed on google-adk
#: 1.27.2, the others on 2.13. They run in the fast suite; their plans are held by
#: ``tests/pinned_plans.json``.
PINNED = (
    PinnedSeed(9, "typed_turn_between_a_late_result_and_its_call_reaches_a_fresh_session"),
    PinnedSeed(16, "typed_turn_that_cut_output_off_is_answered_after_a_fresh_start"),
    PinnedSeed(32, "vertex_spoken_turns_reach_a_fresh_history_on_adk_1"),
    PinnedSeed(65, "silence_after_an_utterance_keeps_its_speech_in_the_replay"),
    PinnedSeed(116, "typed_turn_mid_utterance_is_not_replayed_with_it"),
    PinnedSeed(140, "talked_over_typed_turn_not_replayed_into_a_session_that_holds_it"),
    PinnedSeed(149, "replayed_utterance_starts_at_its_first_sound"),
    PinnedSeed(164, "response_to_an_earlier_sessions_call_never_reaches_the_next_run"),
    PinnedSeed(174, "unanswered_utterance_is_a_turn_of_its_own_in_a_fresh_history"),
    PinnedSeed(273, "repeat_held_at_a_fresh_start_is_void_there"),
    PinnedSeed(313, "no_warning_for_a_background_tool_stopped_on_leaving"),
    PinnedSeed(330, "queue_handed_to_the_next_run_releases_its_guard"),
    PinnedSeed(379, "one_generation_at_a_time_in_the_fake"),
    PinnedSeed(507, "result_told_in_a_pause_of_an_utterance_does_not_answer_it"),
    PinnedSeed(543, "answer_cut_off_with_its_connection_answers_nothing"),
    PinnedSeed(570, "failed_history_send_keeps_the_fresh_sessions_replay"),
    PinnedSeed(596, "utterances_answered_in_audio_alone_are_one_turn_in_a_fresh_history"),
    PinnedSeed(834, "tool_results_told_in_audio_alone_are_not_told_again_by_a_fresh_session"),
    PinnedSeed(993, "utterance_answered_in_audio_alone_is_not_answered_again_by_a_fresh_session"),
    PinnedSeed(1000, "background_result_waits_until_the_user_is_quiet"),
    PinnedSeed(1012, "failed_under_load_beside_seed_1013"),
    PinnedSeed(1013, "speech_begun_before_another_turns_answer_is_not_answered_by_it"),
    PinnedSeed(1456, "typed_turn_sent_to_a_fresh_session_only_when_its_history_lacks_it"),
    PinnedSeed(1576, "background_result_in_a_fresh_history_counts_as_delivered"),
    PinnedSeed(1578, "background_result_in_a_fresh_history_counts_as_delivered"),
    PinnedSeed(1794, "utterance_whose_replay_no_connection_heard_reaches_a_fresh_session"),
)
LOAD = int(os.environ.get("ADK_LIVE_RESUME_CHAOS_LOAD", "0"))

pytestmark = [pytest.mark.chaos, pytest.mark.timeout(120)]

GEMINI_3 = "gemini-3.1-flash-live-preview"
#: The 2.5 native-audio family: no turnComplete between a toolCall and its response.
NATIVE_AUDIO = "gemini-2.5-flash-native-audio-preview-09-2025"
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
#: What the screening callback answers for a turn it blocks; a turn it blocks carries this.
BLOCKED_REPLY = "not allowed"
FORBIDDEN = "forbidden"
#: WARNINGs a run of this soak may log, each only when true (checked per message).
EXPECTED_WARNINGS = ("was not replayed",)
SCREENS = adk_screens_live_content()
BACKGROUND = adk_compat.runs_tools_in_background()


@dataclass
class VoicePlan:
    seed: int
    entry: str = "install"
    vertex: bool = False
    gemini3: bool = False
    native_audio: bool = False
    every_audio_ms: int | None = None
    lifetime: float = 60.0
    steps: list[tuple[str, str]] = field(default_factory=list)
    faults: dict[int, Fault] = field(default_factory=dict)
    restart_after: float | None = None
    #: Seconds the screening callback takes, per typed turn text (default: a few ms).
    screening: dict[str, float] = field(default_factory=dict)
    #: Upper bound of the session service's random delay per write (s).
    session_latency: float = 0.0
    #: How each "window" step opens its window: "go_away", "drop" or "screening".
    windows: dict[str, str] = field(default_factory=dict)
    #: Seconds each NON_BLOCKING job takes, by name.
    jobs: dict[str, float] = field(default_factory=dict)
    #: google-genai's ``send_realtime_input`` is wrapped (tracing, as an app may do).
    wrapped_send: bool = False
    #: Kinds of the steps said again, word for word, after their first time ("text": the
    #: same typed words; "tools": the same tool asked for with the same arguments). Each
    #: repeat is a new turn: answered again, its tools run again.
    again: list[str] = field(default_factory=list)
    #: The model answers in audio, with output transcription off (a voice app that shows no
    #: text): the answers are read from the audio itself.
    audio_out: bool = False
    #: A stall and the connection it is armed on (``None``: no stall).
    stall: Fault | None = None
    stall_connection: int = 0
    #: Handles mid-reply (``None``: none): "replays" (a resume from one says the cut reply
    #: again, ``resume_replays_cut_reply``) or "drops" (``HandleSchedule(mid_reply=True)``).
    cut_reply: str | None = None

    @property
    def policy(self) -> ResumePolicy:
        """The soak's policy; with a stall, one that notices it within the steps' waits
        (and an empty turn at once), with the user's speech transcribed by the server."""
        if self.stall is None:
            return POLICY
        return POLICY.replace(stall_timeout=2.0, degenerate_turns=1)

    def describe(self) -> str:
        faults = ", ".join(f"#{n}: {f}" for n, f in sorted(self.faults.items()))
        return (
            f"entry={self.entry} vertex={self.vertex} gemini3={self.gemini3}"
            f" native_audio={self.native_audio}"
            f" every_audio_ms={self.every_audio_ms} lifetime={self.lifetime:.2f}s"
            f" steps={[k for k, _ in self.steps]} windows={list(self.windows.values())}"
            f" faults=[{faults}] restart_after={self.restart_after}"
            f" slow_screening={sorted(t for t, d in self.screening.items() if d > 0.5)}"
            f" session_latency={self.session_latency:.2f} jobs={self.jobs}"
            f" wrapped_send={self.wrapped_send}"
        ) + self._describe_extras()

    def _describe_extras(self) -> str:
        """The draws added later, named only when set (so the plans without them read as
        they always did)."""
        stall = (
            f" stall=#{self.stall_connection}: {self.stall.describe()}"
            if self.stall is not None
            else ""
        )
        return (
            (f" again={self.again}" if self.again else "")
            + (" audio_out=True" if self.audio_out else "")
            + stall
            + (f" cut_reply={self.cut_reply}" if self.cut_reply else "")
        )

    @property
    def transfers(self) -> bool:
        return any(kind == "transfer" for kind, _ in self.steps)


def make_plan(seed: int) -> VoicePlan:
    rng = random.Random(seed)
    plan = VoicePlan(seed)
    plan.vertex = rng.random() < 0.4
    plan.gemini3 = rng.random() < 0.35 and adk_compat.speaks_gemini_3_live(GEMINI_3)
    # (A draw of its own, so that every other choice of a seed's plan stays as it was.)
    plan.native_audio = not plan.gemini3 and random.Random(-1 - seed).random() < 0.3
    plan.every_audio_ms = rng.choice([None, 160, 400, 1000])
    plan.lifetime = rng.choice([60.0, rng.uniform(2.5, 6.0)])
    extra = ["speech", "text", "barge", "window"] + (["blocked"] if SCREENS else [])
    # (Gemini 3.1 Live calls functions synchronously only: no background jobs there.)
    extra += ["background"] if BACKGROUND and not plan.gemini3 else []
    kinds = ["speech", "text", "tools", *rng.choices(extra, k=rng.randint(1, 3))]
    rng.shuffle(kinds)
    if rng.random() < 0.2:  # an agent transfer, then the rest of the talk is the child's
        kinds.insert(rng.randint(1, len(kinds)), "transfer")
    # Spoken texts use letters no other utterance of the seed uses, none twice: the fake's
    # "sent again" check knows audio only by its bytes, so two clips must never share a chunk.
    letters = iter(rng.sample(string.ascii_lowercase, 26))
    for n, kind in enumerate(kinds):
        if kind in ("speech", "barge"):
            word = "".join(next(letters) for _ in range(5))
        elif kind == "blocked":
            word = f"{FORBIDDEN} {rng.choice(WORDS)} {seed} {n}"
        else:
            word = f"{rng.choice(WORDS)} {seed} {n}"
        if kind == "tools":
            word = (
                f'call lookup {{"item": "a{seed}-{n}"}} and call lookup {{"item": "b{seed}-{n}"}}'
            )
        elif kind == "transfer":
            word = 'call transfer_to_agent {"agent_name": "helper"}'
        elif kind == "background":
            name = f"j{seed}-{n}"
            plan.jobs[name] = rng.uniform(0.1, 0.8)
            word = f'call job {{"name": "{name}"}}'
        elif kind == "window":
            plan.windows[word] = rng.choice(
                ["go_away", "drop", *(["screening"] if SCREENS else [])]
            )
        plan.steps.append((kind, word))
        if kind in ("text", "tools", "window", "blocked", "background"):
            slow = rng.random() < 0.05 or plan.windows.get(word) == "screening"
            plan.screening[word] = rng.uniform(1.05, 1.3) if slow else rng.uniform(0.0, 0.02)
    for connection in (1, 2, 3):
        if rng.random() < 0.7:
            plan.faults[connection] = random_fault(
                rng, connection, messages=(5, 80), seconds=(0.1, 1.5)
            )
    if rng.random() < 0.25:
        plan.restart_after = rng.uniform(0.2, 2.0)
    plan.session_latency = rng.choice([0.0, 0.0, 0.1, 0.4, 1.2])
    plan.entry = rng.choice(["install", "subclass"])
    plan.wrapped_send = rng.random() < 0.3
    _add_repeats(plan, random.Random(f"voice chaos repeats {seed}"))
    # Audio answers without transcription: not with barge-ins, background jobs or a transfer,
    # whose checks read the text of single events (a stream of its own too).
    audio = random.Random(f"voice chaos audio {seed}").random() < 0.3
    plan.audio_out = audio and not {"barge", "background", "transfer"} & {k for k, _ in plan.steps}
    stalls = random.Random(f"stall {seed}")  # (its own stream: the choices above stay)
    if seed not in {pin.seed for pin in PINNED} and stalls.random() < 0.25:
        shape = stalls.choice(["silent", "silent", "empty", "rejected", "quiet_audio"])
        plan.stall = Fault.stall(shape, session=stalls.random() < 0.3)  # type: ignore[arg-type]
        plan.stall_connection = stalls.choice([1, 2])
    _add_late_2026_shapes(plan, random.Random(f"voice chaos late 2026 {seed}"))
    return plan


def _add_late_2026_shapes(plan: VoicePlan, rng: random.Random) -> None:
    """The field shapes of late 2026 (a stream of their own, never for a pinned seed, whose
    plan stays as it failed): handles issued mid-reply, replayed or not after a resume; a
    model that never answers after a barge-in, where the plan barges in."""
    if plan.seed in {pin.seed for pin in PINNED}:
        return
    if rng.random() < 0.3:
        plan.cut_reply = rng.choice(["replays", "drops"])
    barges = any(kind == "barge" for kind, _ in plan.steps)
    if plan.stall is None and barges and rng.random() < 0.3:
        # (for the connection: the source's client recovered by nudging or reconnecting;
        # for the live session, every resume's replay would barge in again)
        plan.stall = Fault.stall("after_barge_in")
        plan.stall_connection = rng.choice([1, 2])


def _add_repeats(plan: VoicePlan, rng: random.Random) -> None:
    """Say some steps again after the conversation, word for word (a stream of their own, so
    the steps before them stay as they were): typed words the user already typed, and a tool
    asked for again with the same arguments. Before a transfer only (the child's memory is
    ADK's history, where the parent's turns are "For context" turns)."""
    if plan.transfers:
        return
    for kind in ("text", "tools"):
        earlier = [text for k, text in plan.steps if k == kind]
        if earlier and rng.random() < 0.35:
            plan.again.append(kind)
            plan.steps.append((kind, rng.choice(earlier)))


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


class SlowSessions(InMemorySessionService):  # type: ignore[misc]
    """A session service a little far away: every write takes up to 20 ms, and a user event
    (written by ADK's sender while it holds the request) up to ``latency`` s."""

    def __init__(self, latency: float, rng: random.Random) -> None:
        super().__init__()
        self.latency = latency
        self.rng = rng

    async def append_event(self, session: Any, event: Any) -> Any:
        stored = await super().append_event(session, event)
        if self.latency:
            user = getattr(event, "author", None) == "user"
            await asyncio.sleep(self.rng.uniform(0.0, self.latency if user else 0.02))
        return stored


class Screening:
    """A ``before_model_callback`` that screens typed turns: it takes the plan's time for
    each and blocks every turn with :data:`FORBIDDEN` in it. ``entered`` holds the texts it
    began screening, in order, with an event set when each began."""

    def __init__(self, plan: VoicePlan) -> None:
        self.plan = plan
        self.entered: dict[str, asyncio.Event] = {}

    def began(self, text: str) -> asyncio.Event:
        return self.entered.setdefault(text, asyncio.Event())

    async def __call__(self, callback_context: Any, llm_request: Any) -> LlmResponse | None:
        text = "".join(p.text or "" for c in llm_request.contents for p in c.parts or [])
        self.began(text).set()
        await asyncio.sleep(self.plan.screening.get(text, 0.0))
        if FORBIDDEN in text:
            return LlmResponse(
                content=types.Content(role="model", parts=[types.Part(text=BLOCKED_REPLY)])
            )
        return None


class Warnings(logging.Handler):
    """Keeps the WARNINGs (and worse) of the library's loggers during a run (not those of
    the fake server, ``adk_live_resume.testing``)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if not record.name.startswith("adk_live_resume.testing"):
            self.messages.append(record.getMessage())


class Tracer:
    """Wraps google-genai's ``AsyncSession.send_realtime_input`` with ``functools.wraps``, as
    a tracing library does, for the block; counts the microphone chunks it is given and
    fails if it sees one of the chunk encoder's probes (they never go on the wire)."""

    def __init__(self) -> None:
        self.chunks = 0
        self.probes = 0

    @contextlib.contextmanager
    def installed(self, on: bool) -> Iterator[None]:
        original = genai_live.AsyncSession.send_realtime_input
        if not on:
            yield
            return

        @functools.wraps(original)
        async def traced(session: Any, **kwargs: Any) -> Any:
            blob = kwargs.get("audio") or kwargs.get("media")
            data = getattr(blob, "data", None)
            if isinstance(data, bytes):
                self.chunks += 1
                self.probes += data in chunk_encoding._PROBES
            return await original(session, **kwargs)

        genai_live.AsyncSession.send_realtime_input = traced  # type: ignore[method-assign]
        try:
            yield
        finally:
            genai_live.AsyncSession.send_realtime_input = original  # type: ignore[method-assign]


def _audio_messages(server: FakeLiveServer) -> int:
    """Client messages carrying audio that the server received, on every connection."""
    count = 0
    for record in server.connections:
        for message in record.client_messages:
            body = message.get("realtime_input") or message.get("realtimeInput") or {}
            if isinstance(body, dict) and (
                body.get("audio") or body.get("media") or body.get("mediaChunks")
            ):
                count += 1
    return count


def _background_job(plan: VoicePlan, runs: list[str]) -> Any:
    """A NON_BLOCKING tool: ADK runs it in the background while the talk goes on."""

    async def job(name: str) -> dict[str, str]:
        """Start a background job."""
        runs.append(name)
        await asyncio.sleep(plan.jobs.get(name, 0.1))
        return {"name": name, "done": "yes"}

    return non_blocking(job)


def _items(text: str) -> list[str]:
    return [part.split('"item": "')[1].split('"')[0] for part in text.split(" and ")]


def _build_agents(plan: VoicePlan, server: FakeLiveServer, tools: list[Any]) -> Any:
    name = GEMINI_3 if plan.gemini3 else NATIVE_AUDIO if plan.native_audio else "gemini-live-fake"
    model = server.gemini(name, vertex=plan.vertex)
    screening = Screening(plan)
    common: dict[str, Any] = {"model": model, "tools": tools}
    if SCREENS:
        common["before_model_callback"] = screening
    if plan.entry == "install":
        adk_live_resume.install(plan.policy)
        cls: Any = LlmAgent
    else:
        cls = ResumableLlmAgent
        common["resume_policy"] = plan.policy
    sub_agents = []
    if plan.transfers:
        sub_agents.append(
            cls(
                name="helper",
                disallow_transfer_to_parent=True,
                disallow_transfer_to_peers=True,
                **common,
            )
        )
    return cls(name="assistant", sub_agents=sub_agents, **common), screening


async def run_plan(plan: VoicePlan) -> None:
    tool_runs: list[str] = []
    runs: list[adk_live_resume.RunStats] = []
    warnings = Warnings()
    tracer = Tracer()
    remove = adk_live_resume.on_run_end(runs.append)
    logging.getLogger("adk_live_resume").addHandler(warnings)
    try:
        with tracer.installed(plan.wrapped_send):
            await _run_plan(plan, tool_runs, runs, warnings, tracer)
    finally:
        logging.getLogger("adk_live_resume").removeHandler(warnings)
        remove()


async def _open_window(
    plan: VoicePlan,
    server: FakeLiveServer,
    screening: Screening,
    live: LiveDriver,
    text: str,
    draws: random.Random,
) -> int:
    """Send ``text`` inside the window the plan names; return the event mark of the send.
    The goAway's time left and the close codes come from ``draws`` (seeded by the plan)."""
    how = plan.windows[text]
    if how == "go_away":
        # The instant the next connection is being opened ahead, or while the
        # move waits for its safe point.
        seen = len(server.connections)
        server.go_away_now(draws.uniform(0.3, 1.5))
        with contextlib.suppress(TimeoutError):
            await server.wait_for(lambda: len(server.connections) > seen, 3, what="next")
        return live.send_text(text)
    if how == "drop":
        # While the dropped connection reconnects.
        await server.close_open(draws.choice(RETRYABLE))
        return live.send_text(text)
    # While ADK's sender screens the turn (for longer than close_timeout), the socket drops.
    mark = live.send_text(text)
    await asyncio.wait_for(screening.began(text).wait(), 20)
    await server.close_open(draws.choice(RETRYABLE))
    return mark


async def _run_plan(
    plan: VoicePlan,
    tool_runs: list[str],
    runs: list[adk_live_resume.RunStats],
    warnings: Warnings,
    tracer: Tracer,
) -> None:

    def lookup(item: str) -> dict[str, str]:
        """Look an item up."""
        tool_runs.append(item)
        return {"item": item, "found": "yes"}

    job_runs: list[str] = []
    tools: list[Any] = [lookup, *([_background_job(plan, job_runs)] if plan.jobs else [])]

    async with FakeLiveServer(
        chunk_delay=0.004,
        time_scale=1.0,
        connection_lifetime=plan.lifetime,
        go_away_lead=min(1.0, plan.lifetime / 2),
        handle_schedule=HandleSchedule(
            every_audio_ms=plan.every_audio_ms, mid_reply=plan.cut_reply == "drops"
        ),
        resume_replays_cut_reply=plan.cut_reply == "replays",
    ) as server:
        watch_wire(server)
        for connection, fault in plan.faults.items():
            server.script(fault, connection=connection)
        if plan.stall is not None:
            server.script(plan.stall, connection=plan.stall_connection)
        agent, screening = _build_agents(plan, server, tools)
        sessions = SlowSessions(plan.session_latency, random.Random(plan.seed))
        config = RunConfig(
            response_modalities=[types.Modality.AUDIO if plan.audio_out else types.Modality.TEXT],
            session_resumption=types.SessionResumptionConfig(),
            context_window_compression=types.ContextWindowCompressionConfig(
                sliding_window=types.SlidingWindow()
            ),
            **({"output_audio_transcription": None} if plan.audio_out else {}),
        )
        if plan.stall is not None:  # (a spoken turn stalls unseen unless the server
            config.input_audio_transcription = types.AudioTranscriptionConfig()  # transcribes)
        maybe_cut: list[str] = []
        #: Background steps whose answer told the job's result instead of "job started".
        told_instead_of_started: list[str] = []
        draws = random.Random(f"voice chaos windows {plan.seed}")  # (the same on every run)
        async with (
            restart_after(server, plan.restart_after),
            await LiveDriver.start(agent, run_config=config, session_service=sessions) as live,
        ):
            mic = Microphone(live)
            try:
                for kind, text in plan.steps:
                    if kind == "speech":
                        mark = len(live.events)
                        await mic.speak(text)
                        answer = await live.answer_after(mark, timeout=20, skip=_answers_no_turn)
                        assert answer == f"echo: {text}", (kind, text, answer)
                    elif kind == "tools":
                        answer = await live.say(text, timeout=20, skip=_answers_no_turn)
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
                    elif kind == "window":
                        mark = await _open_window(plan, server, screening, live, text, draws)
                        answer = await live.answer_after(mark, timeout=20, skip=_answers_no_turn)
                        assert answer == f"echo: {text}", (kind, text, answer)
                    elif kind == "blocked":
                        answer = await live.say(text, timeout=20, skip=_answers_no_turn)
                        assert answer == BLOCKED_REPLY, (kind, text, answer)
                    elif kind == "background":
                        # The model does not wait: the job runs while the talk goes on. A
                        # stall that kept the model from saying so, recovered by a fresh
                        # session after the job ended, has the job's result told instead
                        # (the rebuilt history holds the call and its result).
                        job = text.split('"name": "')[1].split('"')[0]
                        answer = await live.say(
                            text,
                            timeout=20,
                            skip=lambda t, j=job: _answers_no_turn(t) and not _tells_job(t, j),
                        )
                        told_instead = plan.stall is not None and _tells_job(answer, job)
                        assert answer == "job started" or told_instead, (kind, text, answer)
                        if told_instead and answer != "job started":
                            told_instead_of_started.append(text)

                    elif kind == "transfer":
                        mark = live.send_text(text)
                        await live.wait_for_event(
                            lambda e: e.author == "helper" and bool(e.turn_complete),
                            after=mark,
                            timeout=20,
                        )
                    else:
                        answer = await live.say(text, timeout=20, skip=_answers_no_turn)
                        assert answer == f"echo: {text}", (kind, text, answer)
                for name in plan.jobs:  # each job ends (its result told, or at least sent)
                    if not _transfer_after(plan, name):
                        await server.wait_for(
                            lambda n=name: _job_result_sent(server, n), 20, what=f"job {name}"
                        )
                # (after a transfer the child repeats ADK's long "For context" turns: longer.
                # Such an answer can outlast a short connection lifetime on a busy machine,
                # and every connection would cut it off again: the last ones live long.)
                if plan.transfers:
                    server.change_settings(connection_lifetime=60.0, go_away_lead=1.0)
                recall = await live.say("recall", timeout=60, skip=_answers_no_turn)
            finally:
                await mic.stop()
            assert await live.close(timeout=10) is None
        said = [text for kind, text in plan.steps if kind not in ("blocked", "transfer")]
        spoken = [text for kind, text in plan.steps if kind in ("speech", "barge")]
        remembered = recall.removeprefix("you said: ").split(" | ")
        # ADK's own history rule (see _left_out_by_a_late_result) may leave answered turns
        # out of a fresh session's memory; every other turn is remembered.
        left_out = _left_out_by_a_late_result(plan, server, said)
        in_memory = _joined_by_a_fresh_history(
            plan, server, [t for t in said if t not in left_out], spoken
        )
        if plan.transfers:
            # The child's memory is ADK's history for it: the user's typed turns, spoken
            # turns as far as this ADK release stored their transcription (1.x only at some
            # points), and what the other agent did as "For context" turns. Typed turns are
            # checked there; every turn was answered exactly once (below).
            in_memory = [t for t in in_memory if t not in spoken]
            remembered = [t for t in remembered if t in in_memory or t in maybe_cut]
        remembered = _once_if_heard_again_after_a_stall(server, remembered, spoken)
        # Every turn is remembered once, in order; a turn the user talked over at most once.
        why = _memory_story(server, remembered, in_memory, maybe_cut)
        assert [t for t in remembered if t not in maybe_cut] == in_memory, why
        assert all(remembered.count(story) <= 1 for story in maybe_cut), why
        answered = server.user_turns_answered()
        for text in set(said):  # (a step said again is a turn again: answered again)
            count = answered.count(text) - _answers_lost_unread(server, live.events, text)
            # (a fresh session whose history holds the job's call and result answers the
            # history's function response, telling the result: that answers the step too)
            count += told_instead_of_started.count(text)
            assert count == said.count(text), f"{text!r} answered {count}x: {answered}"
        for story in maybe_cut:
            assert answered.count(story) <= 1, f"{story!r} answered twice: {answered}"
        stalled = {t for record in server.connections for t in record.stalled_turns}
        # (a transfer's "For context: ..." turn is context the next agent gets, not a question:
        # nothing answers it, stalled or not)
        for text in {t for t in stalled - set(maybe_cut) if not t.startswith("For context:")}:
            count = answered.count(text) - _answers_lost_unread(server, live.events, text)
            count += told_instead_of_started.count(text)  # (as above)
            times = max(1, said.count(text))  # (a turn said again is answered again)
            assert count == times, f"stalled turn {text!r} answered {count}x: {answered}"
        stalls = sum(run.stalls for run in runs)
        assert stalls <= sum(1 for r in server.connections if r.stalled_turns), runs
        assert plan.stall is not None or stalls == 0, f"a recovery without a stall: {runs}"
        for finished in (False, True):  # no utterance shown twice (its pieces, its whole)
            shown = _transcription_shown(live.events, finished=finished)
            for word in spoken:  # (each word's letters are its own within a seed)
                assert shown.count(word) <= 1, f"{word!r} shown {shown.count(word)}x: {shown}"
        sent = [str(m) for record in server.connections for m in record.client_messages]
        assert not [m for m in sent if FORBIDDEN in m], "blocked content reached the server"
        assert sorted(job_runs) == sorted(plan.jobs), f"jobs ran: {job_runs}"
        for name in plan.jobs:
            told = [e for e in live.events if _says_job_done(e, name)]
            # Told at most once. A user turn may interrupt the telling (the model has the
            # result, it did not finish saying it), and ADK stops the background tools of an
            # agent it transfers from (its own rule): otherwise the result reached the model.
            assert len(told) <= 1, f"the result of job {name} was told {len(told)}x"
            if not told and not _transfer_after(plan, name):
                assert _job_results(server, name), (
                    f"the result of job {name} never reached the model"
                )
        if plan.wrapped_send:
            assert tracer.probes == 0, "the wrapper saw the chunk encoder's probes"
            assert tracer.chunks >= _audio_messages(server), "a chunk went past the wrapper"
        expected_items = sorted(
            i for kind, text in plan.steps if kind == "tools" for i in _items(text)
        )
        assert sorted(tool_runs) == expected_items, f"tool ran for {tool_runs}"
        for record in server.connections:
            assert not record.unknown_tool_response_ids, record
            assert not record.stale_tool_response_ids, record
            assert not record.errors, record.errors
            if record.setup is None and record.ended_at is not None:
                unset = record.ended_at - record.accepted_at
                assert unset <= early_dial.MAX_AGE + 1.0, f"open without setup {unset:.1f} s"
        assert server.duplicate_history_sends() == 0
        if plan.vertex:
            resent = _resent_but_repeats(plan, server)
            assert resent == [], resent
        # Memory held by the run for replay stays within the policy's bounds.
        assert len(runs) >= 1, runs
        assert all(run.peak_replay_audio_ms <= MAX_HELD_AUDIO_MS + CHUNK_MS for run in runs), runs
        # Entries: the audio bound, turns and responses, and the model's text of one answer
        # (chunks of 16 characters; kept until the next handle).
        longest = max((len(a) for r in server.connections for a in r.answers), default=0)
        held = MAX_HELD_MESSAGES + longest // 16 + 3
        assert all(run.peak_replay_messages <= held for run in runs), [
            (r.agent_name, r.peak_replay_messages, held) for r in runs
        ]
        assert all(run.error is None for run in runs), runs
        expected = EXPECTED_WARNINGS + (("stalled on an open connection",) if plan.stall else ())
        unexpected = [m for m in warnings.messages if not any(w in m for w in expected)]
        assert unexpected == [], unexpected
    await asyncio.sleep(0)
    assert our_tasks() == []


def _transcription_shown(events: list[Any], *, finished: bool) -> str:
    """The user's input transcription the client was shown (its pieces, or the finished
    transcriptions), joined, without white space, lower case."""
    text = "".join(
        e.input_transcription.text
        for e in events
        if getattr(e, "input_transcription", None) is not None
        and e.input_transcription.text
        and bool(e.input_transcription.finished) is finished
    )
    return "".join(text.split()).lower()


def _newest_fresh_history(server: FakeLiveServer) -> tuple[Any, list[Any]]:
    """The newest fresh session's record and the history it began with (``(None, [])``
    when no fresh session got one)."""
    fresh = [r for r in server.connections if r.resume_handle is None and r.history_sends]
    if not fresh:
        return None, []
    record = fresh[-1]
    histories = [
        turns
        for message in record.client_messages
        if len(turns := pick_list(pick(message, "clientContent"), "turns")) > 1
    ]
    return record, histories[0] if histories else []


def _joined_by_a_fresh_history(
    plan: VoicePlan, server: FakeLiveServer, turns: list[str], spoken: list[str]
) -> list[str]:
    """``turns`` as the newest fresh session remembers them: adjacent utterances that its
    history holds as one user turn are one turn.

    ADK joins input transcriptions with nothing between them into one user turn when it
    builds a history (``_contents.py``, "aggregate transcription events", on 1.27.2 and
    2.13). Between two utterances stands the model's answer, unless it was audio alone:
    with output transcription off the ADK session stores no text of it (docs/guarantees.md,
    "When an utterance counts as answered"). So only such a plan may see two utterances
    remembered as one; with text answers a join would be a lost answer, and fails."""
    if not plan.audio_out:
        return turns
    _, history = _newest_fresh_history(server)
    held = {pick(part, "text") for turn in history for part in pick_list(turn, "parts")}
    joined = list(turns)
    for start in range(len(joined)):
        end = start
        while end < len(joined) and joined[end] in spoken:
            end += 1
        # The longest run of adjacent utterances from here that the history holds as one.
        for stop in range(end, start + 1, -1):
            if "".join(joined[start:stop]) in held:
                joined[start:stop] = ["".join(joined[start:stop])]
                break
    return joined


def _once_if_heard_again_after_a_stall(
    server: FakeLiveServer, remembered: list[str], spoken: list[str]
) -> list[str]:
    """``remembered`` with an utterance a stall left unanswered counted once where a resumed
    session heard it again right after it.

    A stalled utterance (answered with near-silent audio, or with nothing) is replayed whole
    to the session resumed after the connection ends, a drop that comes before the stall is
    noticed included: the handle may hold the utterance already, and nothing tells (the Gemini
    API's handles do not say what they hold), so the session may remember it twice, and
    answers it once (docs/guarantees.md, stalled sessions)."""
    stalled = {t for record in server.connections for t in record.stalled_turns}
    heard_again = {
        t
        for t in spoken
        if t in stalled and any(r.resumed and t in r.user_turns for r in server.connections)
    }
    kept: list[str] = []
    for text in remembered:
        if not (kept and text == kept[-1] and text in heard_again):
            kept.append(text)
    return kept


def _memory_story(
    server: FakeLiveServer, remembered: list[str], expected: list[str], maybe_cut: list[str]
) -> str:
    """What a failed memory check needs: the memory, what was expected, and for each connection
    how it began (resumed or fresh, with history) and which user turns it heard and answered."""
    lines = [f"memory {remembered}", f"expected {expected} (maybe cut: {maybe_cut})"]
    for r in server.connections:
        began = "resumed" if r.resumed else ("refused handle" if r.resume_handle else "fresh")
        lines.append(
            f"  connection {r.index} {began}, history sends {r.history_sends}, ended by "
            f"{r.ended_by} {r.close_code}: heard {r.user_turns}, answered {r.answered_user_turns}"
        )
    return "\n".join(lines)


def _left_out_by_a_late_result(
    plan: VoicePlan, server: FakeLiveServer, said: list[str]
) -> list[str]:
    """The turns ADK's history rule left out of the memory of the newest fresh session.

    ADK builds the history of a session whose newest event is a background job's late result
    by moving the result next to its call and leaving out what came between (documented in
    docs/guarantees.md, "Dead handle": ADK's history, not the loop's; the ADK session keeps
    them). So when the newest fresh session's history ends with a job's result, the turns
    said after that job's step that an earlier connection answered and that history lacks
    are not in its memory. Nothing else is exempt."""
    record, turns = _newest_fresh_history(server)
    if not turns:
        return []
    last = turns[-1]
    if len(turns) > 1 and [pick(p, "text") for p in pick_list(last, "parts")] == [SPOKEN_ANSWER]:
        last = turns[-2]  # (the loop's closing turn for an answer ADK's history lacks)
    results = [pick(part, "functionResponse") for part in pick_list(last, "parts")]
    if not results or any(r is None for r in results):
        return []
    jobs = [n for n in plan.jobs if any(f"'{n}'" in str(r) or f'"{n}"' in str(r) for r in results)]
    if not jobs:
        return []
    start = min(n for n, (_, text) in enumerate(plan.steps) if any(f'"{j}"' in text for j in jobs))
    after = [text for _, text in plan.steps[start + 1 :]]
    earlier = [
        t for r in server.connections if r.index < record.index for t in r.answered_user_turns
    ]
    in_history = [pick(part, "text") for turn in turns for part in pick_list(turn, "parts")]
    return [t for t in said if t in after and t in earlier and t not in in_history]


def _resent_but_repeats(plan: VoicePlan, server: FakeLiveServer) -> list[Any]:
    """What the fake names sent again although consumed, but the copies of words the plan
    says twice. A repeat can be the first message of a connection with nothing else to
    replay (ADK's sender screened it while the connection moved; the next one gets it
    first), where the wire cannot tell it from a resend; a resend of a repeated turn is
    answered once more than it was said, which the answer count catches."""
    said = [text for _, text in plan.steps]
    twice = {text for text in said if said.count(text) > 1}

    def words(resent: Any) -> str | None:
        message = server.connections[resent.connection - 1].client_messages[resent.index - 1]
        content = pick(message, "clientContent")
        parts = [p for turn in pick_list(content, "turns") for p in pick_list(turn, "parts")]
        texts = [pick(part, "text") for part in parts] or [
            pick(pick(message, "realtimeInput"), "text")
        ]
        return "".join(t for t in texts if isinstance(t, str)) or None

    return [r for r in server.resent_consumed() if words(r) not in twice]


def _transfer_after(plan: VoicePlan, job: str) -> bool:
    """A transfer comes after the step that started ``job``."""
    kinds = [kind for kind, _ in plan.steps]
    start = next(n for n, (_, text) in enumerate(plan.steps) if f'"{job}"' in text)
    return "transfer" in kinds[start:]


def _job_result_sent(server: FakeLiveServer, name: str) -> bool:
    """The result of the background job ``name`` reached the server: as a tool response, or
    in the history a fresh session began with (ADK's session held it by then)."""
    return bool(_job_results(server, name))


def _job_results(server: FakeLiveServer, name: str) -> list[Any]:
    """Every function response carrying the result of the background job ``name`` that the
    server received, in tool responses and in history sends."""
    in_history = [
        pick(part, "functionResponse")
        for record in server.connections
        for message in record.client_messages
        for turn in pick_list(pick(message, "clientContent"), "turns")
        for part in pick_list(turn, "parts")
    ]
    found = [r for record in server.connections for r in record.tool_responses] + [
        r for r in in_history if r is not None
    ]
    return [r for r in found if f"'{name}'" in str(r) or f'"{name}"' in str(r)]


def _answers_lost_unread(server: FakeLiveServer, events: list[Any], turn: str) -> int:
    """How many of the server's echo answers to ``turn`` never reached the user: given on
    a connection the server then dropped without a close frame (an abort discards what the
    client had not read yet), and missing from what the client received. Such an answer was
    never heard, and a session resumed from a handle older than it does not hold it: the
    model rightly answers the turn again."""
    given = server.user_turns_answered().count(turn)
    aborted = sum(
        record.answered_user_turns.count(turn)
        for record in server.connections
        if record.close_code == 1006
    )
    heard = sum(1 for event in events if _says(event, f"echo: {turn}"))
    if given < 2 or heard == 0:
        return 0
    return max(0, min(given - heard, aborted))


def _answers_no_turn(text: str) -> bool:
    """An answer to no user turn: one telling a background job's result, or the next
    agent's answer to the "For context" turn ADK's history for it ends with after a transfer
    (on time, or later: a fresh session that recovers from that turn's stall answers it
    when the user has moved on)."""
    return text.startswith("job returned") or text.startswith("echo: For context:")


def _says_job_done(event: object, name: str) -> bool:
    """A final event of the model telling the result of the background job ``name``."""
    content = getattr(event, "content", None)
    if getattr(event, "partial", False) or content is None:
        return False
    return _tells_job("".join(p.text or "" for p in content.parts or []), name)


def _tells_job(text: str, name: str) -> bool:
    """Whether ``text`` tells the result of the background job ``name``."""
    return text.startswith("job returned") and f'"name":"{name}"' in text


def _says(event: object, text: str) -> bool:
    """A final (non-partial) event of the model whose text is ``text``."""
    content = getattr(event, "content", None)
    if getattr(event, "partial", False) or content is None:
        return False
    return "".join(p.text or "" for p in content.parts or []) == text


@pytest.fixture(scope="module", autouse=True)
def _cpu_load() -> Iterator[None]:
    """``ADK_LIVE_RESUME_CHAOS_LOAD`` busy processes beside the soak, for its duration."""
    with busy_processes(LOAD):
        yield


def plan_features() -> str:
    """What of the google-adk release the plan generator reads (the golden record's key)."""
    gemini3 = adk_compat.speaks_gemini_3_live(GEMINI_3)
    return f"screens={SCREENS} background={BACKGROUND} gemini3={gemini3}"


#: A known open bug, seen only under CI's load (about 1 run in 4 of the fast suite with six
#: workers; never alone, never with the loop's DEBUG log): the result of a background job
#: whose call went out before a goAway move, whose opening ahead was refused, and whose next
#: connection a fault closed, reaches no connection. Only that symptom of that seed is
#: excused (marked xfail, the run's other checks still fail it); the search so far is in
#: docs/development.md ("Known open bugs").
LOST_BACKGROUND_RESULT = {9: "timed out waiting for job j9-1"}


async def _play(seed: int) -> None:
    plan = make_plan(seed)
    try:
        await run_seed(
            "voice chaos",
            seed,
            plan.describe(),
            run_plan(plan),
            timeout=100,
            replay="ADK_LIVE_RESUME_VOICE_CHAOS_SEED={seed}"
            " python3 scripts/dev.py soak tests/soak/test_voice_chaos.py",
        )
    except AssertionError as error:
        symptom = LOST_BACKGROUND_RESULT.get(seed)
        if symptom is not None and symptom in str(error.__cause__):
            pytest.xfail(f"known open bug, a background result lost: {error.__cause__}")
        raise


@pytest.mark.soak
@pytest.mark.skipif(not SEEDS, reason="ADK_LIVE_RESUME_VOICE_CHAOS_RUNS=0")
@pytest.mark.parametrize("seed", SEEDS or [0], ids=[f"seed_{s}" for s in SEEDS or [0]])
async def test_voice_chaos(seed: int) -> None:
    await _play(seed)


@pytest.mark.parametrize("seed", pinned_params(PINNED))
async def test_voice_chaos_pinned(seed: int) -> None:
    await _play(seed)
