"""The fault proxy in front of the fake server: the real google-genai SDK through it, in both
dialects, and every fault kind it injects (goAway then the deadline close, a close with a
code, an abort without a close frame, latency, pongs held back, a refused resume, handles
held back, a schedule), plus an upstream's own refusal and close passed on."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from pathlib import Path
from typing import Any

import pytest
from google.genai import errors, types
from websockets.asyncio.client import connect

from adk_live_resume.fault_proxy.inject_spec import InjectSchedule
from adk_live_resume.fault_proxy.proxy import FaultProxy
from adk_live_resume.testing import DEFAULT_DEADLINE_REASON, GO_AWAY_DEADLINE_REASON, FakeLiveServer

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]

CONFIG = types.LiveConnectConfig(
    response_modalities=[types.Modality.TEXT],
    session_resumption=types.SessionResumptionConfig(),
)


def _config(handle: str | None) -> types.LiveConnectConfig:
    return types.LiveConnectConfig(
        response_modalities=[types.Modality.TEXT],
        session_resumption=types.SessionResumptionConfig(handle=handle),
    )


async def _exchange(session: Any, text: str) -> tuple[str, str | None]:
    """Send ``text``; read the answer and the handle that follows it."""
    await session.send_client_content(
        turns=types.Content(role="user", parts=[types.Part(text=text)]), turn_complete=True
    )
    answer, handle = "", None
    while handle is None:
        async for message in session.receive():
            if message.server_content and message.server_content.model_turn:
                answer += message.text or ""
            update = message.session_resumption_update
            if update is not None and update.new_handle:
                handle = update.new_handle
                break
    return answer, handle


async def _until_error(session: Any) -> tuple[errors.APIError, list[Any]]:
    seen: list[Any] = []
    with pytest.raises(errors.APIError) as raised:
        while True:
            async for message in session.receive():
                seen.append(message)
    return raised.value, seen


@pytest.mark.parametrize("vertex", [False, True], ids=["gemini-api", "vertex"])
async def test_messages_pass_both_ways_and_a_resume_goes_through(vertex: bool) -> None:
    async with FakeLiveServer() as server, FaultProxy(server) as proxy:
        client = proxy.genai_client(vertex=vertex)
        async with client.aio.live.connect(model="gemini-live-fake", config=_config(None)) as s:
            answer, handle = await _exchange(s, "hello")
        assert answer == "echo: hello"
        assert handle is not None
        async with client.aio.live.connect(model="gemini-live-fake", config=_config(handle)) as s:
            answer, _ = await _exchange(s, "recall")
        assert answer == "you said: hello"
        assert [c.resumed for c in server.connections] == [False, True]
        assert ("aiplatform" in server.connections[0].path) is vertex
        records = proxy.connections
        assert [r.resumed for r in records] == [False, True]
        assert records[1].resume_handle.startswith(handle[:6])
        assert handle not in records[1].resume_handle  # only a prefix is kept
        await server.wait_for_connections(2, finished=True)


@pytest.mark.parametrize(
    ("switch", "code", "reason"),
    [
        ({}, 1008, GO_AWAY_DEADLINE_REASON),  # as a recorded real run closes
        ({"deadline_close_code": 1011}, 1011, DEFAULT_DEADLINE_REASON),
    ],
)
async def test_go_away_then_the_deadline_close(
    switch: dict[str, int], code: int, reason: str
) -> None:
    async with FakeLiveServer() as server, FaultProxy(server, **switch) as proxy:
        client = proxy.genai_client()
        async with client.aio.live.connect(model="gemini-live-fake", config=CONFIG) as s:
            await _exchange(s, "hi")
            loop = asyncio.get_running_loop()
            sent = loop.time()
            assert proxy.go_away(0.5) == [1]
            error, seen = await _until_error(s)
            waited = loop.time() - sent
        go_aways = [m.go_away for m in seen if m.go_away is not None]
        assert [g.time_left for g in go_aways] == ["0.500s"]
        assert error.code == code and reason in str(error)
        assert proxy.connections[0].close_code == code
        assert waited >= 0.45
        assert proxy.connections[0].ended_by == "go_away"
        await server.wait_for_connections(1, finished=True)  # the upstream was closed too


@pytest.mark.parametrize("code", [1000, 1007, 4001])
async def test_a_close_with_a_code_reaches_the_client(code: int) -> None:
    async with FakeLiveServer() as server, FaultProxy(server) as proxy:
        client = proxy.genai_client()
        async with client.aio.live.connect(model="gemini-live-fake", config=CONFIG) as s:
            await _exchange(s, "hi")
            proxy.close(code, "injected")
            error, _ = await _until_error(s)  # a close with a reason is an error, 1000 too
            assert error.code == code
        assert proxy.connections[0].close_code == code
        await server.wait_for_connections(1, finished=True)


async def test_an_abort_has_no_close_frame() -> None:
    async with FakeLiveServer() as server, FaultProxy(server) as proxy:
        client = proxy.genai_client()
        async with client.aio.live.connect(model="gemini-live-fake", config=CONFIG) as s:
            await _exchange(s, "hi")
            proxy.abort()
            error, _ = await _until_error(s)
        assert error.code == 1006
        assert proxy.connections[0].ended_by == "abort"


async def test_an_upstream_close_is_passed_on_with_its_code() -> None:
    async with FakeLiveServer() as server, FaultProxy(server) as proxy:
        client = proxy.genai_client()
        async with client.aio.live.connect(model="gemini-live-fake", config=CONFIG) as s:
            await _exchange(s, "hi")
            await server.close_open(4003, "from the fake")
            error, _ = await _until_error(s)
        assert error.code == 4003
        assert proxy.connections[0].ended_by == "upstream"


async def test_latency_delays_each_way() -> None:
    async with FakeLiveServer(chunk_delay=0.0) as server, FaultProxy(server) as proxy:
        client = proxy.genai_client()
        async with client.aio.live.connect(model="gemini-live-fake", config=CONFIG) as s:
            proxy.latency = 0.15
            loop = asyncio.get_running_loop()
            sent = loop.time()
            answer, _ = await _exchange(s, "slow")
            assert loop.time() - sent >= 0.29  # one way up, one way down
        assert answer == "echo: slow"


async def test_a_refused_resume_is_closed_1008_and_never_reaches_the_upstream() -> None:
    async with FakeLiveServer() as server, FaultProxy(server) as proxy:
        client = proxy.genai_client()
        async with client.aio.live.connect(model="gemini-live-fake", config=CONFIG) as s:
            _, handle = await _exchange(s, "hello")
        proxy.refuse_resumes(1)
        with pytest.raises(errors.APIError) as raised:
            async with client.aio.live.connect(
                model="gemini-live-fake", config=_config(handle)
            ) as s:
                await _exchange(s, "recall")
        assert raised.value.code == 1008
        assert proxy.connections[1].ended_by == "refused"
        assert not any(c.resumed for c in server.connections)
        async with client.aio.live.connect(model="gemini-live-fake", config=_config(handle)) as s:
            answer, _ = await _exchange(s, "recall")  # the next one goes through
        assert answer == "you said: hello"


async def test_held_handles_never_reach_the_client() -> None:
    async with FakeLiveServer() as server, FaultProxy(server) as proxy:
        proxy.hold_handles()
        client = proxy.genai_client()
        async with client.aio.live.connect(model="gemini-live-fake", config=CONFIG) as s:
            await s.send_client_content(
                turns=types.Content(role="user", parts=[types.Part(text="x")]),
                turn_complete=True,
            )
            handles: list[str] = []
            async for message in s.receive():  # up to turnComplete
                update = message.session_resumption_update
                if update is not None and update.new_handle:
                    handles.append(update.new_handle)
            await server.wait_for(
                lambda: bool(proxy.connections[0].handles_seen), 5, what="a handle at the proxy"
            )
        assert handles == []
        assert proxy.connections[0].faults == ["held handle"]


async def test_pongs_held_back_then_released() -> None:
    async with FakeLiveServer() as server, FaultProxy(server) as proxy:
        context = ssl.create_default_context(cafile=proxy.cert_path)
        url = proxy.base_url.replace("https://", "wss://") + "/ws/any"
        async with connect(url, ssl=context, ping_interval=None) as ws:
            proxy.hold_pongs()
            pong = await ws.ping()
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(asyncio.shield(pong), 0.5)
            proxy.release_pongs()
            await asyncio.wait_for(pong, 5)
            proxy.hold_pongs()  # held for ever: the client's keepalive gives up
            second = await ws.ping()
            await asyncio.sleep(0.5)
            assert not second.done()
        assert server.connections


async def test_a_schedule_fires_on_every_connection() -> None:
    schedule = InjectSchedule(goaway_every=0.3, goaway_time_left=0.2, goaway_close_code=1011)
    async with FakeLiveServer() as server, FaultProxy(server, schedule=schedule) as proxy:
        client = proxy.genai_client()
        for _ in range(2):
            async with client.aio.live.connect(model="gemini-live-fake", config=CONFIG) as s:
                error, seen = await _until_error(s)
            assert error.code == 1011
            assert any(m.go_away is not None for m in seen)
        assert [c.ended_by for c in proxy.connections] == ["go_away", "go_away"]


async def test_an_unreachable_upstream_is_a_502_with_the_reason() -> None:
    import socket

    from websockets.exceptions import InvalidStatus

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    async with FaultProxy(f"https://127.0.0.1:{port}") as proxy:
        context = ssl.create_default_context(cafile=proxy.cert_path)
        url = proxy.base_url.replace("https://", "wss://") + "/ws/any"
        with pytest.raises(InvalidStatus) as refused:
            async with connect(url, ssl=context):
                pass
        assert refused.value.response.status_code == 502
        assert b"upstream unreachable" in refused.value.response.body
        assert proxy.connections == []


async def test_the_log_holds_no_whole_handle_nor_key(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="adk_live_resume.testing.proxy")
    async with FakeLiveServer() as server, FaultProxy(server) as proxy:
        client = proxy.genai_client()
        async with client.aio.live.connect(model="gemini-live-fake", config=CONFIG) as s:
            _, handle = await _exchange(s, "hello")
        async with client.aio.live.connect(model="gemini-live-fake", config=_config(handle)) as s:
            await _exchange(s, "again")
    assert handle is not None
    text = "\n".join(record.getMessage() for record in caplog.records)
    assert "resumes with handle" in text
    assert handle not in text
    assert "fake-gemini-live-key" not in text


def test_a_bad_upstream_is_refused_with_the_form() -> None:
    with pytest.raises(ValueError, match="https:// or wss://"):
        FaultProxy("generativelanguage.googleapis.com")


async def test_the_proxy_command_relays_and_takes_commands_on_stdin(tmp_path: Path) -> None:
    """``python -m adk_live_resume.testing proxy``: its printed address and bundle work,
    ``goaway`` on stdin reaches the open connection, and ``--record`` writes the session."""
    import sys

    from adk_live_resume.fault_proxy.recording import read_recording

    recording = tmp_path / "session.jsonl"

    async with FakeLiveServer() as server:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "adk_live_resume.testing",
            "proxy",
            "--upstream",
            server.base_url,
            "--upstream-cert",
            server.cert_path,
            "--record",
            str(recording),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        assert process.stdin is not None and process.stdout is not None
        try:
            printed: dict[str, str] = {}
            while len(printed) < 2:
                line = (await asyncio.wait_for(process.stdout.readline(), 30)).decode()
                assert line, "the proxy command ended early"
                if line.startswith("export "):
                    name, _, value = line.removeprefix("export ").strip().partition("=")
                    printed[name] = value
            base_url, bundle = printed["GOOGLE_GEMINI_BASE_URL"], printed["SSL_CERT_FILE"]
            from adk_live_resume.fault_proxy.client_config import _Address, genai_client

            client = genai_client(_Address(base_url, bundle))
            async with client.aio.live.connect(model="gemini-live-fake", config=CONFIG) as s:
                assert (await _exchange(s, "via the command"))[0] == "echo: via the command"
                process.stdin.write(b"goaway 0.3\n")
                await process.stdin.drain()
                error, seen = await _until_error(s)
            assert error.code == 1008  # the recorded deadline close, the proxy's default
            assert any(m.go_away is not None for m in seen)
            process.stdin.close()
            assert await asyncio.wait_for(process.wait(), 30) == 0
            lines = read_recording(recording)
            assert [line.kind for line in lines][:3] == ["open", "client", "server"]
            assert any(line.kind == "server" and "goAway" in line.message for line in lines)
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()


def test_the_upstream_request_keeps_the_client_s_headers_or_swaps_the_key() -> None:
    from adk_live_resume.fault_proxy.proxy_request import upstream_request

    headers = [
        ("Host", "127.0.0.1:1"),
        ("Upgrade", "websocket"),
        ("Sec-WebSocket-Key", "abc"),
        ("x-goog-api-key", "fake-key"),
        ("user-agent", "google-genai-sdk"),
    ]
    path, kept = upstream_request("/ws/x?alt=1", headers, None)
    assert path == "/ws/x?alt=1"
    assert list(kept.raw_items()) == [
        ("x-goog-api-key", "fake-key"),
        ("user-agent", "google-genai-sdk"),
    ]
    path, swapped = upstream_request("/ws/x?key=fake-key&alt=1", headers, "real/key")
    assert path == "/ws/x?key=real%2Fkey&alt=1"
    assert swapped["x-goog-api-key"] == "real/key"


async def test_the_proxy_presents_its_own_key_upstream() -> None:
    from websockets.asyncio.server import serve

    from adk_live_resume.fault_proxy.certs import create_tls_material

    seen: list[str] = []
    tls = create_tls_material()

    async def upstream(ws: Any) -> None:
        seen.append(ws.request.headers.get("x-goog-api-key", ""))
        await ws.close()

    try:
        async with serve(upstream, "127.0.0.1", 0, ssl=tls.server_context()) as server:
            port = next(iter(server.sockets)).getsockname()[1]
            proxy = FaultProxy(
                f"https://127.0.0.1:{port}", upstream_cert=str(tls.cert_path), api_key="real-key"
            )
            async with proxy:
                context = ssl.create_default_context(cafile=proxy.cert_path)
                url = proxy.base_url.replace("https://", "wss://") + "/ws/any"
                headers = {"x-goog-api-key": "fake-gemini-live-key"}
                async with connect(url, ssl=context, additional_headers=headers) as ws:
                    with contextlib.suppress(Exception):
                        await asyncio.wait_for(ws.recv(), 5)
    finally:
        tls.cleanup()
    assert seen == ["real-key"]
