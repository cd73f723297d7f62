"""The fake server's connection parts, one at a time and without sockets.

The pure parts (the setup's choices, the session's state, the ledger of client messages, the
session's clocks' rules) are called directly, with Hypothesis where a rule holds for any
sequence. The parts that send (the wire, the handle issuer, the generation and the turn
taking) run on an in-memory socket that records what would go out; their behaviour over a
real TLS websocket is what tests/test_fake_server*.py check.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from adk_live_resume.testing import silence_pcm
from adk_live_resume.testing.armed_faults import ArmedFaults
from adk_live_resume.testing.connection import SessionParts
from adk_live_resume.testing.connection_clocks import (
    lifetime_timing,
    session_ended,
)
from adk_live_resume.testing.connection_wire import ConnectionWire, _ConnectionEnded
from adk_live_resume.testing.families import (
    GEMINI_2_LIVE,
    GEMINI_3_1_LIVE,
    GEMINI_3_8_LIVE,
    NATIVE_AUDIO_2_5,
)
from adk_live_resume.testing.generation import Generation
from adk_live_resume.testing.handle_issuing import ConsumedLedger, HandleIssuer
from adk_live_resume.testing.handles import HandleSchedule, HandleStore, SessionInfo, fingerprint
from adk_live_resume.testing.model import Turn
from adk_live_resume.testing.protocol import JsonDict, b64encode
from adk_live_resume.testing.records import ConnectionRecord
from adk_live_resume.testing.session_state import SessionState
from adk_live_resume.testing.settings import ServerSettings, SharedState
from adk_live_resume.testing.setup_choices import SetupChoices, read_setup
from adk_live_resume.testing.turn_taking import TurnTaking

pytestmark = pytest.mark.timeout(20)

# -- the setup's choices (pure) ------------------------------------------------------------


def test_a_setup_that_says_nothing_gets_the_defaults() -> None:
    assert read_setup({"model": "models/gemini-live-fake"}) == SetupChoices()


def test_read_setup_reads_modality_family_tools_transcriptions_and_compression() -> None:
    choices = read_setup(
        {
            "model": "projects/p/locations/l/publishers/google/models/gemini-3.8-live",
            "generation_config": {"response_modalities": ["audio"]},
            "tools": [
                {
                    "functionDeclarations": [
                        {"name": "lookup"},
                        {"name": "wait", "behavior": "BLOCKING"},
                    ]
                }
            ],
            "inputAudioTranscription": {},
            "output_audio_transcription": {},
            "contextWindowCompression": {"slidingWindow": {}},
            "historyConfig": {"initialHistoryInClientContent": True},
            "realtimeInputConfig": {"automaticActivityDetection": {"disabled": True}},
        }
    )
    assert choices.audio_out and choices.modality == "AUDIO"
    assert choices.family == GEMINI_3_8_LIVE and choices.gemini3
    assert choices.functions == {"lookup", "wait"}
    assert choices.non_blocking == {"lookup"}  # 3.8: non-blocking unless declared BLOCKING
    assert choices.input_transcription and choices.output_transcription
    assert choices.compression and choices.history_in_client_content
    assert choices.vad.disabled


@pytest.mark.parametrize(
    ("model", "family", "non_blocking"),
    [
        ("gemini-live-fake", GEMINI_2_LIVE, {"job"}),
        ("gemini-2.5-flash-native-audio", NATIVE_AUDIO_2_5, {"job"}),
        ("gemini-3.1-flash-live-preview", GEMINI_3_1_LIVE, set()),  # NON_BLOCKING ignored
    ],
)
def test_non_blocking_follows_the_family(model: str, family: Any, non_blocking: set[str]) -> None:
    tools = [{"functionDeclarations": [{"name": "job", "behavior": "NON_BLOCKING"}]}]
    choices = read_setup({"model": model, "tools": tools, "responseModalities": ["TEXT"]})
    assert choices.family == family
    assert choices.non_blocking == non_blocking
    assert not choices.audio_out


@pytest.mark.parametrize(
    ("resumption", "enabled", "handle", "transparent"),
    [
        (None, True, None, False),  # sessionResumption: null asks for handles
        ({}, True, None, False),
        ({"handle": ""}, True, None, False),
        ({"handle": "h-1", "transparent": True}, True, "h-1", True),
        ("h-1", False, None, False),  # not an object: ignored
    ],
)
def test_read_setup_reads_session_resumption(
    resumption: Any, enabled: bool, handle: str | None, transparent: bool
) -> None:
    choices = read_setup({"model": "m", "sessionResumption": resumption})
    assert (choices.resumption, choices.resume_handle, choices.transparent) == (
        enabled,
        handle,
        transparent,
    )
    assert not read_setup({"model": "m"}).resumption


# -- the session's state (pure) ------------------------------------------------------------

INFO = SessionInfo("s-1", 100.0, audio=False)


def _snapshot(state: SessionState) -> Any:
    return state.snapshot(
        now=5.0, connection=2, last_consumed_index=None, consumed=collections.Counter()
    )


def test_a_restored_session_has_exactly_its_snapshot() -> None:
    state = SessionState(INFO, audio=False)
    state.remember(Turn("user", "hi"), Turn("model", "echo: hi"))
    state.open_call("fc-1", "job")
    snapshot = _snapshot(state)
    restored = SessionState.restored(snapshot, audio=False, open_calls=True)
    assert restored.turns == state.turns
    assert (restored.id, restored.started_at, restored.audio) == ("s-1", 100.0, False)
    assert _snapshot(restored).background == (("fc-1", "job"),)
    assert restored.last_user_text() == "hi"
    assert SessionState(INFO, audio=False).last_user_text() == ""


def test_a_session_restored_with_connection_scoped_tool_ids_has_no_open_call() -> None:
    state = SessionState(INFO, audio=False)
    state.remember(Turn("user", "hi"))
    state.open_call("fc-1", "job")
    restored = SessionState.restored(_snapshot(state), audio=False, open_calls=False)
    assert restored.turns == state.turns
    assert _snapshot(restored).background == ()
    assert restored.close_call("fc-1") is None


def test_audio_sticks_to_a_session() -> None:
    state = SessionState(INFO, audio=False)
    assert not _snapshot(state).session.audio
    state.heard_audio()
    assert _snapshot(state).session.audio
    # resumed with a TEXT setup, it still carried audio
    assert SessionState.restored(_snapshot(state), audio=False, open_calls=False).audio
    # a fresh AUDIO setup carries audio from the start
    assert SessionState(INFO, audio=True).audio


_CALL_IDS = st.sampled_from(["a", "b", "c"])
_CALL_OPS = st.lists(
    st.tuples(st.sampled_from(["open", "close", "telling", "told"]), _CALL_IDS), max_size=30
)


@given(_CALL_OPS)
def test_snapshots_hold_every_call_started_or_waiting_to_be_told(
    ops: list[tuple[str, str]],
) -> None:
    """Against a model: open until the response, then open again while it waits to be told."""
    state = SessionState(INFO, audio=False)
    started: dict[str, str] = {}
    waiting: dict[str, str] = {}
    for op, call_id in ops:
        name = f"fn-{call_id}"
        if op == "open":
            state.open_call(call_id, name)
            started[call_id] = name
        elif op == "close":
            assert state.close_call(call_id) == started.pop(call_id, None)
        elif op == "telling":
            state.telling(call_id, name)
            waiting[call_id] = name
        else:
            state.told(call_id)
            waiting.pop(call_id, None)
        assert dict(_snapshot(state).background) == {**started, **waiting}


# -- the ledger of client messages (pure) --------------------------------------------------


def _text(text: str) -> JsonDict:
    return {"realtimeInput": {"text": text}}


_MESSAGES = st.lists(
    st.one_of(
        st.none(),  # unparsed
        st.sampled_from(["hi", "bye", "again"]).map(_text),
        st.just({"realtimeInput": {"activityStart": {}}}),  # no identity
    ),
    max_size=20,
)


@given(_MESSAGES, st.lists(st.integers(min_value=0, max_value=20), max_size=10), _MESSAGES)
def test_consumed_through_counts_the_restored_plus_the_messages_through_the_index(
    messages: list[JsonDict | None], queries: list[int], earlier: list[JsonDict | None]
) -> None:
    """Whatever order the indices come in (a held utterance moves the index back)."""
    restored = collections.Counter(m for x in earlier if x and (m := fingerprint(x)))
    ledger = ConsumedLedger()
    ledger.restore(restored)
    for message in messages:
        ledger.receive(message)
    marks = [fingerprint(m) if m is not None else None for m in messages]
    for index in (min(q, len(messages)) for q in queries):
        expected = restored + collections.Counter(m for m in marks[:index] if m is not None)
        assert ledger.consumed_through(index) == expected


def test_a_message_the_snapshot_consumed_is_named_once_per_consumed_copy() -> None:
    ledger = ConsumedLedger()
    hi = fingerprint(_text("hi"))
    assert hi is not None
    ledger.restore(collections.Counter({hi: 1}))
    assert ledger.receive(_text("hi")) == "text"
    assert ledger.receive(_text("hi")) is None  # the second copy was not consumed
    assert ledger.receive(None) is None
    assert ledger.received == 3 and ledger.handled == 0
    ledger.mark_handled()
    assert ledger.handled == 3


def test_a_repeat_after_the_replay_is_not_named_a_resend() -> None:
    """The user types the same words again once the replay is over: new input, not named."""
    ledger = ConsumedLedger()
    hi, bye = fingerprint(_text("hi")), fingerprint(_text("bye"))
    assert hi is not None and bye is not None
    ledger.restore(collections.Counter({hi: 2, bye: 1}))
    assert ledger.receive(_text("hi")) == "text"  # the replay resent a consumed copy
    assert ledger.receive(_text("again")) is None  # the snapshot lacks it: the replay is over
    assert ledger.receive(_text("hi")) is None  # said again: the user's repeat
    assert ledger.receive(_text("bye")) is None


def test_a_message_without_identity_ends_the_replay() -> None:
    ledger = ConsumedLedger()
    hi = fingerprint(_text("hi"))
    assert hi is not None
    ledger.restore(collections.Counter({hi: 1}))
    assert ledger.receive({"realtimeInput": {"activityStart": {}}}) is None
    assert ledger.receive(_text("hi")) is None


def test_a_fresh_session_names_nothing() -> None:
    ledger = ConsumedLedger()
    assert ledger.receive(_text("hi")) is None


def test_a_replayed_repeat_the_snapshot_lacks_is_not_named() -> None:
    """The snapshot consumed "hi" once, and the session received it again after the
    snapshot's point: the replay's "hi" is that second copy, and the replay is over."""
    ledger = ConsumedLedger()
    hi = fingerprint(_text("hi"))
    assert hi is not None
    session_received = collections.Counter({hi: 2})
    ledger.restore(collections.Counter({hi: 1}), received=session_received)
    ledger.track(session_received)
    assert ledger.receive(_text("hi")) is None
    assert ledger.receive(_text("hi")) is None
    assert session_received[hi] == 4  # the session's count goes on


@given(_MESSAGES, _MESSAGES, _MESSAGES)
def test_named_messages_are_the_consumed_copies_before_the_first_message_not_consumed(
    messages: list[JsonDict | None], earlier: list[JsonDict | None], later: list[JsonDict | None]
) -> None:
    """``earlier``: what the snapshot consumed; ``later``: what the session received after
    its point (copies the snapshot lacks)."""
    restored = collections.Counter(m for x in earlier if x and (m := fingerprint(x)))
    lacked = collections.Counter(m for x in later if x and (m := fingerprint(x)))
    ledger = ConsumedLedger()
    ledger.restore(restored, received=restored + lacked)
    named = [n for n, m in enumerate(messages) if ledger.receive(m) is not None]
    left, expected = collections.Counter(restored), []
    for n, message in enumerate(messages):
        mark = fingerprint(message) if message is not None else None
        if mark is None or left[mark] <= 0 or lacked[mark] > 0:
            break
        left[mark] -= 1
        expected.append(n)
    assert named == expected


def test_last_consumed_stops_before_held_audio() -> None:
    ledger = ConsumedLedger()
    for _ in range(5):
        ledger.receive(None)
    ledger.mark_handled()
    assert ledger.last_consumed(None) == 5
    assert ledger.last_consumed(3) == 2  # audio held since message 3: not in the state
    assert ledger.last_consumed(None, handled=6) == 6  # a message whose content is in


# -- the session's clocks' rules (pure) ----------------------------------------------------


def _ended(**overrides: Any) -> bool:
    arguments: dict[str, Any] = dict(
        now=200.0, ended=(), cap=None, limit=None, compression=False, audio=False
    )
    arguments.update(overrides)
    return session_ended(INFO, **arguments)


def test_a_session_ends_by_name_by_its_cap_or_by_its_audio_limit() -> None:
    assert not _ended()
    assert _ended(ended={"s-1"})
    assert _ended(cap=100.0)  # age 100 s: the cap is reached at its exact second
    assert not _ended(cap=100.5)
    assert _ended(cap=100.0, compression=True)  # the cap holds whatever the compression
    assert not _ended(limit=50.0)  # the limit applies to sessions that carried audio only
    assert _ended(limit=50.0, audio=True)
    assert not _ended(limit=50.0, audio=True, compression=True)
    assert not _ended(limit=150.0, audio=True)


def test_the_go_away_lead_never_exceeds_the_lifetime() -> None:
    assert lifetime_timing(ServerSettings(connection_lifetime=600, go_away_lead=60)) == (540, 60)
    assert lifetime_timing(ServerSettings(connection_lifetime=30, go_away_lead=60)) == (0, 30)
    scaled = ServerSettings(connection_lifetime=600, go_away_lead=60, time_scale=0.01)
    assert lifetime_timing(scaled) == pytest.approx((5.4, 0.6))


# -- the parts that send, on an in-memory socket ---------------------------------------------


class _Transport:
    def __init__(self) -> None:
        self.aborted = False

    def abort(self) -> None:
        self.aborted = True


class _Socket:
    """What ConnectionWire uses of a websocket; records what would go out."""

    def __init__(self) -> None:
        self.sent: list[JsonDict] = []
        self.closed: tuple[int, str] | None = None
        self.transport = _Transport()
        self.close_code: int | None = None
        self.close_reason = ""

    async def send(self, data: str) -> None:
        self.sent.append(json.loads(data))

    async def close(self, code: int, reason: str) -> None:
        self.closed = (code, reason)


def _wire(path: str = "/ws/x") -> tuple[ConnectionWire, _Socket]:
    socket = _Socket()
    record = ConnectionRecord(index=1)
    record.path = path
    return ConnectionWire(cast(ServerConnection, socket), record), socket


async def test_the_wire_records_sends_and_refuses_them_once_ending() -> None:
    async with asyncio.timeout(5):
        wire, socket = _wire()
        await wire.send({"a": 1}, {"b": 2})
        assert socket.sent == [{"a": 1}, {"b": 2}] == wire.record.server_messages
        assert wire.record.first_sent_at is not None
        wire.terminate("fault", code=1001, reason="bye")
        wire.terminate("deadline", code=1011)  # the first call wins
        with pytest.raises(_ConnectionEnded):
            await wire.send({"c": 3})
        await wire.finish()
        assert (wire.record.ended_by, wire.record.close_code) == ("fault", 1001)
        assert socket.closed == (1001, "bye")
        assert socket.sent == [{"a": 1}, {"b": 2}]


async def test_a_message_the_closed_socket_refused_is_not_in_the_record() -> None:
    async with asyncio.timeout(5):
        wire, socket = _wire()

        async def closed(data: str) -> None:
            raise ConnectionClosed(None, None)

        socket.send = closed  # type: ignore[method-assign]
        with pytest.raises(_ConnectionEnded):
            await wire.send({"a": 1})
        assert wire.record.server_messages == []
        assert wire.record.first_sent_at is None


@pytest.mark.parametrize("code", [1005, 1006, 1015])
async def test_the_wire_drops_tcp_for_codes_no_close_frame_carries(code: int) -> None:
    async with asyncio.timeout(5):
        wire, socket = _wire()
        wire.terminate("fault", code=code)
        await wire.finish()
        assert socket.transport.aborted and socket.closed is None
        assert wire.record.close_code == 1006


async def test_ending_cancels_every_task_but_the_caller_and_finish_awaits_them() -> None:
    async with asyncio.timeout(5):
        wire, _ = _wire()
        forever = wire.spawn(asyncio.sleep(3600))
        went_on: list[bool] = []

        async def ends_and_goes_on() -> None:
            wire.terminate("fault", abort=True)
            await asyncio.sleep(0)  # not cancelled by its own terminate
            went_on.append(True)

        async def fails() -> None:
            raise ValueError("a bug")

        wire.spawn(fails())
        await asyncio.sleep(0)
        await asyncio.wait([wire.spawn(ends_and_goes_on())])
        await wire.finish()
        assert went_on == [True]
        assert forever.cancelled()
        assert wire.record.errors == ["ValueError('a bug')"]
        wire.mark_finished()
        assert wire.record.finished


async def test_a_connection_nobody_ended_was_closed_by_the_client() -> None:
    async with asyncio.timeout(5):
        wire, socket = _wire()
        socket.close_code = 1000
        await wire.finish()
        assert (wire.record.ended_by, wire.record.close_code) == ("client", 1000)


async def _until(done: Callable[[], bool]) -> None:
    """Poll ``done`` on the event loop (the caller's ``asyncio.timeout`` bounds the wait)."""
    for _ in itertools.count():
        if done():
            return
        await asyncio.sleep(0.005)


@dataclass
class _Parts:
    wire: ConnectionWire
    socket: _Socket
    session: SessionState
    ledger: ConsumedLedger
    handles: HandleIssuer
    generation: Generation
    turns: TurnTaking
    shared: SharedState

    def sent(self, key: str) -> list[JsonDict]:
        return [m for m in self.socket.sent if key in m or key in m.get("serverContent", {})]

    async def receive(self, message: JsonDict) -> None:
        """As the connection's message loop does."""
        self.ledger.receive(message)
        await self.handles.send_late()
        await self.turns.handle(message)
        self.ledger.mark_handled()

    async def idle(self) -> None:
        """Until the answer (and any telling) is over."""
        await _until(lambda: not self.generation.busy())


@pytest.fixture
async def parts() -> AsyncIterator[Callable[..., _Parts]]:
    made: list[_Parts] = []

    def make(
        setup: JsonDict | None = None, schedule: HandleSchedule | None = None, **settings: Any
    ) -> _Parts:
        wire, socket = _wire()
        choices = read_setup(setup or {"model": "gemini-live-fake", "sessionResumption": {}})
        wire.record.resumption_enabled = choices.resumption
        server = ServerSettings(
            **{"chunk_delay": 0.0, **settings}, handle_schedule=schedule or HandleSchedule()
        )
        shared = SharedState(HandleStore(60.0))
        session = SessionState(SessionInfo("s-1", wire.now(), False), audio=choices.audio_out)
        ledger = ConsumedLedger()
        faults = ArmedFaults([], connection=1, end=lambda f: None, spawn=wire.spawn, real=float)
        composed = SessionParts.compose(wire, choices, session, ledger, faults, server, shared)
        handles, generation, turns = composed.handles, composed.generation, composed.turns
        made.append(_Parts(wire, socket, session, ledger, handles, generation, turns, shared))
        return made[-1]

    yield make
    for made_parts in made:
        made_parts.wire.terminate("shutdown", abort=True)
        await made_parts.wire.finish()


async def test_a_typed_turn_is_answered_and_a_handle_snapshots_the_turns(
    parts: Callable[..., _Parts],
) -> None:
    async with asyncio.timeout(5):
        p = parts()
        await p.receive({"realtimeInput": {"text": "hello"}})
        await p.idle()
        assert p.wire.record.answers == ["echo: hello"]
        assert p.session.turns == (Turn("user", "hello"), Turn("model", "echo: hello"))
        (issue,) = p.wire.record.handle_issues
        assert issue.point == "turn_complete" and issue.turns == 2
        snapshot = p.shared.handles.lookup(issue.handle, now=p.wire.now())
        assert snapshot is not None and snapshot.turns == p.session.turns
        # a resumable point now, and not while answering
        assert p.handles.resumable()
        assert await p.handles.issue_now() is not None


async def test_a_turn_mid_answer_cuts_it_off(parts: Callable[..., _Parts]) -> None:
    async with asyncio.timeout(5):
        p = parts(chunk_delay=0.05)
        await p.receive({"realtimeInput": {"text": "one two three four five six seven"}})
        assert p.generation.busy() and not p.handles.resumable()
        await p.receive({"realtimeInput": {"text": "stop"}})
        await p.idle()
        assert p.wire.record.interrupted == 1
        assert p.wire.record.answers == ["echo: stop"]
        assert p.sent("interrupted")


async def test_a_pending_call_holds_the_resumable_point_until_its_response(
    parts: Callable[..., _Parts],
) -> None:
    async with asyncio.timeout(5):
        setup = {
            "model": "gemini-live-fake",
            "sessionResumption": {},
            "tools": [{"functionDeclarations": [{"name": "weather"}]}],
        }
        p = parts(setup)
        await p.receive({"realtimeInput": {"text": 'call weather {"city": "Oslo"}'}})
        await _until(lambda: bool(p.wire.record.tool_calls))
        assert await p.handles.issue_now() is None  # {"resumable": false} instead
        assert p.sent("sessionResumptionUpdate")[-1]["sessionResumptionUpdate"] == {
            "resumable": False
        }
        (call,) = p.wire.record.tool_calls
        response = {"id": call.id, "name": "weather", "response": {"sky": "clear"}}
        await p.receive({"toolResponse": {"functionResponses": [response]}})
        await p.idle()
        assert p.wire.record.accepted_tool_response_ids == [call.id]
        assert p.handles.resumable()


async def test_the_late_turn_handle_goes_out_before_the_next_message(
    parts: Callable[..., _Parts],
) -> None:
    async with asyncio.timeout(5):
        p = parts(schedule=HandleSchedule(turn_handle_late=True))
        await p.receive({"realtimeInput": {"text": "hello"}})
        await p.idle()
        assert p.wire.record.handle_issues == []
        await p.receive({"realtimeInput": {"text": "again"}})
        (first, *_) = p.wire.record.handle_issues
        assert first.point == "turn_complete" and first.turns == 2


async def test_audio_while_idle_issues_a_handle_every_so_many_ms(
    parts: Callable[..., _Parts],
) -> None:
    async with asyncio.timeout(5):
        p = parts(
            {"model": "gemini-live-fake", "sessionResumption": {"transparent": True}},
            schedule=HandleSchedule(on_turn_complete=False, every_audio_ms=100),
        )
        chunk = {"data": b64encode(silence_pcm(0.06)), "mimeType": "audio/pcm;rate=16000"}
        for _ in range(4):
            await p.receive({"realtimeInput": {"audio": chunk}})
        issues = p.wire.record.handle_issues
        # 60 ms a chunk: due at the 2nd (120 ms), counted afresh, due again at the 4th
        assert [i.last_consumed_index for i in issues] == [2, 4]
        assert [i.point for i in issues] == ["idle_silent", "idle_silent"]
        assert p.session.audio
