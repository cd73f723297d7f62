"""Early dial, end to end: on a goAway that lands in an answer, the next connection's socket is
opened while the answer still streams, and the setup (with the handle that covers the answer)
goes on it at the safe point. Real ``Runner.run_live``, real google-genai, real TLS websockets
on 127.0.0.1, the fake Gemini Live server; the fake's own timestamps prove the order.

Also: a socket the server closed while it waited, or one too old, is not used (the SDK opens
its own); closing the run while one waits closes it; the hook in google-genai is a
pass-through outside a run and is put back only if it is still ours.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import adk_live_resume
from adk_live_resume import ResumePolicy, RunStats
from adk_live_resume.shell import early_dial
from adk_live_resume.testing import FakeLiveServer
from adk_live_resume.testing.driver import LiveDriver

from ...conftest import AgentFactory, end_cleanly
from ...helpers import go_away_server

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]

LONG = "a long answer please"


def _server(chunk_delay: float = 0.2, **settings: Any) -> FakeLiveServer:
    """Answer chunks ``chunk_delay`` apart, so a long answer streams for about two of them;
    connections live a minute, so no goAway comes but the one a test sends
    (:func:`_go_away_in_the_answer`)."""
    return go_away_server(lifetime=6000, lead=85, chunk_delay=chunk_delay, **settings)


async def _go_away_in_the_answer(
    live: LiveDriver, server: FakeLiveServer, mark: int, time_left: float = 0.85
) -> None:
    """Once the answer to the turn sent at ``mark`` streams, a goAway with ``time_left``: it
    lands in the answer however slow the machine (a timed one landed before the answer began
    when the first turn was slow, and the move then needed no early socket)."""
    await live.wait_for_event(lambda event: event.partial, after=mark)
    assert server.go_away_now(time_left) == [1]


async def _long_answer_through_go_away(
    server: FakeLiveServer, make_agent: AgentFactory, policy: ResumePolicy, time_left: float = 0.85
) -> tuple[RunStats, float]:
    """One run: the long answer (a goAway lands in it), then one more turn. Returns the
    run's stats and the loop time at which the client had the whole answer."""
    stats: list[RunStats] = []
    remove = adk_live_resume.on_run_end(stats.append)
    try:
        agent = make_agent(server, policy=policy)
        async with await LiveDriver.start(agent) as live:
            mark = live.send_text(LONG)
            await _go_away_in_the_answer(live, server, mark, time_left)
            assert await live.answer_after(mark) == f"echo: {LONG}"
            answered_at = asyncio.get_running_loop().time()
            await server.wait_for_connections(2, timeout=5)
            assert await live.say("after") == "echo: after"
            await live.close()
    finally:
        remove()
    assert len(stats) == 1 and stats[0].error is None, stats
    return stats[0], answered_at


def _whole_and_resumed(server: FakeLiveServer, new_index: int) -> None:
    old, new = server.connections[0], server.connections[new_index]
    assert old.go_away_sent and old.answered_user_turns == [LONG], "the answer was cut"
    assert new.resumed and new.resume_handle == old.handles_issued[-1]
    assert LONG not in new.user_turns, "the turn was sent twice"
    assert new.user_turns[:1] == ["after"]
    assert server.resent_consumed() == [] and server.history_sends() == 0


@pytest.mark.parametrize("on", [True, False], ids=["early_dial", "no_early_dial"])
async def test_go_away_mid_answer_opens_the_next_socket_while_the_answer_streams(
    make_agent: AgentFactory, on: bool
) -> None:
    async with _server() as server:
        policy = ResumePolicy(go_away_margin=0.05, early_dial=on)
        stats, answered_at = await _long_answer_through_go_away(server, make_agent, policy)
        old, new = server.connections[:2]
        assert new.setup is not None and new.first_sent_at is not None
        if on:
            # The handshakes were done while the answer streamed; the setup, with the handle
            # that covers the answer, went only after it.
            assert new.accepted_at < answered_at < new.first_sent_at
            # (a second goAway may land in the next answer: each early socket is used)
            assert stats.sockets_dialed_early == stats.early_sockets_used >= 1
        else:
            assert answered_at < new.accepted_at
            assert (stats.sockets_dialed_early, stats.early_sockets_used) == (0, 0)
        assert old.ended_at is not None and new.first_sent_at < old.ended_at
        _whole_and_resumed(server, 1)


async def test_an_early_socket_the_server_closed_while_it_waited_is_not_used(
    make_agent: AgentFactory,
) -> None:
    # The server closes a socket that sends no setup within 0.1 s: the early one, since the
    # answer streams on for longer. The SDK opens its own at the safe point.
    async with _server(setup_timeout=10) as server:
        policy = ResumePolicy(go_away_margin=0.05)
        stats, _ = await _long_answer_through_go_away(server, make_agent, policy)
        early, used = server.connections[1:3]
        assert early.setup is None and early.ended_by == "setup_timeout"
        assert stats.sockets_dialed_early >= 1 and stats.early_sockets_used == 0
        assert stats.connections == len(server.connections) - stats.sockets_dialed_early
        assert used.accepted_at > early.ended_at  # type: ignore[operator]
        _whole_and_resumed(server, 2)


async def test_an_early_socket_older_than_max_age_is_closed_unused(
    make_agent: AgentFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(early_dial, "MAX_AGE", 0.5)
    # The answer streams for about three seconds: the early socket is open and too old long
    # before the safe point, even when a loaded machine makes its handshake slow or sees the
    # answer begin late (with 0.6 s chunks, a CI run saw it late enough that the goAway
    # landed near the answer's end, and the socket was taken younger than MAX_AGE). MAX_AGE
    # leaves the handshake room: at 0.05 s a loaded CI run closed the socket before its
    # handshake was done, and the server never saw a socket to close.
    async with _server(chunk_delay=1.5) as server:
        policy = ResumePolicy(go_away_margin=0.05)
        stats, _ = await _long_answer_through_go_away(server, make_agent, policy, 6.0)
        # (which socket the server accepted first is the handshakes' race on a loaded
        # machine: the early one is the one nobody set up)
        await server.wait_for(
            lambda: any(c.setup is None and c.finished for c in server.connections[1:]),
            5,
            what="the early socket closed",
        )
        early = next(c for c in server.connections[1:] if c.setup is None)
        assert early.ended_by == "client"
        assert stats.sockets_dialed_early >= 1 and stats.early_sockets_used == 0
        used = next(c for c in server.connections[1:] if c.setup is not None)
        _whole_and_resumed(server, server.connections.index(used))


@pytest.mark.parametrize("ending", ["close", "cancel"])
async def test_ending_the_run_while_an_early_socket_waits_closes_it(
    make_agent: AgentFactory, ending: str
) -> None:
    async with _server() as server:
        agent = make_agent(server, policy=ResumePolicy(go_away_margin=0.05))
        live = await LiveDriver.start(agent)
        await _go_away_in_the_answer(live, server, live.send_text(LONG))
        await server.wait_for(lambda: len(server.connections) == 2, 5, what="the early socket")
        early = server.connections[1]
        assert early.setup is None and not server.connections[0].finished
        await end_cleanly(live, server, ending)
        assert len(server.connections) == 2
        assert early.setup is None and early.ended_by == "client"


def test_the_hook_passes_through_outside_a_run_and_is_put_back_only_if_still_ours(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import google.genai.live as live_module

    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

    def recorder(*args: Any, **kwargs: Any) -> str:
        calls.append((args, kwargs))
        return "connect object"

    early_dial.unhook()
    monkeypatch.setattr(live_module, "ws_connect", recorder)
    try:
        assert early_dial.hook() and early_dial.hook()  # idempotent
        assert live_module.ws_connect is early_dial._ws_connect
        assert live_module.ws_connect("wss://x", additional_headers={"k": "v"}) == "connect object"
        assert calls == [(("wss://x",), {"additional_headers": {"k": "v"}})]
        early_dial.unhook()
        assert live_module.ws_connect is recorder  # ours: put back

        assert early_dial.hook()

        def someone_elses(*args: Any, **kwargs: Any) -> str:
            return "theirs"

        live_module.ws_connect = someone_elses
        with caplog.at_level("WARNING", logger="adk_live_resume.loop"):
            early_dial.unhook()
        assert live_module.ws_connect is someone_elses  # not ours any more: left in place
        assert "replaced after adk_live_resume hooked it" in caplog.text
    finally:
        early_dial.unhook()


async def test_a_dialer_without_a_learnt_address_dials_nothing() -> None:
    closed: list[Any] = []
    dialer = early_dial.EarlyDialer(close=closed.append)
    turns: list[int] = []

    async def turn() -> bool:
        turns.append(1)
        return True

    assert not dialer.dial(turn)
    assert not dialer.holds_turn()
    assert dialer.take(early_dial.Address(("wss://x",), {})) is None
    await dialer.discard()
    assert (dialer.dialed, dialer.used, turns, closed) == (0, 0, [], [])


async def test_a_socket_dialed_for_another_address_is_closed_not_handed_over() -> None:
    async with FakeLiveServer() as server:
        early_dial.hook()
        closed: list[Any] = []
        dialer = early_dial.EarlyDialer(close=closed.append)
        address = (
            (f"{server.url}/ws/google.ai.generativelanguage.v1beta.GenerativeService.Bidi",),
            {"additional_headers": {}, "ssl": server.client_ssl_context()},
        )
        dialer.learn(*address)

        async def turn() -> bool:
            return True

        assert dialer.dial(turn) and not dialer.dial(turn)  # one at a time
        await server.wait_for(dialer.ready, 5, what="the socket open")
        assert dialer.holds_turn() and len(server.connections) == 1
        other_headers = {
            "additional_headers": {"x-goog-api-key": "other"},
            "ssl": address[1]["ssl"],
        }
        assert dialer.take(early_dial.Address(address[0], other_headers)) is None
        assert not dialer.holds_turn()
        assert len(closed) == 1
        await closed[0].close()
        await server.wait_for(lambda: server.connections[0].finished, 5, what="closed")
        assert server.connections[0].setup is None
        assert (dialer.dialed, dialer.used) == (1, 0)
