"""The latency relay in front of the fake server: the real google-genai SDK through it, with
every delay it promises (a lower bound: delays only add on a busy machine), every kind of
ending passed on (a close frame with its code, a drop without one, the relay's own exit),
and bad settings refused."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from google.genai import errors, types

from adk_live_resume.testing import FakeLiveServer, LatencyRelay

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]

ONE_WAY = 0.02
CONFIG = types.LiveConnectConfig(response_modalities=[types.Modality.TEXT])


async def _answer(session: Any, text: str) -> str:
    turn = types.Content(role="user", parts=[types.Part(text=text)])
    await session.send_client_content(turns=turn, turn_complete=True)
    answer = ""
    async for message in session.receive():
        content = message.server_content
        if content is not None and content.model_turn is not None:
            answer += "".join(part.text or "" for part in content.model_turn.parts or ())
    return answer


async def test_a_connect_pays_every_round_trip_and_bytes_arrive_whole_and_in_order() -> None:
    server = FakeLiveServer(chunk_delay=0.0)
    async with server, LatencyRelay(server, one_way=ONE_WAY) as relay:
        client = relay.genai_client()
        loop = asyncio.get_running_loop()
        started = loop.time()
        async with client.aio.live.connect(model="gemini-live-fake", config=CONFIG) as session:
            record = server.connections[0]
            # TCP (its first byte reaches the server after 3 one-way delays), TLS and the
            # websocket upgrade (2 round trips), the setup (one more way): 7 one-way delays.
            assert record.first_sent_at is not None
            assert record.first_sent_at - started >= 7 * ONE_WAY * 0.99
            sent = loop.time()
            long_text = "word " * 20_000  # 100 kB: several reads each way; many answer chunks
            assert await _answer(session, long_text) == f"echo: {long_text}"
            assert loop.time() - sent >= 2 * ONE_WAY * 0.99
        assert server.connections[0].user_turns == [long_text]
        await server.wait_for(lambda: relay.open_sockets() == 0, 5, what="relay sockets closed")


@pytest.mark.parametrize("code", [1000, 1011, 4000])
async def test_a_close_frame_reaches_the_client_with_its_code(code: int) -> None:
    async with FakeLiveServer() as server, LatencyRelay(server, one_way=ONE_WAY) as relay:
        client = relay.genai_client()
        async with client.aio.live.connect(model="gemini-live-fake", config=CONFIG) as session:
            await server.close_open(code, "bye")
            with pytest.raises(errors.APIError) as raised:
                async for _ in session.receive():
                    pass
            assert raised.value.code == code
        # Both ways ended: the relay closed both of its sockets, as TCP would.
        await server.wait_for(lambda: relay.open_sockets() == 0, 5, what="relay sockets closed")


async def test_a_drop_without_a_close_frame_reaches_the_client_as_one() -> None:
    async with FakeLiveServer() as server, LatencyRelay(server, one_way=ONE_WAY) as relay:
        client = relay.genai_client()
        async with client.aio.live.connect(model="gemini-live-fake", config=CONFIG) as session:
            await server.restart()
            with pytest.raises(errors.APIError) as raised:
                async for _ in session.receive():
                    pass
            assert raised.value.code == 1006  # no close frame: abnormal closure
        await server.wait_for(lambda: relay.open_sockets() == 0, 5, what="relay sockets closed")


async def test_leaving_the_relay_drops_what_it_still_relays() -> None:
    async with FakeLiveServer() as server:
        async with LatencyRelay(server, one_way=ONE_WAY) as relay:
            client = relay.genai_client()
            stack = client.aio.live.connect(model="gemini-live-fake", config=CONFIG)
            session = await stack.__aenter__()
        try:
            with pytest.raises(errors.APIError) as raised:
                async for _ in session.receive():
                    pass
            assert raised.value.code == 1006
            await server.wait_for(lambda: server.connections[0].finished, 5, what="the end")
        finally:
            await stack.__aexit__(None, None, None)


def test_bad_settings_are_refused_with_what_to_do() -> None:
    class Remote:
        base_url = "https://example.com:443"
        cert_path = "cert.pem"

    class Local:
        base_url = "https://127.0.0.1:9"
        cert_path = "cert.pem"

    with pytest.raises(ValueError, match=r"127\.0\.0\.1 only"):
        LatencyRelay(Remote(), one_way=0.01)
    with pytest.raises(ValueError, match="one_way must be >= 0"):
        LatencyRelay(Local(), one_way=-1)
    with pytest.raises(RuntimeError, match="not started"):
        _ = LatencyRelay(Local(), one_way=0.0).base_url


async def test_a_pipe_that_is_done_takes_nothing_more() -> None:
    # (A pipe whose target is gone must not keep a timer firing for what it cannot deliver.)
    from adk_live_resume.testing.latency import _DelayedPipe

    pipe = _DelayedPipe(asyncio.get_running_loop(), 0.01)
    pipe.stop()
    pipe.push(b"late bytes")
    assert pipe.done and not pipe._items and pipe._timer is None
