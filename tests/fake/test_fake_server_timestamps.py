"""The fake's connection records carry loop-clock times (the resume-gap benchmark reads them)."""

from __future__ import annotations

import asyncio

import pytest
from google.genai import types

from adk_live_resume.testing import FakeLiveServer

pytestmark = pytest.mark.timeout(30)


async def test_records_time_the_accept_every_message_sent_and_the_end() -> None:
    async with asyncio.timeout(20), FakeLiveServer() as server:
        loop = asyncio.get_running_loop()
        config = types.LiveConnectConfig(
            response_modalities=[types.Modality.TEXT],
            session_resumption=types.SessionResumptionConfig(),
        )
        before = loop.time()
        async with server.genai_client().aio.live.connect(
            model="gemini-live-fake", config=config
        ) as live:
            record = (await server.wait_for_connections(1))[0]
            assert record.first_sent_at is not None and record.ended_at is None
            first = record.first_sent_at
            await live.send_client_content(
                turns=types.Content(role="user", parts=[types.Part(text="hi")])
            )
            async for message in live.receive():
                if message.server_content and message.server_content.turn_complete:
                    break
            assert record.last_sent_at is not None and record.last_sent_at > first
            last = record.last_sent_at
            faulted = loop.time()
            await server.close_open(1011)
        assert record.ended_by == "fault" and record.ended_at is not None
        assert before <= record.accepted_at <= first <= last <= faulted <= record.ended_at
        assert record.ended_at <= loop.time()
        assert record.first_sent_at == first  # the first message's time is never moved
        # every message sent has its own time, in order, from the first to the last
        assert len(record.sent_times) == len(record.server_messages) >= 3
        assert record.sent_times == sorted(record.sent_times)
        assert record.sent_times[0] == first and record.sent_times[-1] == last


async def test_a_client_close_is_timed_too() -> None:
    async with asyncio.timeout(20), FakeLiveServer() as server:
        async with server.genai_client().aio.live.connect(
            model="gemini-live-fake", config=types.LiveConnectConfig()
        ):
            pass
        (record,) = await server.wait_for_connections(1, finished=True)
        assert record.ended_by == "client" and record.ended_at is not None
        assert record.first_sent_at is not None and record.first_sent_at <= record.ended_at
