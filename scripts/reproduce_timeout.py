#!/usr/bin/env python3
"""Reproduce the ~10-minute Gemini Live disconnect, then show adk-live-resume keeping it alive.

The same live conversation runs twice through a real ``Runner.run_live``: first with stock
google-adk (no patch), then with ``adk_live_resume.install()``. The user keeps talking for the
whole run (a turn every interval; spoken turns with ``--audio``), asks for one tool call and,
at the end, asks the model what they said first. The two runs are printed side by side:
connections, reconnects, goAways, turns answered and lost, history sends, and how each ended.

By default the other side is the embedded fake Gemini Live server (TLS websockets on
127.0.0.1, nothing else is contacted) with the real limits: a connection lives 600 s and
``goAway`` comes 60 s before the deadline, after which the server closes with 1011
"Deadline expired". A time scale makes the whole 21-minute conversation take seconds;
``--real-time`` runs it in true time. ``--gemini MODEL`` talks to the real Gemini Live API
instead (needs ``GOOGLE_API_KEY``), through a fault proxy on 127.0.0.1
(:class:`adk_live_resume.testing.FaultProxy`) that sends every connection a goAway
``--proxy-go-away`` seconds after it opened (30 by default, then the close at its deadline, as
the service does): the service's goAway and our move, rehearsed in seconds. ``--no-proxy`` waits for
the service's own goAway instead (the real 10+ minutes per run).

Drop styles (fake server only):
  service the way the real service fails (the default): the socket dies (no close frame)
          while the model is answering a turn, after the server said ``resumable: false``,
          and every connection gets its goAway and deadline close (1011) as time goes on.
          Stock google-adk fails on every supported release: 1.x never reconnects, and 2.x
          erased its good handle on ``resumable: false``, so it cannot resume
  goaway  the turn-aligned timeline of the original bug report: goAway, then the deadline
          close 1011, both between turns (stock 2.x survives this one)
  abrupt  mid-conversation, the server drops every socket without a close frame (1006)
  1011    mid-conversation, the server closes with 1011 and no goAway first
  midturn only the drop while the model answers, without the connection timeline mattering

Exit status:
  0  the patched run kept the whole conversation (every turn answered correctly, the tool
     call answered, the first turn remembered, a clean end, no history sent twice);
     whatever stock ADK did is reported, not judged: stock google-adk 1.x fails as in the
     bug report, 2.x reconnects by itself on goAway and the output says so
  1  the patched run lost something (or crashed)
  2  bad arguments, or --gemini without GOOGLE_API_KEY
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import sys
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from adk_live_resume import ReconnectInfo, ResumePolicy
    from adk_live_resume.testing import FakeLiveServer
    from adk_live_resume.testing.driver import LiveDriver

DropStyle = Literal["service", "goaway", "abrupt", "1011", "midturn"]
#: Drop styles whose drop happens while the model answers a turn.
WHILE_ANSWERING: tuple[DropStyle, ...] = ("service", "midturn")
TurnKind = Literal["first", "talk", "tool", "memory"]
Check = Literal["exact", "contains", "nonempty"]

#: Figures of the default fake-server conversation: 19 turns, one every 70 service seconds.
DEFAULT_FAKE_DURATION = 1260.0
DEFAULT_FAKE_TURNS = 19
#: A real-Gemini conversation: 25 turns over 12 minutes (the connection ends at about 10).
DEFAULT_GEMINI_DURATION = 720.0
DEFAULT_GEMINI_TURNS = 25
#: With the fault proxy (the default with --gemini): a goAway every 30 s, a 2-minute talk.
DEFAULT_PROXY_GO_AWAY = 30.0
DEFAULT_PROXIED_DURATION = 120.0
DEFAULT_PROXIED_TURNS = 10
DEFAULT_TIME_SCALE = 0.01

FIRST_SENTENCE = "hello, my name is Ada"
TOOL_CITY = "Paris"


# ---- settings and the conversation plan ------------------------------------------------------


@dataclass(frozen=True)
class Settings:
    """Everything that shapes one reproduction. Durations are *service* seconds on the fake
    server (multiplied by ``time_scale`` to get real seconds) and real seconds on Gemini."""

    #: ``None``: the embedded fake server; otherwise the real Gemini Live model name.
    gemini_model: str | None = None
    time_scale: float = DEFAULT_TIME_SCALE
    connection_lifetime: float = 600.0
    go_away_lead: float = 60.0
    drop: DropStyle = "service"
    turns: int = DEFAULT_FAKE_TURNS
    #: Seconds from the first user turn to the last (the memory check).
    duration: float = DEFAULT_FAKE_DURATION
    #: ``abrupt`` / ``1011``: drop right after this turn (0-based) was answered;
    #: ``midturn``: drop while the turn after it is being answered.
    drop_after_turn: int | None = None
    audio: bool = False
    #: Real seconds to wait for each answer before counting the turn as lost.
    answer_timeout: float = 5.0
    #: Real seconds between the chunks of every fake answer.
    chunk_delay: float = 0.02
    #: --gemini only: a fault proxy sends each connection a goAway this many seconds after it
    #: opened; None: no proxy (the service's own goAway, after about 10 minutes).
    proxy_go_away: float | None = None

    def __post_init__(self) -> None:
        problems = []
        if self.turns < 3:
            problems.append("--turns must be at least 3 (first turn, tool call, memory check)")
        if self.duration <= 0:
            problems.append("--duration must be > 0")
        if self.time_scale <= 0:
            problems.append("--time-scale must be > 0")
        if self.connection_lifetime <= 0:
            problems.append("--lifetime must be > 0")
        if not 0 <= self.go_away_lead < self.connection_lifetime:
            problems.append("--go-away-lead must be >= 0 and below --lifetime")
        if self.answer_timeout <= 0:
            problems.append("--answer-timeout must be > 0")
        if self.drop_after_turn is not None and not 0 <= self.drop_after_turn <= self.turns - 2:
            problems.append(f"--drop-after-turn must be between 1 and {self.turns - 1}")
        if self.proxy_go_away is not None and self.proxy_go_away <= 0:
            problems.append("--proxy-go-away must be > 0")
        if problems:
            raise ValueError("; ".join(problems))

    @property
    def fake(self) -> bool:
        return self.gemini_model is None

    @property
    def scale(self) -> float:
        """Real seconds per conversation second (1 on the real API)."""
        return self.time_scale if self.fake else 1.0

    @property
    def interval(self) -> float:
        return self.duration / (self.turns - 1)

    @property
    def drop_turn(self) -> int | None:
        """The turn after which a drop happens, or while the next one is answered for
        ``service`` / ``midturn`` (None for goaway)."""
        if self.drop == "goaway" or not self.fake:
            return None
        if self.drop_after_turn is not None:
            return self.drop_after_turn
        return max(0, min(self.turns - 2, self.turns // 3))

    def real(self, seconds: float) -> float:
        return seconds * self.scale


@dataclass(frozen=True)
class PlannedTurn:
    """One user turn: what is said, when, and what counts as the right answer."""

    index: int
    at: float  # conversation seconds from the start
    kind: TurnKind
    text: str
    check: Check
    expected: tuple[str, ...] = ()

    def accepts(self, answer: str | None) -> bool:
        if not answer:
            return False
        if self.check == "exact":
            return answer == self.expected[0]
        if self.check == "contains":
            low = answer.lower()
            return all(piece.lower() in low for piece in self.expected)
        return True


def tool_turn_index(settings: Settings) -> int:
    """The tool call comes right after the first disruption (goAway or drop), if there is one
    before the memory check; otherwise in the middle of the conversation."""
    last = settings.turns - 1
    if settings.fake:
        drop_turn = settings.drop_turn
        if drop_turn is not None:
            candidate = drop_turn + 1
        else:
            go_away_at = settings.connection_lifetime - settings.go_away_lead
            candidate = next(
                (i for i in range(settings.turns) if i * settings.interval > go_away_at), last
            )
        if 0 < candidate < last:
            return candidate
    return max(1, last // 2)


def plan_conversation(settings: Settings) -> list[PlannedTurn]:
    """The user's turns, in order; the first is remembered, the last asks about it."""
    tool_at = tool_turn_index(settings)
    last = settings.turns - 1
    turns: list[PlannedTurn] = []
    for index in range(settings.turns):
        at = index * settings.interval
        if settings.fake:
            turns.append(_fake_turn(index, at, last, tool_at))
        else:
            turns.append(_gemini_turn(index, at, last, tool_at))
    return turns


def _fake_turn(index: int, at: float, last: int, tool_at: int) -> PlannedTurn:
    if index == 0:
        return PlannedTurn(
            index, at, "first", FIRST_SENTENCE, "exact", (f"echo: {FIRST_SENTENCE}",)
        )
    if index == last:
        return PlannedTurn(
            index,
            at,
            "memory",
            "what did I say first?",
            "exact",
            (f"you first said: {FIRST_SENTENCE}",),
        )
    if index == tool_at:
        text = f'call get_weather {{"city": "{TOOL_CITY}"}}'
        return PlannedTurn(
            index, at, "tool", text, "contains", ("get_weather returned", TOOL_CITY, "clear")
        )
    text = f"turn {index + 1}: still talking at {clock(at)}"
    return PlannedTurn(index, at, "talk", text, "exact", (f"echo: {text}",))


def _gemini_turn(index: int, at: float, last: int, tool_at: int) -> PlannedTurn:
    if index == 0:
        text = (
            "Hi, my name is Ada and my favourite fruit is the pineapple. "
            "Please keep every answer to one short sentence."
        )
        return PlannedTurn(index, at, "first", text, "nonempty")
    if index == last:
        text = "What was the very first thing I told you in this conversation? Say my name."
        return PlannedTurn(index, at, "memory", text, "contains", ("ada",))
    if index == tool_at:
        text = f"What is the weather in {TOOL_CITY} right now? Use the get_weather tool."
        return PlannedTurn(index, at, "tool", text, "nonempty")
    return PlannedTurn(
        index,
        at,
        "talk",
        f"Message {index + 1}: one short fact about the number {index + 1}.",
        "nonempty",
    )


def length(seconds: float) -> str:
    """``1260`` -> ``"21-minute"``, ``90`` -> ``"90-second"``."""
    if seconds < 120:
        return f"{seconds:g}-second"
    return f"{seconds / 60:.0f}-minute"


def clock(seconds: float) -> str:
    """``75.0`` -> ``"01:15"``."""
    whole = max(0, int(seconds))
    return f"{whole // 60:02d}:{whole % 60:02d}"


# ---- results ---------------------------------------------------------------------------------


@dataclass
class TurnResult:
    index: int
    at: float
    kind: TurnKind
    text: str
    sent: bool
    answer: str | None
    ok: bool
    connection: int | None


@dataclass
class RunResult:
    """What one run of the conversation did, as figures."""

    label: Literal["stock", "patched"]
    adk_version: str
    turns: list[TurnResult] = field(default_factory=list)
    connections: int = 0
    resumed_connections: int | None = None
    go_aways: int | None = None
    deadline_closes: int | None = None
    history_sends: int | None = None
    duplicate_history_sends: int | None = None
    handles_issued: int | None = None
    tool_invocations: int = 0
    reconnect_events: list[dict[str, Any]] = field(default_factory=list)
    ended: str = ""
    error_type: str | None = None
    error_code: int | None = None
    #: ``run_live`` ended before the last turn was answered.
    ended_early: bool = False
    real_seconds: float = 0.0

    @property
    def reconnects(self) -> int:
        return max(0, self.connections - 1)

    @property
    def turns_planned(self) -> int:
        return len(self.turns)

    @property
    def turns_answered(self) -> int:
        return sum(1 for t in self.turns if t.ok)

    @property
    def turns_lost(self) -> int:
        return self.turns_planned - self.turns_answered

    def _outcome(self, kind: TurnKind) -> str:
        turn = next((t for t in self.turns if t.kind == kind), None)
        if turn is None:
            return "-"
        if turn.ok:
            return "ok"
        if not turn.sent or turn.answer is None:
            return "lost"
        return "wrong"

    @property
    def tool_call(self) -> str:
        outcome = self._outcome("tool")
        if outcome == "ok" and self.tool_invocations == 0:
            return "wrong"
        return outcome

    @property
    def memory_check(self) -> str:
        return self._outcome("memory")

    @property
    def kept_conversation(self) -> bool:
        """Every turn answered right, the tool ran, the run ended cleanly, no history twice."""
        return (
            self.turns_lost == 0
            and self.tool_call == "ok"
            and self.memory_check == "ok"
            and self.error_type is None
            and not self.duplicate_history_sends
        )

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data.update(
            reconnects=self.reconnects,
            turns_planned=self.turns_planned,
            turns_answered=self.turns_answered,
            turns_lost=self.turns_lost,
            tool_call=self.tool_call,
            memory_check=self.memory_check,
            kept_conversation=self.kept_conversation,
        )
        return data


@dataclass
class Comparison:
    settings: Settings
    stock: RunResult
    patched: RunResult
    genai_version: str

    @property
    def stock_failed(self) -> bool:
        return not self.stock.kept_conversation

    @property
    def stock_failed_as_reported(self) -> bool:
        """Stock died with the close the server sent and never opened another connection."""
        expected = {"service": 1006, "goaway": 1011, "abrupt": 1006, "1011": 1011, "midturn": 1006}[
            self.settings.drop
        ]
        code_matches = self.stock.error_code == expected if self.settings.fake else True
        return (
            self.stock_failed
            and self.stock.error_type is not None
            and code_matches
            and self.stock.connections == 1
            and self.stock.turns_lost > 0
        )

    @property
    def exit_code(self) -> int:
        return 0 if self.patched.kept_conversation else 1

    @property
    def disrupted(self) -> bool:
        """Whether the server ended or asked to end a connection during the conversation."""
        if not self.settings.fake or self.settings.drop_turn is not None:
            return True
        return any(run.go_aways or run.deadline_closes for run in (self.stock, self.patched))

    def stock_verdict(self) -> str:
        stock, n = self.stock, self.stock.turns_planned
        version = f"stock google-adk {stock.adk_version}"
        if not self.disrupted:
            return (
                "no connection ended during this conversation (it lasted "
                f"{self.settings.duration:g} s; connections live "
                f"{self.settings.connection_lifetime:g} s), so there was nothing to reproduce: "
                "make --duration longer than --lifetime."
            )
        handles = ""
        if stock.handles_issued:
            handles = f", although the server had issued {stock.handles_issued} resumption handles"
        if self.stock_failed_as_reported:
            how = "as in the bug report"
            if self.settings.drop in WHILE_ANSWERING:
                how = "as on the real service (the socket died while the model answered)"
            return (
                f"{version} failed {how}: the session died ({stock.ended}) "
                f"after {stock.turns_answered} of {n} turns, and ADK never "
                f"reconnected{handles}."
            )
        if self.stock_failed:
            return (
                f"{version} failed, though not exactly as in the bug report: "
                f"{stock.turns_answered} of {n} turns answered over {stock.connections} "
                f"connection(s), tool call {stock.tool_call}, memory check "
                f"{stock.memory_check}, history sent twice "
                f"{_figure(stock.duplicate_history_sends)} time(s); it ended: {stock.ended}."
            )
        return (
            f"{version} survived this timeline: it reconnected {stock.reconnects} time(s) by "
            f"itself and answered all {n} turns. Between turns, 2.x resumes; the real service "
            "also drops and sends goAway while the model answers, which the default scenario "
            "shows (`python3 scripts/dev.py demo`, without --drop); the rest (unbounded "
            "retries, the message in flight lost) is in tests/e2e/test_stock_adk.py."
        )

    def patched_verdict(self) -> str:
        patched, n = self.patched, self.patched.turns_planned
        if patched.kept_conversation:
            return (
                f"adk_live_resume kept the conversation: {n}/{n} turns answered across "
                f"{patched.connections} connection(s), the tool call answered, the first turn "
                "remembered, no history sent twice."
            )
        return (
            f"adk_live_resume LOST part of the conversation: {patched.turns_answered}/{n} "
            f"turns answered, tool call {patched.tool_call}, memory check "
            f"{patched.memory_check}, history sent twice "
            f"{_figure(patched.duplicate_history_sends)} time(s); it ended: {patched.ended}."
        )

    def to_json(self) -> dict[str, Any]:
        settings = dataclasses.asdict(self.settings)
        settings["backend"] = "fake" if self.settings.fake else "gemini"
        return {
            "adk_version": self.patched.adk_version,
            "genai_version": self.genai_version,
            "settings": settings,
            "stock": self.stock.to_json(),
            "patched": self.patched.to_json(),
            "stock_failed": self.stock_failed,
            "stock_failed_as_reported": self.stock_failed_as_reported,
            "patched_kept_conversation": self.patched.kept_conversation,
            "exit_code": self.exit_code,
        }


def _figure(value: int | None) -> str:
    return "n/a" if value is None else str(value)


# ---- progress ----------------------------------------------------------------------------------


class Progress:
    """Live lines on a stream (stderr by default): one per turn, reconnect and server event."""

    def __init__(self, stream: IO[str] | None, scale: float = 1.0) -> None:
        self.stream = stream
        self.scale = scale
        self._started = time.monotonic()

    def restart_clock(self) -> None:
        self._started = time.monotonic()

    def line(self, who: str, text: str) -> None:
        if self.stream is None:
            return
        real = time.monotonic() - self._started
        conversation = clock(real / self.scale)
        print(f"[{real:6.1f}s {conversation}] {who:<7} {text}", file=self.stream, flush=True)


def _short(text: str | None, limit: int = 44) -> str:
    if text is None:
        return "-"
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


# ---- one run -----------------------------------------------------------------------------------


def _describe_error(error: BaseException | None) -> tuple[str, str | None, int | None]:
    if error is None:
        return "closed normally", None, None
    code = getattr(error, "code", None)
    text = " ".join(str(error).split())
    if len(text) > 160:
        text = text[:157] + "..."
    return (
        f"{type(error).__name__}: {text}",
        type(error).__name__,
        code if isinstance(code, int) else None,
    )


@dataclass
class _ClientCounters:
    """What the client side can count on the real API (no server records there)."""

    connections: int = 0
    history_sends: int = 0


def _counting_gemini(model_name: str, counters: _ClientCounters) -> Any:
    """An ADK ``Gemini`` that counts the connections it opens and the history it sends."""
    from google.adk.models.google_llm import Gemini

    class CountingGemini(Gemini):  # type: ignore[misc]
        @contextlib.asynccontextmanager
        async def connect(self, llm_request: Any) -> Any:
            async with super().connect(llm_request) as connection:
                counters.connections += 1
                original = connection.send_history

                async def send_history(history: Any) -> None:
                    if history:
                        counters.history_sends += 1
                    await original(history)

                with contextlib.suppress(AttributeError):
                    connection.send_history = send_history  # type: ignore[method-assign]
                yield connection

    return CountingGemini(model=model_name)


@contextlib.asynccontextmanager
async def _fault_proxy(settings: Settings) -> Any:
    """With ``settings.proxy_go_away``: a fault proxy in front of the endpoint the environment
    points at, and the environment pointed at it for the block (restored after). Yields the
    proxy, or None without one."""
    if settings.proxy_go_away is None:
        yield None
        return
    from adk_live_resume.fault_proxy.client_config import environ_set
    from adk_live_resume.fault_proxy.inject_spec import InjectSchedule
    from adk_live_resume.fault_proxy.proxy import FaultProxy
    from adk_live_resume.launch.inject_launch import upstream_from_environment

    upstream = upstream_from_environment(os.environ)
    schedule = InjectSchedule(
        goaway_every=settings.proxy_go_away,
        goaway_time_left=min(10.0, settings.proxy_go_away / 2),
    )
    proxy = FaultProxy(
        upstream.url, upstream_cert=os.environ.get("SSL_CERT_FILE"), schedule=schedule
    )
    async with proxy:
        pointed = {upstream.variable: proxy.base_url, "SSL_CERT_FILE": proxy.ca_bundle()}
        with environ_set(pointed):
            yield proxy


def _run_config(settings: Settings) -> Any:
    from google.adk.agents.run_config import RunConfig
    from google.genai import types

    kwargs: dict[str, Any] = {
        "response_modalities": [types.Modality.AUDIO if settings.audio else types.Modality.TEXT],
        "session_resumption": types.SessionResumptionConfig(),
    }
    if settings.audio:
        kwargs["output_audio_transcription"] = types.AudioTranscriptionConfig()
        kwargs["input_audio_transcription"] = types.AudioTranscriptionConfig()
    if not settings.fake:
        # Long sessions on the real API need a sliding context window (15-minute audio limit).
        kwargs["context_window_compression"] = types.ContextWindowCompressionConfig(
            sliding_window=types.SlidingWindow()
        )
    return RunConfig(**kwargs)


def _send_turn(live: LiveDriver, turn: PlannedTurn, settings: Settings) -> int:
    """Send one user turn (spoken on the fake server with ``--audio``); return the mark."""
    if settings.audio and settings.fake:
        from adk_live_resume.testing import silence_pcm, speech_pcm

        mark = len(live.events)
        pcm = speech_pcm(turn.text, seconds=0.3) + silence_pcm(0.6)  # the VAD ends it
        step = 3200  # 100 ms of 16 kHz 16-bit mono
        for start in range(0, len(pcm), step):
            live.send_audio(pcm[start : start + step])
        return mark
    return live.send_text(turn.text)


class ServerWatch:
    """Prints what the fake server does: connections opened and closed, goAways."""

    _ENDED = {
        "deadline": "closed by the server at its deadline",
        "client": "closed by the client",
        "restart": "dropped by the server (no close frame)",
        "fault": "closed by the server (fault)",
        "refused": "refused by the server",
        "flap": "closed by the server (flap)",
        "shutdown": "ended by the server shutting down",
    }

    def __init__(self, server: FakeLiveServer, progress: Progress, who: str) -> None:
        self.server = server
        self.progress = progress
        self.who = who
        self._open: set[int] = set()
        self._go_away: set[int] = set()
        self._closed: set[int] = set()

    def scan(self) -> None:
        """Print every server event not printed yet (called often, and before other lines)."""
        for record in list(self.server.connections):
            n = record.index
            if n not in self._open and (record.setup is not None or record.finished):
                self._open.add(n)
                how = "resumed from a handle" if record.resumed else "fresh session"
                if record.resume_handle is not None and not record.resumed:
                    how = "handle refused"
                self.progress.line(self.who, f"server: connection {n} opened ({how})")
            if record.go_away_sent and n not in self._go_away:
                self._go_away.add(n)
                self.progress.line(self.who, f"server: goAway sent on connection {n}")
            if record.finished and n not in self._closed:
                self._closed.add(n)
                ended = self._ENDED.get(record.ended_by or "", str(record.ended_by))
                self.progress.line(
                    self.who, f"server: connection {n} {ended}, code {record.close_code}"
                )

    async def run(self) -> None:
        while True:
            self.scan()
            await asyncio.sleep(0.02)


@contextlib.contextmanager
def _patch_state(patched: bool, policy: ResumePolicy | None) -> Iterator[None]:
    """Stock (uninstalled) or patched (installed) for the block; the prior state comes back."""
    import adk_live_resume

    previous = adk_live_resume.installed_policy()
    adk_live_resume.uninstall()
    if patched:
        adk_live_resume.install(policy)
    try:
        yield
    finally:
        adk_live_resume.uninstall()
        if previous is not None:
            adk_live_resume.install(previous)


async def run_once(
    settings: Settings,
    *,
    patched: bool,
    progress: Progress | None = None,
    policy: ResumePolicy | None = None,
) -> RunResult:
    """Run the conversation once, with stock ADK or with the patch installed."""
    import adk_live_resume
    from adk_live_resume.compat import adk_compat

    progress = progress or Progress(None)
    label: Literal["stock", "patched"] = "patched" if patched else "stock"
    result = RunResult(label, adk_compat.adk_version())
    watches: list[ServerWatch] = []

    def on_reconnect(info: ReconnectInfo) -> None:
        for watch in watches:
            watch.scan()  # the server's side of the story first (goAway, close, open)
        result.reconnect_events.append(
            {
                "reason": info.reason,
                "attempt": info.attempt,
                "gap_ms": round(info.gap_ms, 1),
                "state_restored": info.state_restored,
                "cause": info.cause,
                "connection_number": info.connection_number,
            }
        )
        restored = "state restored" if info.state_restored else "FRESH session"
        progress.line(
            label,
            f"reconnected: {info.reason}, attempt {info.attempt}, gap {info.gap_ms:.0f} ms, "
            f"{restored}, now on connection {info.connection_number} (cause: {info.cause})",
        )

    remove = adk_live_resume.on_reconnect(on_reconnect) if patched else None
    started = time.monotonic()
    progress.restart_clock()
    try:
        with _patch_state(patched, policy):
            if settings.fake:
                from adk_live_resume.testing import FakeLiveServer, WireShapes

                server = FakeLiveServer(
                    time_scale=settings.time_scale,
                    connection_lifetime=settings.connection_lifetime,
                    go_away_lead=settings.go_away_lead,
                    chunk_delay=settings.chunk_delay,
                    # the bug report's timeline: its 1011 close, and no empty resumption
                    # updates (the fake's recorded default; stock ADK 2.x loses its handle
                    # to them, which is another story than the bug report's)
                    deadline_close_code=1011,
                    wire_shapes=WireShapes(empty_updates=None),
                )
                async with server:
                    watch = ServerWatch(server, progress, label)
                    watches.append(watch)
                    watcher = asyncio.create_task(watch.run())
                    try:
                        await _converse(settings, server.gemini(), result, progress, watch)
                        await server.wait_for(
                            lambda: all(c.finished for c in server.connections), 5.0
                        )
                    finally:
                        watcher.cancel()
                        with contextlib.suppress(asyncio.CancelledError):
                            await watcher
                        watch.scan()
                    records = server.connections
                    result.connections = len(records)
                    result.resumed_connections = sum(1 for c in records if c.resumed)
                    result.go_aways = sum(1 for c in records if c.go_away_sent)
                    result.deadline_closes = sum(1 for c in records if c.ended_by == "deadline")
                    result.history_sends = server.history_sends()
                    result.duplicate_history_sends = server.duplicate_history_sends()
                    result.handles_issued = len(server.handles_issued())
            else:
                counters = _ClientCounters()
                async with _fault_proxy(settings) as proxy:
                    model = _counting_gemini(settings.gemini_model or "", counters)
                    await _converse(settings, model, result, progress, None)
                result.connections = counters.connections
                result.history_sends = counters.history_sends
                if proxy is not None:
                    records = proxy.connections
                    result.go_aways = sum(
                        1 for c in records if any("go_away" in f for f in c.faults)
                    )
                    result.resumed_connections = sum(1 for c in records if c.resumed)
    finally:
        if remove is not None:
            remove()
    result.real_seconds = round(time.monotonic() - started, 2)
    return result


async def _converse(
    settings: Settings,
    model: Any,
    result: RunResult,
    progress: Progress,
    watch: ServerWatch | None,
) -> None:
    """Talk through ``plan_conversation(settings)``; fill ``result.turns`` and the ending."""
    from google.adk.agents import LlmAgent

    from adk_live_resume.testing.driver import LiveDriver, LiveRunEnded

    who = result.label

    def get_weather(city: str) -> dict[str, str]:
        """Return the current weather for a city."""
        result.tool_invocations += 1
        progress.line(who, f"tool: get_weather(city={city!r}) ran")
        return {"city": city, "sky": "clear", "temperature_c": "21"}

    agent = LlmAgent(
        name="assistant",
        model=model,
        instruction="You are a helpful assistant. Answer in one short sentence.",
        tools=[get_weather],
    )
    plan = plan_conversation(settings)
    live = await LiveDriver.start(
        agent, run_config=_run_config(settings), app_name="reproduce_timeout"
    )
    server = watch.server if watch is not None else None
    loop = asyncio.get_running_loop()
    try:
        if server is not None:
            # The conversation clock starts with the first connection (the server's lifetime
            # clock starts there too), so turns land where the plan says relative to goAway.
            await server.wait_for_connections(1, timeout=30)
        t0 = loop.time()
        progress.restart_clock()
        for turn in plan:
            if not live.ended:  # a dead run loses the rest at once; no need to wait for it
                await asyncio.sleep(max(0.0, t0 + settings.real(turn.at) - loop.time()))
            if watch is not None:
                watch.scan()
            sent = not live.ended
            answer: str | None = None
            if sent:
                mark = _send_turn(live, turn, settings)
                if (
                    server is not None
                    and settings.drop in WHILE_ANSWERING
                    and settings.drop_turn is not None
                    and turn.index == settings.drop_turn + 1
                ):
                    await _drop_while_answering(server, who, progress)
                with contextlib.suppress(TimeoutError, LiveRunEnded):
                    answer = await live.answer_after(mark, timeout=settings.answer_timeout)
            ok = turn.accepts(answer)
            if turn.kind == "tool" and not settings.fake:
                ok = ok and result.tool_invocations > 0
            connection = len(server.connections) if server is not None else None
            result.turns.append(
                TurnResult(turn.index, turn.at, turn.kind, turn.text, sent, answer, ok, connection)
            )
            status = "ok" if ok else ("LOST (run_live had ended)" if not sent else "LOST")
            if sent and answer is not None and not ok:
                status = "WRONG"
            where = f" (connection {connection})" if connection is not None else ""
            progress.line(
                who,
                f"turn {turn.index + 1}/{len(plan)}{where}: {_short(turn.text)} -> "
                f"{_short(answer)} {status}",
            )
            if (
                server is not None
                and settings.drop_turn == turn.index
                and settings.drop not in WHILE_ANSWERING
                and not live.ended
            ):
                if settings.drop == "abrupt":
                    progress.line(who, "drop: the server drops every socket, no close frame")
                    await server.restart()
                else:
                    progress.line(who, "drop: the server closes every socket with 1011")
                    await server.close_open(1011, "Internal error encountered.")
        result.ended_early = live.ended
        if live.ended:
            error = live.error
        else:
            error = await live.close(timeout=max(10.0, settings.answer_timeout))
    finally:
        if not live.ended:
            await live.cancel()
    result.ended, result.error_type, result.error_code = _describe_error(error)
    progress.line(who, f"run ended: {result.ended}")


async def _drop_while_answering(server: FakeLiveServer, who: str, progress: Any) -> None:
    """Drop every socket once the model started answering (after ``resumable: false``)."""
    record = server.connections[-1]
    start = len(record.server_messages)

    def answering() -> bool:
        return (
            any(
                message.get("sessionResumptionUpdate", {}).get("resumable") is False
                for message in record.server_messages[start:]
            )
            or record.finished
        )

    with contextlib.suppress(TimeoutError):
        await server.wait_for(answering, 5.0, what="the model to start answering")
    progress.line(who, "drop: the sockets die while the model answers (resumable: false)")
    await server.restart()


async def reproduce(
    settings: Settings,
    *,
    progress: Progress | None = None,
    policy: ResumePolicy | None = None,
) -> Comparison:
    """Run the conversation with stock ADK, then patched; return both runs' figures."""
    import google.genai

    progress = progress or Progress(None)
    stock = await run_once(settings, patched=False, progress=progress)
    patched = await run_once(settings, patched=True, progress=progress, policy=policy)
    return Comparison(settings, stock, patched, str(google.genai.__version__))


# ---- output ------------------------------------------------------------------------------------


def describe_settings(settings: Settings, adk_version: str) -> list[str]:
    """The header: what is run against what, and how long it will take."""
    lines = [f"adk-live-resume reproduction on google-adk {adk_version}"]
    span = length(settings.duration)
    if settings.fake:
        lines.append(
            "backend: the embedded fake Gemini Live server (TLS websockets on 127.0.0.1), "
            f"connection lifetime {settings.connection_lifetime:g} s, goAway "
            f"{settings.go_away_lead:g} s before the deadline"
        )
        if settings.time_scale == 1:
            lines.append(
                f"real time: this {span} conversation takes {settings.duration:g} s per run"
            )
        else:
            lines.append(
                f"time scale {settings.time_scale:g}: 1 conversation second = "
                f"{settings.time_scale * 1000:g} ms, so this {span} conversation "
                f"takes about {settings.real(settings.duration):.0f} s per run "
                "(--real-time for true time)"
            )
    else:
        lines.append(
            f"backend: the real Gemini Live API, model {settings.gemini_model}; the "
            f"{span} conversation takes real time (twice)"
        )
        if settings.proxy_go_away is not None:
            lines.append(
                f"fault proxy on 127.0.0.1: a goAway {settings.proxy_go_away:g} s after each "
                "connection opened, then the close at its deadline (--no-proxy: the service's own)"
            )
    mode = "spoken (synthetic speech)" if settings.audio and settings.fake else "text"
    if settings.audio and not settings.fake:
        mode = "text in, audio out"
    lines.append(
        f"conversation: {settings.turns} {mode} turns, one every {settings.interval:.0f} s; tool "
        f"call at turn {tool_turn_index(settings) + 1}; memory check at turn {settings.turns}"
    )
    drop = {
        "service": "while turn {m} is being answered the socket dies (no close frame); every "
        "connection gets goAway and its deadline close as on the real service",
        "goaway": "goAway, then the server closes with 1011 at the deadline (turn-aligned)",
        "abrupt": "after turn {n} the server drops every socket without a close frame",
        "1011": "after turn {n} the server closes every socket with 1011 (no goAway)",
        "midturn": "while turn {m} is being answered the sockets die (no close frame)",
    }[settings.drop]
    drop_turn = settings.drop_turn
    if settings.fake:
        lines.append("drop: " + drop.format(n=(drop_turn or 0) + 1, m=(drop_turn or 0) + 2))
    return lines


def format_table(comparison: Comparison) -> str:
    """The two runs side by side."""
    stock, patched = comparison.stock, comparison.patched
    n = stock.turns_planned
    rows: list[tuple[str, str, str]] = [
        ("connections", str(stock.connections), str(patched.connections)),
        ("reconnects", str(stock.reconnects), str(patched.reconnects)),
        (
            "resumed from a handle",
            _figure(stock.resumed_connections),
            _figure(patched.resumed_connections),
        ),
        ("goAways sent", _figure(stock.go_aways), _figure(patched.go_aways)),
        (
            "closed at the deadline",
            _figure(stock.deadline_closes),
            _figure(patched.deadline_closes),
        ),
        ("turns answered", f"{stock.turns_answered}/{n}", f"{patched.turns_answered}/{n}"),
        ("turns lost", str(stock.turns_lost), str(patched.turns_lost)),
        ("tool call", stock.tool_call, patched.tool_call),
        ("memory check", stock.memory_check, patched.memory_check),
        ("history sends", _figure(stock.history_sends), _figure(patched.history_sends)),
        (
            "history sent twice",
            _figure(stock.duplicate_history_sends),
            _figure(patched.duplicate_history_sends),
        ),
        ("run time (real)", f"{stock.real_seconds:.1f} s", f"{patched.real_seconds:.1f} s"),
    ]
    width = max(len(r[0]) for r in rows)
    head = f"{'':<{width}}  {'stock ADK':>16}  {'adk_live_resume':>16}"
    lines = [head, "-" * len(head)]
    lines += [f"{name:<{width}}  {a:>16}  {b:>16}" for name, a, b in rows]
    lines.append("")
    lines.append(f"stock ended:   {stock.ended}")
    lines.append(f"patched ended: {patched.ended}")
    lines.append("")
    lines.append(comparison.stock_verdict())
    lines.append(comparison.patched_verdict())
    lines.append(f"exit status {comparison.exit_code}")
    return "\n".join(lines)


# ---- command line --------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="reproduce_timeout.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    backend = parser.add_argument_group("backend")
    backend.add_argument(
        "--gemini",
        metavar="MODEL",
        help="run against the real Gemini Live API with this model (needs GOOGLE_API_KEY), "
        "through a fault proxy that brings the goAway within seconds (see --proxy-go-away)",
    )
    backend.add_argument(
        "--proxy-go-away",
        type=float,
        metavar="SECONDS",
        help=f"with --gemini: the fault proxy's goAway this many seconds after each connection "
        f"opened (default {DEFAULT_PROXY_GO_AWAY:g})",
    )
    backend.add_argument(
        "--no-proxy",
        action="store_true",
        help="with --gemini: no fault proxy; wait for the service's own goAway (the real 10+ "
        "minutes per run)",
    )
    timing = parser.add_argument_group("fake server timing")
    scale = timing.add_mutually_exclusive_group()
    scale.add_argument(
        "--time-scale",
        type=float,
        default=DEFAULT_TIME_SCALE,
        help=f"real seconds per conversation second (default {DEFAULT_TIME_SCALE}: a 600 s "
        "connection lasts 6 s)",
    )
    scale.add_argument(
        "--real-time", action="store_true", help="time scale 1: the true 10+ minutes per run"
    )
    timing.add_argument(
        "--lifetime", type=float, default=600.0, help="connection lifetime in seconds (600)"
    )
    timing.add_argument(
        "--go-away-lead", type=float, default=60.0, help="goAway this many seconds before (60)"
    )
    timing.add_argument(
        "--drop",
        choices=["service", "goaway", "abrupt", "1011", "midturn"],
        default="service",
        help="how connections die: service (default: a drop while the model answers, then "
        "goAway and the deadline of each connection, as on the real service), goaway (the "
        "turn-aligned timeline: goAway, then close 1011 at the deadline, between turns), "
        "abrupt (socket dropped mid-conversation, no close frame), 1011 (close 1011 "
        "mid-conversation, no goAway), midturn (only the drop while the model answers)",
    )
    timing.add_argument(
        "--drop-after-turn",
        type=int,
        metavar="N",
        help="abrupt/1011: drop right after turn N; service/midturn: while turn N+1 is answered "
        "(1-based; default a third of the way)",
    )
    talk = parser.add_argument_group("conversation")
    talk.add_argument(
        "--turns",
        type=int,
        help=f"user turns (default {DEFAULT_FAKE_TURNS}; {DEFAULT_GEMINI_TURNS} with --gemini)",
    )
    talk.add_argument(
        "--duration",
        type=float,
        help="seconds from the first turn to the last (default "
        f"{DEFAULT_FAKE_DURATION:g}; {DEFAULT_GEMINI_DURATION:g} with --gemini)",
    )
    talk.add_argument(
        "--audio",
        action="store_true",
        help="speak the turns (synthetic speech the fake transcribes) and ask for audio "
        "answers; with --gemini: text in, audio out (needed by native-audio models)",
    )
    talk.add_argument(
        "--answer-timeout",
        type=float,
        help="real seconds to wait for each answer (default 5; 60 with --gemini)",
    )
    out = parser.add_argument_group("output")
    out.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    out.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    out.add_argument("--verbose", action="store_true", help="show ADK's and our log lines")
    return parser


def settings_from_args(args: argparse.Namespace) -> Settings:
    """Build :class:`Settings` from parsed arguments (``ValueError`` when inconsistent)."""
    gemini = args.gemini
    if gemini is not None and args.drop not in ("service", "goaway"):
        raise ValueError(
            "--drop abrupt/1011/midturn needs the fake server; the real API drops by itself"
        )
    if gemini is None and (args.no_proxy or args.proxy_go_away is not None):
        raise ValueError("--proxy-go-away and --no-proxy go with --gemini")
    if args.no_proxy and args.proxy_go_away is not None:
        raise ValueError("--proxy-go-away and --no-proxy exclude each other")
    proxied = gemini is not None and not args.no_proxy
    proxy_go_away = (args.proxy_go_away or DEFAULT_PROXY_GO_AWAY) if proxied else None
    turns = args.turns
    if turns is None:
        turns = DEFAULT_GEMINI_TURNS if gemini else DEFAULT_FAKE_TURNS
        turns = DEFAULT_PROXIED_TURNS if proxied else turns
    duration = args.duration
    if duration is None:
        duration = DEFAULT_GEMINI_DURATION if gemini else DEFAULT_FAKE_DURATION
        duration = DEFAULT_PROXIED_DURATION if proxied else duration
    timeout = args.answer_timeout
    if timeout is None:
        timeout = 60.0 if gemini else 5.0
    drop_after = None if args.drop_after_turn is None else args.drop_after_turn - 1
    return Settings(
        gemini_model=gemini,
        time_scale=1.0 if args.real_time else args.time_scale,
        connection_lifetime=args.lifetime,
        go_away_lead=args.go_away_lead,
        drop=args.drop,
        turns=turns,
        duration=duration,
        drop_after_turn=drop_after,
        audio=args.audio,
        answer_timeout=timeout,
        proxy_go_away=proxy_go_away,
    )


def _quiet_logs(verbose: bool) -> None:
    warnings.filterwarnings("ignore", message="Pydantic serializer warnings")
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    if verbose:
        logging.basicConfig(level=logging.INFO, stream=sys.stderr)
        return
    # Stock ADK logs a traceback when its live run dies; the table says what happened.
    logging.getLogger("google_adk").setLevel(logging.CRITICAL)
    logging.getLogger("adk_live_resume").setLevel(logging.WARNING)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        settings = settings_from_args(args)
    except ValueError as error:
        parser.error(str(error))
    if not settings.fake and not os.environ.get("GOOGLE_API_KEY"):
        print(
            "reproduce_timeout.py: --gemini needs a Gemini API key in GOOGLE_API_KEY "
            "(nothing was sent anywhere). Run without --gemini to use the embedded fake server.",
            file=sys.stderr,
        )
        return 2
    _quiet_logs(args.verbose)
    from adk_live_resume.compat import adk_compat

    header = describe_settings(settings, adk_compat.adk_version())
    header_stream = sys.stderr if args.json else sys.stdout
    if not (args.json and args.quiet):
        print("\n".join(header), file=header_stream, flush=True)
    progress = Progress(None if args.quiet else sys.stderr, settings.scale)
    comparison = asyncio.run(reproduce(settings, progress=progress))
    if args.json:
        print(json.dumps(comparison.to_json(), indent=None, default=str))
    else:
        print()
        print(format_table(comparison))
    return comparison.exit_code


if __name__ == "__main__":
    sys.exit(main())
