"""Resume gap: from a fault to the first server message on the next connection.

Five drop styles (close 1000, close 1011, abort without a close frame, goAway between turns,
goAway while an answer streams), each measured for four clients in interleaved rounds
(patched, stock, floor, floor (detecting), patched, ...) against the in-process fake server:

* **patched**: a real ``Runner.run_live`` with ``adk_live_resume`` installed, the real
  google-genai SDK, a real TLS websocket on 127.0.0.1;
* **stock**: the same, with the patch uninstalled (stock ADK's own reconnect; google-adk 1.x
  has none: reported as "no reconnect");
* **floor**: a bare ``client.aio.live.connect`` with the handle in ``session_resumption``
  (issue 10's floor: it has no fault to read);
* **floor (detecting)** (``floor_detect``): the best a client built on the bare SDK can do.
  A bare session (no ADK) answers one turn, goes through the same fault as the patched one,
  reads it through ``session.receive()`` and resumes at once: when the receive ends (a drop),
  on goAway with no answer outstanding, or after the answer's turnComplete and the handle
  that follows it; it opens the next connection before it closes the old one.

Both ends of a gap are the fake's own timestamps (``ConnectionRecord``), on the event loop
clock the client shares: a drop starts when the fake acts on the fault (``ended_at``), a goAway
gap when the old connection sent its last message (the goAway itself between turns, the end
of the answer in flight when the client waits for it; the fake's empty
``sessionResumptionUpdate {}``, sent every 0.5-1 s whatever the client does, is not counted),
and every gap ends when the next
connection sends its first message (``setupComplete``). The floor starts when the client
calls ``connect``. Each patched or stock sample is a fresh run: one turn, the fault, the
resume, one more turn (which must be answered), the run closed; each detecting floor sample
a fresh session that does the same.

goAway uses the fake's time scale (a 60 s connection lasts 0.6 s, ``timeLeft`` is 0.2 s) and a
``go_away_margin`` scaled with it (0.05 s), so that a goAway comes every sample. For goAway
mid-answer, a turn whose answer takes about 70 ms is sent 30 ms before the goAway is due;
samples where the goAway did not land in the answer are redone (and counted), and so are
samples whose first turn, before any fault, was not answered within 3 s (a loaded machine:
nothing was measured).

``--rtt-ms N`` puts a :class:`~adk_live_resume.testing.LatencyRelay` between every client
and the servers (N/2 ms each way, the TCP handshake's round trip included): the gap then holds
the round trips a remote server costs, which the in-process fake leaves out (results in
``resume_gap_rtt<N>.json``). ``--drops`` sets the number of rounds.

Goals: patched median at most 1.10x the floor's, patched p99 at most 2x the floor's p99, for
goAway no turn cut (issue 10's), and patched median at most 1.05x the detecting floor's
(issue 36's; stock's beside it). They are reported, never asserted. Reported for
information: where a gap goes, from its start to the next connection's ``accepted_at`` (the
fake's handler starts once the TCP, TLS and websocket handshakes are done) and, for the
detecting floor, to its ``connect`` call.

Both floors connect with the agent's own setup (:func:`agent_setup`: the config the patched
run asks google-genai for, its system instruction and transcription settings), so that every
client's setup costs google-genai the same work.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import sys
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from common import (
    Stats,
    check,
    finite,
    markdown_table,
    output_dirs,
    parser,
    print_report,
    pyplot,
    save_figure,
    wrapped,
    write_result,
)

NAME = "resume_gap"
STYLES = ("close_1000", "close_1011", "abort", "goaway_idle", "goaway_mid_answer")
VARIANTS = ("patched", "stock", "floor", "floor_detect")
CLIENTS = {
    "patched": "patched",
    "stock": "stock",
    "floor": "floor",
    "floor_detect": "floor (detecting)",
}
LABELS = {
    "close_1000": "close 1000",
    "close_1011": "close 1011",
    "abort": "abort (no close frame)",
    "goaway_idle": "goAway between turns",
    "goaway_mid_answer": "goAway mid-answer",
}
FULL_DROPS = 200
QUICK_DROPS = 5
#: goAway server: real seconds per service second; a connection lives 0.6 s, goAway at 0.4 s.
GOAWAY_SCALE = 0.01
GOAWAY_LIFETIME = 60.0
GOAWAY_LEAD = 20.0
#: The patched loop's go_away_margin, scaled like the fake's timeLeft (5 s at scale 0.01).
GO_AWAY_MARGIN = 0.05
#: How long before the goAway is due the mid-answer turn is sent (real seconds).
MID_ANSWER_LEAD_IN = 0.03
#: A user turn whose echo splits into 8 chunks, 10 ms apart: about 70 ms of answer.
LONG_TURN = "please repeat this sentence back to me slowly, word for word, so that it streams"
CHUNK_DELAY = 0.01
MAX_REDOS = 20
STEP_TIMEOUT = 3.0
#: How long to wait for the mid-answer turn's answer after the resume (it takes ~70 ms).
ANSWER_TIMEOUT = 1.0

logger = logging.getLogger("bench.resume_gap")


@dataclass
class Outcome:
    """One sample: a gap in seconds, or why there is none."""

    gap: float | None = None
    #: From the gap's start to the next connection's ``accepted_at`` (the fake's handler
    #: starts once the TCP, TLS and websocket handshakes are done; the rest is the setup).
    to_handshake: float | None = None
    #: From the gap's start to the ``connect`` call (the detecting floor only: detection).
    to_connect: float | None = None
    no_reconnect: bool = False
    #: The client reconnected, but without a handle the server accepted (a fresh session).
    not_resumed: bool = False
    turn_cut: bool = False
    turn_lost: bool = False
    misplaced: bool = False  # goAway did not land where the style wants it: redo
    #: The turn before the fault was not answered within STEP_TIMEOUT (a loaded machine):
    #: nothing was measured, redo.
    unready: bool = False


@dataclass
class Series:
    gaps: list[float] = field(default_factory=list)
    to_handshake: list[float] = field(default_factory=list)
    to_connect: list[float] = field(default_factory=list)
    no_reconnect: int = 0
    not_resumed: int = 0
    turns_cut: int = 0
    turns_lost: int = 0
    redone: int = 0

    def add(self, outcome: Outcome) -> None:
        if outcome.gap is not None:
            self.gaps.append(outcome.gap)
        if outcome.to_handshake is not None:
            self.to_handshake.append(outcome.to_handshake)
        if outcome.to_connect is not None:
            self.to_connect.append(outcome.to_connect)
        self.no_reconnect += outcome.no_reconnect
        self.not_resumed += outcome.not_resumed
        self.turns_cut += outcome.turn_cut
        self.turns_lost += outcome.turn_lost


# ---- the fake's records --------------------------------------------------------------------


def _first_message_of(server: Any, index: int) -> Callable[[], bool]:
    """A predicate: connection ``index`` (0-based) exists and sent its first message, or ended."""

    def ready() -> bool:
        if len(server.connections) <= index:
            return False
        record = server.connections[index]
        return record.first_sent_at is not None or record.finished

    return ready


def _answer_in_flight(messages: list[dict[str, Any]], position: int) -> bool:
    """Whether an answer was being generated when message ``position`` (a goAway) was sent."""
    for message in reversed(messages[:position]):
        content = message.get("serverContent")
        if content is not None:
            # a chunk or generationComplete: the answer is under way
            return not (content.get("turnComplete") or content.get("interrupted"))
        update = message.get("sessionResumptionUpdate")
        if update is not None and update.get("resumable") is False:
            return True  # sent as a generation starts
    return False


def _go_away_gap_start(record: Any) -> float:
    """When the old connection's last message but an empty ``sessionResumptionUpdate {}``
    (``wire_shapes.EMPTY_UPDATE``) was handed to its socket. The fake sends those every 0.5-1 s
    whatever the client does, as the service does, so one may come while the client is
    already connecting again; counted, it moved the gap's start by up to the whole gap (once
    in 60 samples at 20 ms round trips, past the next connection's first message)."""
    from adk_live_resume.testing.wire_shapes import EMPTY_UPDATE

    for message, at in zip(
        reversed(record.server_messages), reversed(record.sent_times), strict=True
    ):
        if message != EMPTY_UPDATE:
            return float(at)
    raise AssertionError("the old connection sent nothing but empty updates")


def _go_away_position(messages: list[dict[str, Any]]) -> int | None:
    return next((i for i, m in enumerate(messages) if "goAway" in m), None)


# ---- one sample ----------------------------------------------------------------------------


@contextlib.contextmanager
def _variant(variant: str) -> Iterator[None]:
    from adk_live_resume import ResumePolicy
    from adk_live_resume.testing import patch_installed, patch_removed

    if variant == "patched":
        policy = ResumePolicy(go_away_margin=GO_AWAY_MARGIN)
        with patch_installed(policy, fast_backoff=False):
            yield
    else:
        with patch_removed():
            yield


async def _end_run(live: Any) -> None:
    if live.ended:
        return
    try:
        await live.close(timeout=1.0)
    except TimeoutError:
        await live.cancel()


async def _client_sample(server: Any, address: Any, style: str, variant: str) -> Outcome:
    """One fresh run of the patched loop or stock ADK through one fault (``address``: the
    server, or the latency relay in front of it)."""
    from google.adk.agents import LlmAgent

    from adk_live_resume.testing import LiveDriver

    first = len(server.connections)
    with _variant(variant):
        agent = LlmAgent(name="bench", model=address.gemini())
        live = await LiveDriver.start(agent)
        try:
            return await _through_fault(server, live, style, first)
        finally:
            await _end_run(live)


async def _through_fault(server: Any, live: Any, style: str, first: int) -> Outcome:
    try:
        await live.say("hello", timeout=STEP_TIMEOUT)
    except TimeoutError:
        return Outcome(unready=True)
    await asyncio.sleep(0.02)  # the handle that follows turnComplete reaches the client
    marks: list[int] = []

    async def send_long_turn() -> None:
        marks.append(live.send_text(LONG_TURN))

    outcome = await _gap_through(server, first, style, send_long_turn)
    if outcome.gap is None:
        return outcome
    if marks:
        outcome.turn_cut = LONG_TURN not in server.connections[first].answered_user_turns
        try:
            answer = await live.answer_after(marks[0], timeout=ANSWER_TIMEOUT)
            outcome.turn_lost = answer != f"echo: {LONG_TURN}"
        except (TimeoutError, AssertionError):
            outcome.turn_lost = True
    try:
        outcome.turn_lost |= await live.say("after", timeout=STEP_TIMEOUT) != "echo: after"
    except (TimeoutError, AssertionError):
        outcome.turn_lost = True
    return outcome


async def _gap_through(
    server: Any, first: int, style: str, send_long_turn: Callable[[], Awaitable[None]]
) -> Outcome:
    """Inject ``style``'s fault into connection ``first`` (0-based, idle after one answered
    turn) and time the client's resume, whatever the client.

    Drops are injected at once; goAway comes on the server's schedule, and for "mid-answer"
    ``send_long_turn`` is awaited ``MID_ANSWER_LEAD_IN`` before it is due. The gap starts at
    the old connection's ``ended_at`` (drops) or its last message's send time (goAway, once
    the client has ended it; :func:`_go_away_gap_start`) and ends at the next connection's
    ``first_sent_at``. Returns the gap, or ``misplaced`` (goAway not where the style wants
    it: redo) or ``no_reconnect``.
    """
    loop = asyncio.get_running_loop()
    old = server.connections[first]
    if style in ("close_1000", "close_1011", "abort"):
        if style == "abort":
            await server.restart()
        else:
            await server.close_open(1000 if style == "close_1000" else 1011)
        assert old.ended_at is not None
        started = old.ended_at
    else:
        due = old.accepted_at + (GOAWAY_LIFETIME - GOAWAY_LEAD) * GOAWAY_SCALE
        if style == "goaway_mid_answer":
            await asyncio.sleep(max(0.0, due - MID_ANSWER_LEAD_IN - loop.time()))
            await send_long_turn()
        try:
            await server.wait_for(lambda: old.finished, STEP_TIMEOUT, what="the old connection")
        except TimeoutError:
            return Outcome(no_reconnect=True)
        position = _go_away_position(old.server_messages)
        if position is None:
            return Outcome(misplaced=True)
        in_flight = _answer_in_flight(old.server_messages, position)
        if in_flight != (style == "goaway_mid_answer"):
            return Outcome(misplaced=True)
        started = _go_away_gap_start(old)
    try:
        await server.wait_for(_first_message_of(server, first + 1), STEP_TIMEOUT, what="resume")
    except TimeoutError:
        return Outcome(no_reconnect=True)
    new = server.connections[first + 1]
    if new.first_sent_at is None:
        return Outcome(no_reconnect=True)
    return Outcome(
        gap=new.first_sent_at - started,
        to_handshake=new.accepted_at - started,
        not_resumed=not new.resumed,
    )


def _bare_config(handle: str | None, setup: Any = None) -> Any:
    """A bare google-genai live config: text answers, resumption on (with ``handle``, if any);
    with ``setup`` (a ``LiveConnectConfig``), that setup with ``handle`` in it instead."""
    from google.genai import types

    resumption = types.SessionResumptionConfig(handle=handle)
    if setup is not None:
        return setup.model_copy(update={"session_resumption": resumption})
    return types.LiveConnectConfig(
        response_modalities=[types.Modality.TEXT], session_resumption=resumption
    )


async def agent_setup(server: Any, address: Any) -> Any:
    """The live config the patched run asks google-genai for (the agent's setup: ADK's system
    instruction, its transcription settings; no handle), taken from one patched sample: the
    floors connect with it, so that every client sends the server the same setup and the
    floors' gaps hold the same google-genai work (its converters) as the runs'."""
    import google.genai.live as genai_live

    seen: list[Any] = []

    def recording(original: Callable[..., Any]) -> Callable[..., Any]:
        def connect(self: Any, **kwargs: Any) -> Any:
            seen.append(kwargs.get("config"))
            return original(self, **kwargs)

        return connect

    with wrapped((genai_live.AsyncLive, "connect", recording)):
        outcome = await _client_sample(server, address, "abort", "patched")
    if outcome.gap is None or not seen or seen[0] is None:
        raise RuntimeError(f"the setup sample did not connect and resume: {outcome}")
    return _bare_config(None, seen[0])


async def _floor_sample(server: Any, client: Any, setup: Any = None) -> Outcome:
    """A bare google-genai connect + setup with a valid handle of this server (``setup``:
    the config it goes in, see :func:`agent_setup`)."""
    config = _bare_config(server.handles_issued()[-1], setup)
    index = len(server.connections)
    started = asyncio.get_running_loop().time()
    async with client.aio.live.connect(model="gemini-live-fake", config=config):
        await server.wait_for(_first_message_of(server, index), STEP_TIMEOUT, what="floor")
    record = server.connections[index]
    if record.first_sent_at is None or not record.resumed:
        return Outcome(no_reconnect=True)
    return Outcome(gap=record.first_sent_at - started, to_handshake=record.accepted_at - started)


@dataclass
class _BareState:
    """What the detecting floor's client has read so far, over all its connections."""

    handle: str | None = None
    #: Turns sent whose turnComplete has not been read yet.
    outstanding: int = 0
    #: No turn outstanding, and a handle was read after the last turnComplete.
    settled: bool = False
    go_away: bool = False
    text: str = ""
    answers: list[str] = field(default_factory=list)


async def _bare_send(session: Any, state: _BareState, text: str) -> None:
    from google.genai import types

    state.outstanding += 1
    state.settled = False
    turn = types.Content(role="user", parts=[types.Part(text=text)])
    await session.send_client_content(turns=turn, turn_complete=True)


async def _bare_read(session: Any, state: _BareState, stop: Callable[[], bool]) -> bool:
    """Read ``session`` through ``session.receive()`` (which stops at each turnComplete) into
    ``state`` until ``stop()`` holds after a message (True) or the connection ends (False)."""
    from google.genai import errors
    from websockets.exceptions import ConnectionClosed

    try:
        while True:
            empty = True
            async for message in session.receive():
                empty = False
                content = message.server_content
                if content is not None:
                    parts = content.model_turn.parts if content.model_turn else None
                    state.text += "".join(part.text or "" for part in parts or ())
                    if content.turn_complete:
                        state.answers.append(state.text)
                        state.text = ""
                        state.outstanding -= 1
                update = message.session_resumption_update
                if update is not None and update.new_handle:
                    state.handle = update.new_handle
                    state.settled = state.outstanding == 0
                state.go_away |= message.go_away is not None
                if stop():
                    return True
            if empty:  # the SDK ended the receive without a message: the connection is over
                return False
    except (errors.APIError, ConnectionClosed):  # google-genai < 1.62 raises the latter
        return False


async def _detecting_floor_sample(
    server: Any, client: Any, style: str, setup: Any = None
) -> Outcome:
    """A bare google-genai session through the same fault as the patched loop, resuming as
    fast as the SDK lets it: at once when the receive ends (a drop) or on goAway with no
    answer outstanding; with one, after its turnComplete and the handle that follows. The
    next connection is opened before the old one is closed."""
    first = len(server.connections)
    state = _BareState()
    stacks = [contextlib.AsyncExitStack()]
    connect_calls: list[float] = []

    async def connect() -> Any:
        stack = stacks[-1]
        connect_calls.append(asyncio.get_running_loop().time())
        config = _bare_config(state.handle, setup)
        return await stack.enter_async_context(
            client.aio.live.connect(model="gemini-live-fake", config=config)
        )

    async def resume(old: Any) -> Any:
        await _bare_read(old, state, lambda: state.go_away and state.settled)
        stacks.append(contextlib.AsyncExitStack())
        new = await connect()
        await stacks[-2].aclose()
        return new

    async def say(session: Any, text: str) -> bool:
        await _bare_send(session, state, text)
        async with asyncio.timeout(STEP_TIMEOUT):
            await _bare_read(session, state, lambda: state.settled)
        return bool(state.answers) and state.answers[-1] == f"echo: {text}"

    reaction: asyncio.Task[Any] | None = None
    try:
        session = await connect()
        try:
            if not await say(session, "hello"):
                return Outcome(turn_lost=True)
        except TimeoutError:
            return Outcome(unready=True)
        reaction = asyncio.create_task(resume(session))
        outcome = await _gap_through(
            server, first, style, lambda: _bare_send(session, state, LONG_TURN)
        )
        if outcome.gap is None:
            return outcome
        async with asyncio.timeout(STEP_TIMEOUT):
            session = await reaction
        first_sent = server.connections[first + 1].first_sent_at
        outcome.to_connect = outcome.gap - (first_sent - connect_calls[1])
        if style == "goaway_mid_answer":
            outcome.turn_cut = LONG_TURN not in server.connections[first].answered_user_turns
            outcome.turn_lost = f"echo: {LONG_TURN}" not in state.answers
        outcome.turn_lost |= not await say(session, "after")
        return outcome
    except TimeoutError:
        return Outcome(no_reconnect=True)
    finally:
        if reaction is not None:
            reaction.cancel()
            await asyncio.gather(reaction, return_exceptions=True)
        for stack in reversed(stacks):
            await stack.aclose()


# ---- the run -------------------------------------------------------------------------------


async def _settle(*servers: Any) -> None:
    """Before every sample, whatever the client: the previous sample's connections are over
    and its garbage collected, so that no sample pays for the one before it."""
    for server in servers:
        await server.wait_for(lambda s=server: s.open_connections() == 0, 5.0, what="idle")
    gc.collect()
    await asyncio.sleep(0.005)


async def measure(drops: int, one_way: float = 0.0) -> dict[str, dict[str, Series]]:
    """Every style and client, ``drops`` interleaved rounds; with ``one_way`` (seconds) every
    client reaches the servers through a :class:`~adk_live_resume.testing.LatencyRelay`."""
    from adk_live_resume.testing import FakeLiveServer, LatencyRelay

    series = {style: {variant: Series() for variant in VARIANTS} for style in STYLES}
    drop_server = FakeLiveServer(chunk_delay=CHUNK_DELAY)
    goaway_server = FakeLiveServer(
        time_scale=GOAWAY_SCALE,
        connection_lifetime=GOAWAY_LIFETIME,
        go_away_lead=GOAWAY_LEAD,
        chunk_delay=CHUNK_DELAY,
    )
    async with contextlib.AsyncExitStack() as stack:
        addresses: dict[int, Any] = {}
        for server in (drop_server, goaway_server):
            await stack.enter_async_context(server)
            addresses[id(server)] = (
                await stack.enter_async_context(LatencyRelay(server, one_way=one_way))
                if one_way
                else server
            )
        clients = {key: address.genai_client() for key, address in addresses.items()}
        setup = await agent_setup(drop_server, addresses[id(drop_server)])
        await _settle(drop_server, goaway_server)
        for round_number in range(drops):
            for style in STYLES:
                server = goaway_server if style.startswith("goaway") else drop_server
                for variant in VARIANTS:
                    entry = series[style][variant]
                    await _settle(drop_server, goaway_server)
                    client = clients[id(server)]
                    if variant == "floor":
                        entry.add(await _floor_sample(server, client, setup))
                        continue
                    if entry.no_reconnect and not entry.gaps:
                        continue  # this ADK does not reconnect from this fault: say so once
                    for _ in range(MAX_REDOS):
                        if variant == "floor_detect":
                            outcome = await _detecting_floor_sample(server, client, style, setup)
                        else:
                            outcome = await _client_sample(
                                server, addresses[id(server)], style, variant
                            )
                        if not (outcome.misplaced or outcome.unready):
                            break
                        entry.redone += 1
                        await _settle(drop_server, goaway_server)
                    entry.add(outcome)
            redone = sum(series[s][v].redone for s in STYLES for v in VARIANTS)
            print(f"[bench] round {round_number + 1}/{drops} done ({redone} redone)", flush=True)
    return series


# ---- reporting -----------------------------------------------------------------------------


def report(series: dict[str, dict[str, Series]]) -> tuple[str, list[str], dict[str, Any]]:
    """Tables (ms), goal verdicts and the JSON payload."""
    rows: list[list[object]] = []
    verdicts: list[str] = []
    payload: dict[str, Any] = {}
    for style in STYLES:
        payload[style] = {}
        for variant in VARIANTS:
            entry = series[style][variant]
            body: dict[str, Any] = {
                "no_reconnect": entry.no_reconnect,
                "not_resumed": entry.not_resumed,
                "turns_cut": entry.turns_cut,
                "turns_lost": entry.turns_lost,
                "redone": entry.redone,
                "gaps_ms": [g * 1000 for g in entry.gaps],
                "to_handshake_ms": [g * 1000 for g in entry.to_handshake],
                "to_connect_ms": [g * 1000 for g in entry.to_connect],
            }
            if entry.gaps:
                stats = Stats.of([g * 1000 for g in entry.gaps])
                body["stats_ms"] = stats
                rows.append(
                    [
                        LABELS[style],
                        CLIENTS[variant],
                        stats.n,
                        stats.median,
                        stats.p90,
                        stats.p99,
                        stats.spread,
                        stats.maximum,
                        _faults(style, entry),
                    ]
                )
            else:
                rows.append(
                    [LABELS[style], CLIENTS[variant], 0, "-", "-", "-", "-", "-", "no reconnect"]
                )
            payload[style][variant] = body
        verdicts.extend(_verdicts(style, series[style]))
    table = markdown_table(
        [
            "style",
            "client",
            "N",
            "median ms",
            "p90 ms",
            "p99 ms",
            "spread (IQR) ms",
            "max ms",
            "notes",
        ],
        rows,
    )
    return table, verdicts, payload


def _faults(style: str, entry: Series) -> str:
    notes = []
    if style == "goaway_mid_answer":
        notes.append(f"{entry.turns_cut} turns cut")
    if entry.turns_lost:
        notes.append(f"{entry.turns_lost} turns lost")
    if entry.no_reconnect:
        notes.append(f"{entry.no_reconnect} no reconnect")
    if entry.not_resumed:
        notes.append(f"{entry.not_resumed} reconnected without resuming")
    return ", ".join(notes) or "-"


def _verdicts(style: str, by_variant: dict[str, Series]) -> list[str]:
    patched, floor = by_variant["patched"], by_variant["floor"]
    if not patched.gaps or not floor.gaps:
        return [f"{LABELS[style]}: no patched or floor samples"]
    mine, base = Stats.of(patched.gaps), Stats.of(floor.gaps)
    median = mine.median / base.median
    p99 = mine.p99 / base.p99
    lines = [
        f"{LABELS[style]}: median {median:.2f}x the floor: goal <= 1.10x: "
        f"{'met' if median <= 1.10 else 'MISSED'}",
        f"{LABELS[style]}: p99 {p99:.2f}x the floor's p99: goal <= 2x: "
        f"{'met' if p99 <= 2.0 else 'MISSED'}",
    ]
    detecting = by_variant["floor_detect"]
    if detecting.gaps:
        stock = by_variant["stock"]
        against = Stats.of(detecting.gaps).median
        versus = f"{Stats.of(stock.gaps).median / against:.2f}x" if stock.gaps else "-"
        against_detecting = mine.median / against
        lines.append(
            f"{LABELS[style]}: median {against_detecting:.2f}x the detecting floor's: goal <= "
            f"1.05x: {'met' if against_detecting <= 1.05 else 'MISSED'} (stock: {versus})"
        )
    accepts = {
        CLIENTS[v]: by_variant[v].to_handshake for v in VARIANTS if by_variant[v].to_handshake
    }
    lines.append(
        f"{LABELS[style]}: info: median ms from the gap's start to the next connection's "
        "handshakes done: "
        + ", ".join(f"{k} {Stats.of(v).median * 1000:.2f}" for k, v in accepts.items())
    )
    if detecting.to_connect:
        lines.append(
            f"{LABELS[style]}: info: detecting floor, median ms from the gap's start to its "
            f"connect call: {Stats.of(detecting.to_connect).median * 1000:.2f}"
        )
    if style.startswith("goaway"):
        cut = patched.turns_cut + patched.turns_lost
        lines.append(
            f"{LABELS[style]}: {cut} turns cut or lost by the patched loop: goal 0: "
            f"{'met' if cut == 0 else 'MISSED'} (stock: {by_variant['stock'].turns_cut} cut, "
            f"{by_variant['stock'].turns_lost} lost)"
        )
    return lines


def plot(series: dict[str, dict[str, Series]], target: Path, title: str) -> None:
    plt = pyplot()
    from matplotlib import ticker

    figure, axes = plt.subplots(1, len(STYLES), figsize=(3.6 * len(STYLES), 4.4), sharey=True)
    for axis, style in zip(axes, STYLES, strict=True):
        data = [[g * 1000 for g in series[style][v].gaps] or [float("nan")] for v in VARIANTS]
        axis.boxplot(data, whis=(1, 99), showfliers=True, flierprops={"markersize": 2})
        names = [CLIENTS[v].replace(" ", "\n") for v in VARIANTS]
        axis.set_xticks(range(1, len(VARIANTS) + 1), names, fontsize=8)
        axis.set_title(LABELS[style], fontsize=9)
        axis.set_yscale("log")
        axis.yaxis.set_major_formatter(ticker.FormatStrFormatter("%g"))
        axis.yaxis.set_minor_formatter(ticker.FormatStrFormatter("%g"))
        axis.grid(axis="y", alpha=0.3)
        for position, variant in enumerate(VARIANTS, start=1):
            if not series[style][variant].gaps:
                axis.text(position, 1, "no\nreconnect", ha="center", fontsize=7)
    axes[0].set_ylabel("gap, fault to first message on the new connection (ms)")
    figure.suptitle(f"{title} (whiskers p1-p99)", fontsize=10)
    save_figure(figure, target)


def main() -> int:
    options = parser(__doc__.splitlines()[0])
    options.add_argument(
        "--rtt-ms",
        type=float,
        default=0.0,
        help="emulated network round trip between every client and the fake server, through"
        " a LatencyRelay on 127.0.0.1 (default 0: direct); results go to"
        " resume_gap_rtt<N>.json",
    )
    options.add_argument(
        "--drops", type=int, help=f"rounds (default {FULL_DROPS}; {QUICK_DROPS} with --quick)"
    )
    args = options.parse_args()
    if args.rtt_ms < 0 or (args.drops is not None and args.drops < 1):
        options.error("--rtt-ms must be >= 0 and --drops >= 1")
    logging.basicConfig(level=logging.ERROR)
    # stock google-adk 1.x logs every drop it does not survive with a traceback at ERROR
    logging.getLogger("google_adk").setLevel(logging.CRITICAL)
    drops = args.drops or (QUICK_DROPS if args.quick else FULL_DROPS)
    name = f"{NAME}_rtt{args.rtt_ms:g}" if args.rtt_ms else NAME
    title = f"Resume gap, {args.rtt_ms:g} ms round trip" if args.rtt_ms else "Resume gap"
    results, plots = output_dirs(args.quick)
    series = asyncio.run(measure(drops, args.rtt_ms / 2000))
    table, verdicts, payload = report(series)
    print_report(f"{title} ({drops} drops per style and client)", table, verdicts)
    write_result(
        results,
        name,
        {"drops": drops, "rtt_ms": args.rtt_ms, "styles": payload, "verdicts": verdicts},
    )
    plot(series, plots / f"{name}.png", title)
    for style in STYLES:
        patched = series[style]["patched"]
        floor = series[style]["floor"]
        detecting = series[style]["floor_detect"]
        check(len(floor.gaps) == drops, f"{style}: the floor did not connect every time")
        check(len(detecting.gaps) == drops, f"{style}: the detecting floor did not always resume")
        check(
            detecting.turns_lost == detecting.turns_cut == detecting.not_resumed == 0,
            f"{style}: the detecting floor lost or cut a turn, or did not resume",
        )
        check(len(patched.gaps) == drops, f"{style}: the patched loop did not always resume")
        check(patched.turns_lost == 0, f"{style}: the patched loop lost a turn")
        check(patched.not_resumed == 0, f"{style}: the patched loop did not resume")
        gaps = [g for variant in VARIANTS for g in series[style][variant].gaps]
        check(finite(*gaps) and all(0 < g < 10 for g in gaps), f"{style}: implausible gaps")
    return 0


if __name__ == "__main__":
    sys.exit(main())
