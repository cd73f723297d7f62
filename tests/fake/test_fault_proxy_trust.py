"""The fault proxy's trust model, attacked over real sockets: a local client chooses only the
path under the upstream fixed at start (never another host, never with the proxy's key), and
a message over the size limit is refused both ways."""

from __future__ import annotations

import asyncio
import base64
import os
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import pytest
from websockets.asyncio.client import connect
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request

from adk_live_resume.fault_proxy.certs import TlsMaterial, create_tls_material
from adk_live_resume.fault_proxy.proxy import MAX_MESSAGE_SIZE, FaultProxy

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]

PROXY_KEY = "AIzaProxyKeyThatOnlyTheUpstreamMayHave0"


@dataclass
class Listener:
    """A websocket server on 127.0.0.1 that notes every handshake it is asked for."""

    port: int = 0
    requests: list[tuple[str, str]] = field(default_factory=list)  # (path, x-goog-api-key)
    received: list[int] = field(default_factory=list)  # the length of each message


@asynccontextmanager
async def listening(tls: TlsMaterial) -> AsyncIterator[Listener]:
    seen = Listener()

    def note(connection: ServerConnection, request: Request) -> None:
        seen.requests.append((request.path, request.headers.get("x-goog-api-key", "")))

    async def echo(ws: ServerConnection) -> None:
        async for message in ws:  # "big N": N bytes back; anything else: itself
            seen.received.append(len(message))
            big = str(message).removeprefix("big ")
            await ws.send("x" * int(big) if big.isdigit() else message)

    async with serve(
        echo, "127.0.0.1", 0, ssl=tls.server_context(), process_request=note, max_size=None
    ) as server:
        seen.port = next(iter(server.sockets)).getsockname()[1]
        yield seen


async def handshake(proxy: FaultProxy, target: str) -> tuple[int, str]:
    """Send a websocket upgrade for the raw request ``target`` (no client library would send
    most of these) with the fake's key; return the proxy's status and body."""
    port = int(proxy.base_url.rsplit(":", 1)[1])
    context = ssl.create_default_context(cafile=proxy.cert_path)
    reader, writer = await asyncio.open_connection(
        "127.0.0.1", port, ssl=context, server_hostname="127.0.0.1"
    )
    key = base64.b64encode(os.urandom(16)).decode()
    writer.write(
        (
            f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
            "x-goog-api-key: fake-gemini-live-key\r\n\r\n"
        ).encode("latin-1")
    )
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = next(
        (
            int(line.split(b":", 1)[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        ),
        0,
    )
    body = await reader.readexactly(length) if length else b""
    writer.close()
    return status, body.decode()


@pytest.mark.parametrize("api_key", [PROXY_KEY, None], ids=["keyed", "keyless"])
@pytest.mark.parametrize(
    "attack",
    [
        ":x@localhost:{port}/ws/x",  # the configured host:port turned into userinfo
        "@localhost:{port}/ws/x",
        "wss://localhost:{port}/ws/x",  # absolute form
        "https://localhost:{port}/ws/x",
        "//localhost:{port}/ws/x",  # network-path reference
    ],
)
async def test_a_client_cannot_make_the_proxy_dial_another_host(
    attack: str, api_key: str | None
) -> None:
    tls = create_tls_material()
    try:
        async with asyncio.timeout(30), listening(tls) as upstream, listening(tls) as attacker:
            proxy = FaultProxy(
                f"https://127.0.0.1:{upstream.port}",
                upstream_cert=str(tls.cert_path),
                api_key=api_key,
            )
            async with proxy:
                status, body = await handshake(proxy, attack.format(port=attacker.port))
                assert (status, attacker.requests, upstream.requests) == (400, [], [])
                assert "the request target must be a path such as /ws/" in body
                # the control: a path goes to the configured upstream, with the proxy's key
                assert (await handshake(proxy, "/ws/x?alt=1"))[0] == 101
                await asyncio.sleep(0)
        assert attacker.requests == []
        assert upstream.requests == [("/ws/x?alt=1", api_key or "fake-gemini-live-key")]
        assert proxy.connections and proxy.connections[0].path == "/ws/x"
    finally:
        tls.cleanup()


async def test_a_message_over_the_size_limit_is_refused_both_ways() -> None:
    tls = create_tls_material()
    try:
        async with asyncio.timeout(30), listening(tls) as upstream:
            proxy = FaultProxy(
                f"https://127.0.0.1:{upstream.port}",
                upstream_cert=str(tls.cert_path),
                max_message_size=1000,
            )
            async with proxy:
                context = ssl.create_default_context(cafile=proxy.cert_path)
                url = proxy.base_url.replace("https://", "wss://") + "/ws/x"
                async with connect(url, ssl=context, max_size=None) as ws:
                    await ws.send("y" * 1000)  # at the limit: relayed both ways
                    assert len(await ws.recv()) == 1000
                    await ws.send("y" * 1001)  # over it, from the client
                    with pytest.raises(ConnectionClosed) as closed:
                        await ws.recv()
                assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
                async with connect(url, ssl=context, max_size=None) as ws:
                    await ws.send("big 1001")  # over it, from the upstream
                    with pytest.raises(ConnectionClosed):
                        await ws.recv()
                await asyncio.sleep(0.1)
        assert upstream.received == [1000, 8]  # the client's 1001 bytes never went up
        assert proxy.connections[1].messages_down == 0
    finally:
        tls.cleanup()


def test_the_size_limit_is_bounded_by_default_and_refuses_none() -> None:
    assert FaultProxy("https://h").max_message_size == MAX_MESSAGE_SIZE == 16 * 2**20
    with pytest.raises(TypeError, match="max_message_size must be a number of bytes"):
        FaultProxy("https://h", max_message_size=None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at least 1 byte"):
        FaultProxy("https://h", max_message_size=0)
