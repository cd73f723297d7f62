"""Every hook into another library's internals is checked once (``adk_live_resume.compat.hooks``).

A renamed internal is simulated by pointing our lookup (its name in ``genai_compat`` or
``websockets_compat``) at a name
the library does not have: the library itself keeps working, as it does after a real rename,
and only our hook misses it. Each then: exactly one WARNING naming the internal, the features
it serves off, and a real live run (real ``Runner.run_live``, google-genai, TLS websockets to
the fake server, both entry points) that still resumes across a server's close. ADK's
essential ``GeminiLlmConnection._gemini_session``, renamed on the class, is a clear
``UnsupportedAdkVersionError``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest
from google.adk.models.gemini_llm_connection import GeminiLlmConnection

import adk_live_resume
from adk_live_resume import ResumableLlmAgent, ResumePolicy, RunStats
from adk_live_resume.compat import genai_compat, hooks, websockets_compat
from adk_live_resume.rules.errors import UnsupportedAdkVersionError
from adk_live_resume.testing import FakeLiveServer, silence_pcm
from adk_live_resume.testing.driver import LiveDriver, LiveRunEnded

from ...conftest import AgentFactory


@pytest.fixture(autouse=True)
def _checked_afresh() -> Iterator[None]:
    """Each test checks the hooks anew, and leaves no result behind for the next."""
    hooks.forget()
    yield
    hooks.forget()


#: (the name in genai_compat or websockets_compat, the internal's qualified name, the features
#: it turns off)
RENAMES = [
    (
        "GENAI_WS_CONNECT",
        "google.genai.live.ws_connect",
        {hooks.EARLY_DIAL, hooks.CLOSE_FRAME_DIAL},
    ),
    (
        "GENAI_WEBSOCKET",
        "google.genai.live.AsyncSession._ws",
        {
            hooks.CLOSE_FRAME_DIAL,
            hooks.GO_AWAY_FRAME,
            hooks.SKIP_UNKNOWN,
            hooks.CHUNK_ENCODING,
            hooks.MESSAGE_DECODING,
            hooks.SOCKET_ABORT,
        },
    ),
    (
        "GENAI_SEND_REALTIME_INPUT",
        "google.genai.live.AsyncSession.send_realtime_input",
        {hooks.CHUNK_ENCODING},
    ),
    ("GENAI_RECEIVE", "google.genai.live.AsyncSession._receive", {hooks.MESSAGE_DECODING}),
    (
        "WEBSOCKETS_PROCESS_EVENT",
        "websockets.asyncio.client.ClientConnection.process_event",
        {hooks.CLOSE_FRAME_DIAL, hooks.GO_AWAY_FRAME, hooks.SKIP_UNKNOWN},
    ),
    (
        "WEBSOCKETS_CLOSE_RCVD_THEN_SENT",
        "websockets.protocol.Protocol.close_rcvd_then_sent",
        {hooks.CLOSE_FRAME_DIAL},
    ),
    ("WEBSOCKETS_CLOSE_RCVD", "websockets.protocol.Protocol.close_rcvd", {hooks.CLOSE_FRAME_DIAL}),
]


def _compat(name: str) -> ModuleType:
    """The module that holds the lookup ``name``."""
    return websockets_compat if name.startswith("WEBSOCKETS_") else genai_compat


def _warnings(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [
        r
        for r in caplog.records
        if r.name.startswith("adk_live_resume") and r.levelno >= logging.WARNING
    ]


async def _turn_close_turn(server: FakeLiveServer, agent: Any) -> RunStats:
    """Audio and a turn, the server closes with 1011, another turn (answered on the next
    connection), the run closed; its stats."""
    stats: list[RunStats] = []
    remove = adk_live_resume.on_run_end(stats.append)
    try:
        async with asyncio.timeout(40), await LiveDriver.start(agent) as live:
            for _ in range(5):
                live.send_audio(silence_pcm(0.02, noise=40))
            assert await live.say("hello") == "echo: hello"
            await server.wait_for(
                lambda: bool(server.connections[0].handles_issued), 5, what="a handle"
            )
            await asyncio.sleep(0.05)  # the handle after turnComplete reaches the client
            await server.close_open(1011, "x")
            assert await live.say("after") == "echo: after"
            assert await live.close() is None
    finally:
        remove()
    assert len(stats) == 1, stats
    old, new = server.connections
    assert new.resumed and new.resume_handle == old.handles_issued[-1]
    assert new.user_turns == ["after"]
    assert server.history_sends() == 0
    return stats[0]


@pytest.mark.e2e
@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("name", "internal", "off"), RENAMES, ids=[internal for _, internal, _ in RENAMES]
)
async def test_a_renamed_internal_is_one_warning_and_the_run_still_resumes(
    make_agent: AgentFactory,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    name: str,
    internal: str,
    off: set[str],
) -> None:
    monkeypatch.setattr(_compat(name), name, getattr(_compat(name), name) + "_renamed")
    renamed = internal + "_renamed"
    caplog.set_level(logging.INFO, logger="adk_live_resume")
    async with FakeLiveServer() as server:
        stats = await _turn_close_turn(
            server, make_agent(server, policy=ResumePolicy(sliding_window=True))
        )
    warnings = _warnings(caplog)
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    message = warnings[0].getMessage()
    assert renamed in message
    for feature in off:
        assert feature in message
    assert "still resume" in message
    assert set(hooks.check().off) == off
    assert stats.error is None and stats.connections == 2
    # the features are really off (and on otherwise: see the test without a rename)
    dialed = 0 if hooks.CLOSE_FRAME_DIAL in off else 1
    assert stats.sockets_dialed_early == dialed
    assert (stats.chunks_encoded == 0) == (hooks.CHUNK_ENCODING in off)
    assert (stats.messages_decoded == 0) == (hooks.MESSAGE_DECODING in off)


@pytest.mark.e2e
@pytest.mark.timeout(60)
async def test_with_every_internal_in_place_no_warning_and_every_feature_on(
    make_agent: AgentFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="adk_live_resume")
    async with FakeLiveServer() as server:
        stats = await _turn_close_turn(
            server, make_agent(server, policy=ResumePolicy(sliding_window=True))
        )
    assert _warnings(caplog) == []
    assert hooks.check().off == {}
    assert stats.sockets_dialed_early == 1 and stats.chunks_encoded > 0
    assert stats.messages_decoded > 0


def test_the_warnings_are_logged_once_per_process(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(genai_compat, "GENAI_WS_CONNECT", "ws_connect_renamed")
    adk_live_resume.install()
    adk_live_resume.uninstall()
    adk_live_resume.install()
    hooks.check()
    assert len(_warnings(caplog)) == 1


@pytest.fixture
def gemini_session_renamed(monkeypatch: pytest.MonkeyPatch) -> None:
    """ADK keeps the google-genai session under another name (on the class itself)."""
    original = GeminiLlmConnection.__init__

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        self._gemini_session_v2 = self.__dict__.pop("_gemini_session")

    monkeypatch.setattr(GeminiLlmConnection, "__init__", init)


@pytest.mark.usefixtures("gemini_session_renamed")
def test_without_adks_gemini_session_install_refuses_clearly() -> None:
    with pytest.raises(UnsupportedAdkVersionError, match=r"GeminiLlmConnection\._gemini_session"):
        adk_live_resume.install()
    assert not adk_live_resume.is_installed()


@pytest.mark.e2e
@pytest.mark.timeout(60)
@pytest.mark.usefixtures("gemini_session_renamed")
async def test_without_adks_gemini_session_the_subclass_refuses_at_its_first_live_run() -> None:
    async with FakeLiveServer() as server:
        agent = ResumableLlmAgent(name="assistant", model=server.gemini())
        async with asyncio.timeout(20):
            live = await LiveDriver.start(agent)
            with pytest.raises(LiveRunEnded):
                await live.say("hello", timeout=5)
            error = await live.close()
        assert isinstance(error, UnsupportedAdkVersionError), error
        assert "GeminiLlmConnection._gemini_session" in str(error)
        assert server.connections == []  # refused before connecting
