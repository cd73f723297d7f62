"""A server's close frame opens the next socket at once, a round trip before google-genai
reports the close (it raises only once the TCP connection is gone, after the close
handshake). Real ``Runner.run_live``, real google-genai, real TLS websockets on 127.0.0.1, the
fake Gemini Live server, both entry points; some runs through a :class:`LatencyRelay`, where
that round trip is real.

Also: ``websockets_compat.watch_frames`` on a bare websockets connection (the frame is seen before
``recv`` raises, with its code and reason), and the closes that must open nothing: a code the
loop does not retry, ``early_dial=False``, and the closes the loop starts itself (a goAway
move, the end of the run).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import websockets
from websockets.asyncio.client import connect
from websockets.asyncio.server import ServerConnection, serve

import adk_live_resume
from adk_live_resume import ResumePolicy, RunStats
from adk_live_resume.compat import websockets_compat
from adk_live_resume.rules.wire_classifier import Frame
from adk_live_resume.shell.connection_watch import ConnectionWatch
from adk_live_resume.testing import FakeLiveServer, LatencyRelay, silence_pcm, speech_pcm
from adk_live_resume.testing.driver import LiveDriver, LiveRunEnded

from ...conftest import AgentFactory, stream_pcm

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]


@pytest.fixture
def dials_when_reported(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """How many sockets the run had dialed early each time google-genai reported the end of
    a connection (the drop first; the run's own close at its end may follow)."""
    seen: list[int] = []
    original = ConnectionWatch.on_receive_error

    def on_receive_error(self: ConnectionWatch, error: BaseException) -> None:
        dialer = self.run.dialer
        seen.append(dialer.dialed if dialer is not None else -1)
        original(self, error)

    monkeypatch.setattr(ConnectionWatch, "on_receive_error", on_receive_error)
    yield seen


async def _through_close(
    server: FakeLiveServer, address: Any, make_agent: AgentFactory, policy: ResumePolicy, code: int
) -> RunStats:
    """A turn, the server closes with ``code``, another turn (answered on the next
    connection), the run closed; its stats."""
    stats: list[RunStats] = []
    remove = adk_live_resume.on_run_end(stats.append)
    try:
        agent = make_agent(address, policy=policy)
        async with await LiveDriver.start(agent) as live:
            assert await live.say("hello") == "echo: hello"
            await server.wait_for(
                lambda: bool(server.connections[0].handles_issued), 5, what="a handle"
            )
            await asyncio.sleep(0.05)  # the handle after turnComplete reaches the client
            await server.close_open(code, "bye")
            assert await live.say("after") == "echo: after"
            await live.close()
    finally:
        remove()
    assert len(stats) == 1, stats
    return stats[0]


def _resumed_once(server: FakeLiveServer) -> None:
    old, new = server.connections
    assert new.resumed and new.resume_handle == old.handles_issued[-1]
    assert new.user_turns == ["after"], "a turn was sent twice or lost"
    assert server.history_sends() == 0


@pytest.mark.parametrize("code", [1000, 1011])
async def test_a_server_close_opens_the_next_socket_before_google_genai_reports_it(
    make_agent: AgentFactory, dials_when_reported: list[int], code: int
) -> None:
    async with FakeLiveServer() as server:
        stats = await _through_close(server, server, make_agent, ResumePolicy(), code)
        assert stats.error is None
        # The socket was on its way when the SDK reported the close, and it was the one used:
        # no other socket reached the server.
        assert dials_when_reported[0] == 1
        assert (stats.sockets_dialed_early, stats.early_sockets_used) == (1, 1)
        assert stats.connections == len(server.connections) == 2
        _resumed_once(server)


async def test_a_server_close_mid_call_is_acted_on_within_a_second(
    make_agent: AgentFactory,
) -> None:
    """The service closes a call (1011) while the microphone streams: the close handshake
    ends and the next connection is set up within a second (the closing fake reads on, so
    the client's answer to its close frame is not stuck behind unread audio)."""
    async with FakeLiveServer() as server:
        agent = make_agent(server)
        async with await LiveDriver.start(agent) as live:
            await stream_pcm(live, speech_pcm("hello", seconds=0.5) + silence_pcm(0.8))
            await server.wait_for(lambda: server.user_turns_answered() == ["hello"], 10)
            microphone = asyncio.create_task(stream_pcm(live, silence_pcm(10.0, noise=50)))
            try:
                await asyncio.sleep(0.5)
                await server.close_open(1011, "closed mid-call", timeout=1.0)
                first = server.connections[0]
                assert first.ended_at is not None
                await server.wait_for(
                    lambda: len(server.connections) > 1 and server.connections[1].setup is not None,
                    1.0,
                    what="the next connection's setup, within a second of the close",
                )
            finally:
                microphone.cancel()
            assert await live.close() is None
        assert server.connections[1].resumed and first.finished


async def test_the_close_frame_and_the_loop_carry_out_one_decision_per_end(
    make_agent: AgentFactory, dials_when_reported: list[int]
) -> None:
    """What follows an end is decided once, at its first sign: a retry hook that would answer
    otherwise when asked again (at once, then 30 s) is asked once, the socket opened on the
    close frame is the one used, and the loop does not wait."""
    answers = iter([0.0, 30.0, 30.0])
    asked: list[tuple[int | None, int]] = []

    def fickle(drop: adk_live_resume.Drop, attempt: int) -> float:
        asked.append((drop.code, attempt))
        return next(answers)

    remove = adk_live_resume.on_retry(fickle)
    try:
        async with FakeLiveServer() as server:
            stats = await _through_close(server, server, make_agent, ResumePolicy(), 1011)
            _resumed_once(server)
    finally:
        remove()
    assert asked == [(1011, 1)] and dials_when_reported[0] == 1
    assert stats.error is None and (stats.sockets_dialed_early, stats.early_sockets_used) == (1, 1)


async def test_through_a_real_round_trip_the_socket_opened_on_the_close_frame_is_used(
    make_agent: AgentFactory, dials_when_reported: list[int]
) -> None:
    # 60 ms round trips: the close handshake the SDK waits for takes one more.
    async with FakeLiveServer() as server, LatencyRelay(server, one_way=0.03) as relay:
        stats = await _through_close(server, relay, make_agent, ResumePolicy(), 1011)
        assert stats.error is None and dials_when_reported[0] == 1
        assert (stats.sockets_dialed_early, stats.early_sockets_used) == (1, 1)
        _resumed_once(server)


async def test_without_early_dial_a_close_opens_nothing_ahead(
    make_agent: AgentFactory, dials_when_reported: list[int]
) -> None:
    async with FakeLiveServer() as server:
        policy = ResumePolicy(early_dial=False)
        stats = await _through_close(server, server, make_agent, policy, 1011)
        assert stats.error is None and dials_when_reported[0] == -1  # no dialer
        assert (stats.sockets_dialed_early, stats.early_sockets_used) == (0, 0)
        _resumed_once(server)


async def test_a_close_the_loop_does_not_retry_opens_no_socket(
    make_agent: AgentFactory, dials_when_reported: list[int]
) -> None:
    stats: list[RunStats] = []
    remove = adk_live_resume.on_run_end(stats.append)
    try:
        async with FakeLiveServer() as server:
            agent = make_agent(server, policy=ResumePolicy())
            live = await LiveDriver.start(agent)
            assert await live.say("hello") == "echo: hello"
            await server.close_open(1008, "policy violation")
            with pytest.raises(LiveRunEnded):
                await live.say("after", timeout=5)
            await live.close()
            await asyncio.sleep(0.1)  # nothing late reaches the server either
            assert len(server.connections) == 1
    finally:
        remove()
    assert dials_when_reported[0] == 0
    assert len(stats) == 1 and stats[0].sockets_dialed_early == 0
    assert stats[0].error is not None and "1008" in stats[0].error


async def test_closes_the_loop_starts_itself_open_no_socket(
    make_agent: AgentFactory,
) -> None:
    # goAway between turns (a move at a safe point: we close the old socket), then the end
    # of the run (we close again): the server's close frames answer ours.
    stats: list[RunStats] = []
    remove = adk_live_resume.on_run_end(stats.append)
    try:
        # goAway at 0.4 s, its deadline 0.6 s later: the move has time on a loaded machine
        async with FakeLiveServer(
            time_scale=0.01, connection_lifetime=100, go_away_lead=60
        ) as server:
            agent = make_agent(server, policy=ResumePolicy(go_away_margin=0.05))
            async with await LiveDriver.start(agent) as live:
                assert await live.say("hello") == "echo: hello"
                await server.wait_for_connections(2, timeout=5)
                await server.wait_for(
                    lambda: server.connections[0].finished, 5, what="the old socket closed"
                )
                assert await live.say("after") == "echo: after"
                await live.close()
            assert server.connections[0].go_away_sent
            assert server.connections[0].ended_by == "client"
    finally:
        remove()
    assert len(stats) == 1 and stats[0].error is None
    assert stats[0].go_aways >= 1
    assert stats[0].sockets_dialed_early == 0


# ---- the hook on a bare websockets connection ------------------------------------------------


@dataclass
class Told:
    """A frame listener that hands each kind of frame to a callback of its own (``None``: not
    listened for): the close frame's code and reason, a goAway's time left, every message
    that reaches ``recv``, a message of an unknown kind."""

    on_close: Callable[[int, str], None] | None = None
    on_go_away: Callable[[object], None] | None = None
    on_message: Callable[[Frame], None] | None = None
    on_unknown: Callable[[Frame], None] | None = None

    def on_frame(self, frame: Frame) -> None:
        if frame.kind == "close":
            if self.on_close is not None:
                assert frame.close_code is not None
                self.on_close(frame.close_code, frame.close_reason)
            return
        if frame.kind == "unknown":
            if self.on_unknown is not None:
                self.on_unknown(frame)
            return
        if self.on_message is not None:
            self.on_message(frame)
        if frame.kind == "go_away" and self.on_go_away is not None:
            self.on_go_away(frame.time_left)


async def test_watch_frames_sees_the_frame_before_recv_raises() -> None:
    events: list[str] = []

    async def handler(connection: ServerConnection) -> None:
        await connection.recv()  # once the client watches
        await connection.send("one")
        await connection.close(4001, "going")

    async with serve(handler, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        async with asyncio.timeout(10), connect(f"ws://127.0.0.1:{port}") as client:
            assert websockets_compat.watch_frames(
                client,
                Told(
                    on_close=lambda code, reason: events.append(f"close frame {code} {reason}"),
                    on_go_away=lambda time_left: events.append(f"goAway {time_left}"),
                ),
                known=frozenset(),
            )
            await client.send("go")
            with pytest.raises(websockets.ConnectionClosed):
                while True:
                    events.append(f"message {await client.recv()}")
            events.append("recv raised")
    assert events == ["message one", "close frame 4001 going", "recv raised"] or events == [
        "close frame 4001 going",
        "message one",
        "recv raised",
    ]
    # The frame queued before the close is still delivered, and the close is seen first
    # or after it, but always before recv raises.
    assert events[-1] == "recv raised" and "message one" in events


async def test_watch_frames_sees_a_go_away_before_anyone_reads_it() -> None:
    """A goAway is noticed as its frame arrives, while nobody reads the socket (ADK runs a
    blocking tool); the message is still delivered, in order, when read. Other messages,
    large ones and ones that only mention the word, are not taken for a goAway."""
    seen: list[object] = []
    arrived = asyncio.Event()

    async def handler(connection: ServerConnection) -> None:
        await connection.recv()  # once the client watches
        await connection.send(b'{"serverContent": {"modelTurn": {"parts": [{"text": "goAway"}]}}}')
        await connection.send("x" * 5000 + '"goAway"')
        await connection.send(b'{"goAway": {"timeLeft": "7s"}}')
        await connection.send('{"usageMetadata": {}, "go_away": {"time_left": "2.5s"}}')
        await connection.recv()

    async with serve(handler, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        async with asyncio.timeout(10), connect(f"ws://127.0.0.1:{port}") as client:

            def on_go_away(time_left: object) -> None:
                seen.append(time_left)
                if len(seen) == 2:
                    arrived.set()

            assert websockets_compat.watch_frames(
                client,
                Told(on_close=lambda code, reason: None, on_go_away=on_go_away),
                known=frozenset({"serverContent", "usageMetadata"}),
            )
            await client.send("go")
            await arrived.wait()  # nothing was read yet
            assert seen == ["7s", "2.5s"]
            messages = [await client.recv() for _ in range(4)]
            assert messages[2] == b'{"goAway": {"timeLeft": "7s"}}'
            await client.send("done")


async def test_watch_frames_drops_a_message_of_an_unknown_kind_before_anyone_reads_it() -> None:
    """A whole message of a kind the SDK does not know is never queued for ``recv`` (nor
    counted as arrived); every other message is, in order, an error message included, and a
    known key beside an unknown one keeps the message."""
    skipped: list[tuple[str, ...]] = []
    arrived = 0

    def on_message(frame: object) -> None:
        nonlocal arrived
        arrived += 1

    sent = [
        b'{"serverContent": {"turnComplete": true}}',
        b'{"someFutureMessage": {"detail": 1}}',
        '{"someFutureMessage": {}, "usageMetadata": {}}',
        b'{"code": 503}',
        b'{"anotherOne": {"blob": "' + b"x" * 5000 + b'"}}',
        b'{"goAway": {"timeLeft": "1s"}}',
    ]

    async def handler(connection: ServerConnection) -> None:
        await connection.recv()  # once the client watches
        for message in sent:
            await connection.send(message)
        await connection.recv()

    async with serve(handler, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        async with asyncio.timeout(10), connect(f"ws://127.0.0.1:{port}") as client:
            assert websockets_compat.watch_frames(
                client,
                Told(
                    on_message=on_message,
                    on_unknown=lambda frame: skipped.append(frame.unknown_keys),
                ),
                known=frozenset({"serverContent", "usageMetadata", "goAway"}),
            )
            await client.send("go")
            read = [await client.recv() for _ in range(4)]
            assert read == [sent[0], sent[2], sent[3], sent[5]]
            assert skipped == [("someFutureMessage",), ("anotherOne",)]
            assert arrived == 4
            await client.send("done")


async def test_the_messages_that_arrived_before_the_watch_are_told_in_order() -> None:
    """google-genai's connect reads one message; what the server sent right after it waits
    in websockets' queue before anyone watches: :func:`queued_messages` tells each whole
    message there, classified, ``watch_frames`` tells them as it begins, and reading them
    is unchanged."""
    sent = [
        b'{"setupComplete": {}}',
        b'{"sessionResumptionUpdate": {}}',
        b'{"serverContent": {"turnComplete": true, "interactionStatus": "IN_PROGRESS"}}',
    ]

    async def handler(connection: ServerConnection) -> None:
        for message in sent:
            await connection.send(message)
        await connection.send(["frag", "mented"])  # one message in two frames
        await connection.recv()

    async with serve(handler, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        async with asyncio.timeout(10), connect(f"ws://127.0.0.1:{port}") as client:
            assert await client.recv() == sent[0]
            known = frozenset({"setupComplete", "sessionResumptionUpdate", "serverContent"})
            for _ in range(500):  # (until all three arrived)
                if len(websockets_compat.queued_messages(client, known)) == 3:
                    break
                await asyncio.sleep(0.01)
            queued = websockets_compat.queued_messages(client, known)
            assert [frame.kind for frame in queued] == ["resumption_update", "content", "split"]
            assert queued[1] is not None and queued[1].interaction_status == "IN_PROGRESS"
            told: list[object] = []
            assert websockets_compat.watch_frames(
                client, Told(on_message=told.append, on_unknown=lambda frame: None), known=known
            )
            assert told == queued, "told to the watch, in order, as it begins"
            assert [await client.recv() for _ in range(3)] == [*sent[1:], "fragmented"]
            assert websockets_compat.queued_messages(client, known) == []
            await client.send("done")


def test_watch_frames_declines_a_connection_it_cannot_watch() -> None:
    class Legacy:  # no process_event: websockets' legacy implementation
        protocol = object()

    for websocket in (Legacy(), None):
        assert not websockets_compat.watch_frames(
            websocket,
            Told(on_close=lambda code, reason: None, on_go_away=lambda time_left: None),
            known=frozenset(),
        )
        assert not websockets_compat.watch_frames(
            websocket, Told(on_unknown=lambda frame: None), known=frozenset()
        )


async def test_watch_frames_ignores_the_answer_to_a_close_we_started() -> None:
    events: list[str] = []

    async def handler(connection: ServerConnection) -> None:
        await connection.wait_closed()

    async with serve(handler, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        async with asyncio.timeout(10), connect(f"ws://127.0.0.1:{port}") as client:
            assert websockets_compat.watch_frames(
                client,
                Told(
                    on_close=lambda code, reason: events.append(f"close frame {code}"),
                    on_go_away=lambda time_left: None,
                ),
                known=frozenset(),
            )
            await client.close(1000)
            assert client.protocol.close_rcvd is not None  # the server's answer came
    assert events == []


async def test_a_failing_close_frame_callback_is_logged_and_the_close_still_reported(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def handler(connection: ServerConnection) -> None:
        await connection.recv()
        await connection.close(1011, "boom")

    def broken(code: int, reason: str) -> None:
        raise RuntimeError("a bug in the callback")

    async with serve(handler, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        async with asyncio.timeout(10), connect(f"ws://127.0.0.1:{port}") as client:
            assert websockets_compat.watch_frames(
                client, Told(on_close=broken, on_go_away=lambda time_left: None), known=frozenset()
            )
            await client.send("go")
            with (
                caplog.at_level("WARNING", logger="adk_live_resume.loop"),
                pytest.raises(websockets.ConnectionClosed) as raised,
            ):
                await client.recv()
    assert raised.value.rcvd is not None and raised.value.rcvd.code == 1011
    assert "acting on a frame as it arrived failed" in caplog.text
    assert "a bug in the callback" in caplog.text


async def test_a_socket_dialed_early_takes_the_only_pacer_turn_of_its_reconnect(
    make_agent: AgentFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The early socket took its turn at the process's reconnect pacer when it was dialed; the
    # reconnect it serves must not queue for a second one (under a herd, that would double
    # every run's share of the pacer's rate and delay it for nothing).
    from adk_live_resume.shell import pacing

    turns: list[float | None] = []
    original = pacing.take_turn

    async def counted(*args: Any, **kwargs: Any) -> bool:
        turns.append(kwargs.get("latest"))
        return await original(*args, **kwargs)

    monkeypatch.setattr(pacing, "take_turn", counted)
    async with FakeLiveServer() as server:
        stats = await _through_close(server, server, make_agent, ResumePolicy(), 1011)
        assert (stats.sockets_dialed_early, stats.early_sockets_used) == (1, 1)
        _resumed_once(server)
    assert len(turns) == 1, f"one pacer turn for one reconnect, not {len(turns)}"
