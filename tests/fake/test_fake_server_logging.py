"""The fake server leaves logger levels alone, never logs a resumption handle or a key whole,
and keeps a test log free of tracebacks for connections closed before their request."""

from __future__ import annotations

import asyncio
import logging
import re
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest
from google.adk.agents import LlmAgent

import adk_live_resume
from adk_live_resume.testing import FakeLiveServer, LiveDriver


@pytest.mark.timeout(60)
def test_importing_the_fake_server_sets_no_logger_level() -> None:
    code = (
        "import logging\n"
        "import adk_live_resume.testing\n"
        "names = [n for n in logging.Logger.manager.loggerDict if 'adk_live_resume' in n]\n"
        "levels = {n: logging.getLogger(n).level for n in names}\n"
        "print(sorted(n for n, level in levels.items() if level != logging.NOTSET))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


@pytest.mark.e2e
@pytest.mark.timeout(60)
async def test_frames_at_debug_carry_no_whole_handle(caplog: pytest.LogCaptureFixture) -> None:
    adk_live_resume.install()
    with caplog.at_level(logging.DEBUG, logger="adk_live_resume.testing.frames"):
        async with asyncio.timeout(30), FakeLiveServer() as server:
            agent = LlmAgent(name="assistant", model=server.gemini())
            async with await LiveDriver.start(agent) as live:
                assert await live.say("one") == "echo: one"
                await server.restart()
                assert await live.say("two") == "echo: two"
                assert await live.close() is None
            handles = server.handles_issued()
    frames = [r.getMessage() for r in caplog.records if r.name == "adk_live_resume.testing.frames"]
    assert any("TEXT" in m for m in frames), "frames were logged at DEBUG"
    with_handles = [m for m in frames if "newHandle" in m]
    assert with_handles, "frames with handles were logged"
    for message in with_handles:  # websockets would show the head and tail of each handle
        assert re.search(r'"newHandle":"[^"]{1,6}…\(\d+ chars\)"', message), message
    assert handles
    for handle in handles:
        assert handle not in caplog.text and handle[-4:] not in "".join(with_handles)


KEY = "AIzaSyA-realLookingKeyForTheLogs1234567"


@pytest.fixture
def unprotected_websockets_client(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The app's ``websockets.client`` logger as a fresh process has it: without the
    redactor an earlier run in this process attached (put back afterwards)."""
    from adk_live_resume.observe import log_redaction
    from adk_live_resume.observe.log_redaction import CredentialRedactor

    client_logger = logging.getLogger(log_redaction.WEBSOCKETS_CLIENT_LOGGER)
    earlier = [f for f in client_logger.filters if isinstance(f, CredentialRedactor)]
    for redactor in earlier:
        client_logger.removeFilter(redactor)
    monkeypatch.setattr(log_redaction, "_process_credential_redactor", None)
    yield
    for redactor in [f for f in client_logger.filters if isinstance(f, CredentialRedactor)]:
        client_logger.removeFilter(redactor)
    for redactor in earlier:
        client_logger.addFilter(redactor)


@pytest.mark.e2e
@pytest.mark.timeout(60)
async def test_handshakes_at_debug_carry_no_whole_key_in_the_fake_nor_in_the_app(
    caplog: pytest.LogCaptureFixture, unprotected_websockets_client: None
) -> None:
    """A real-looking key in the app's environment reaches the fake through a proxy: the
    fake's frames logger and the app's websockets client logger both print the handshake
    at DEBUG, and neither prints the key whole."""
    from google.adk.models import Gemini

    from adk_live_resume.testing import FaultProxy

    adk_live_resume.install()
    with caplog.at_level(logging.DEBUG):
        async with asyncio.timeout(30), FakeLiveServer() as server, FaultProxy(server) as proxy:
            with proxy.environment(api_key=KEY):
                agent = LlmAgent(name="assistant", model=Gemini(model="gemini-live-fake"))
                async with await LiveDriver.start(agent) as live:
                    assert await live.say("one") == "echo: one"
                    assert await live.close() is None
    by_logger: dict[str, list[str]] = {}
    for record in caplog.records:
        by_logger.setdefault(record.name, []).append(record.getMessage())
    for name in ("adk_live_resume.testing.frames", "websockets.client"):
        handshake = [m for m in by_logger.get(name, []) if "x-goog-api-key" in m.lower()]
        assert handshake, f"{name} logged the handshake's key header at DEBUG"
        assert all("AIza…" in m for m in handshake), handshake
    assert KEY not in caplog.text and KEY[6:] not in caplog.text


@pytest.mark.timeout(30)
@pytest.mark.parametrize("sent", [b"", b"GET /ws HTTP/1.1\r\nHost: x"], ids=["nothing", "a part"])
async def test_a_connection_closed_before_its_request_is_one_debug_line(
    caplog: pytest.LogCaptureFixture, sent: bytes
) -> None:
    """A TLS connection closed before its request (a socket a client dialed early and dropped
    unused) is no error: one DEBUG line, no traceback."""
    caplog.set_level(logging.DEBUG)
    async with asyncio.timeout(20), FakeLiveServer() as server:
        _, writer = await asyncio.open_connection(
            "127.0.0.1", server.port, ssl=server.client_ssl_context()
        )
        writer.write(sent)
        await writer.drain()
        writer.close()
        await writer.wait_closed()
        await server.wait_for(
            lambda: any("closed before its request" in r.getMessage() for r in caplog.records),
            5,
            what="the DEBUG line",
        )
        assert server.connections == [] and server.rest_calls() == []
    loud = [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info]
    assert loud == [], [(r.name, r.getMessage()) for r in loud]
    lines = [r for r in caplog.records if "closed before its request" in r.getMessage()]
    assert len(lines) == 1 and lines[0].levelno == logging.DEBUG


@pytest.mark.timeout(30)
async def test_a_socket_closed_before_tls_logs_no_error(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    async with asyncio.timeout(20), FakeLiveServer() as server:
        with socket.create_connection(("127.0.0.1", server.port)):
            pass
        await asyncio.sleep(0.3)
    loud = [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info]
    assert loud == [], [(r.name, r.getMessage()) for r in loud]
