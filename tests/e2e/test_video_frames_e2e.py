"""A camera stream to a silent model: the run keeps the newest frames only, a drop replays
that window once, in order, and ``RunStats`` counts the frames that left it.

On the Gemini API a handle covers what model output followed, so while the model says
nothing every frame stays in the outbox: before the frame window, 120 frames of 40 KB were
all held after 16 handles and all sent again after a drop. End to end: real
``Runner.run_live``, real google-genai, real TLS websockets to the fake server (which takes
frames in and does not answer them), on both entry points; frames of a camera at a steady
pace with microphone silence between them, idle handles issued all along, then a drop.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from google.genai import types

import adk_live_resume
from adk_live_resume import ResumePolicy, RunStats
from adk_live_resume.testing import FakeLiveServer
from adk_live_resume.testing.driver import LiveDriver
from adk_live_resume.testing.protocol import b64decode_any

from ..conftest import AgentFactory

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

#: The size of each camera frame (a small JPEG's worth).
FRAME_BYTES = 40_000
DEFAULT_WINDOW = ResumePolicy().replay_frames


@pytest.fixture
async def run_stats() -> AsyncIterator[list[RunStats]]:
    stats: list[RunStats] = []
    remove = adk_live_resume.on_run_end(stats.append)
    yield stats
    remove()


def camera_frame(n: int) -> types.Blob:
    """Frame ``n`` of the camera: a JPEG marker, its number, then filler."""
    return types.Blob(
        data=b"\xff\xd8\xff\xe0" + n.to_bytes(4, "big") + bytes(FRAME_BYTES), mime_type="image/jpeg"
    )


def _frame_blobs(record: Any) -> list[dict[str, Any]]:
    found = []
    for message in record.client_messages:
        realtime = message.get("realtimeInput") or message.get("realtime_input") or {}
        for blob in [
            realtime.get("media"),
            realtime.get("video"),
            *realtime.get("mediaChunks", []),
        ]:
            mime = str((blob or {}).get("mimeType") or (blob or {}).get("mime_type") or "")
            if mime.startswith("image/"):
                found.append(blob)
    return found


def frames_received(record: Any) -> list[int]:
    """The numbers of the camera frames a connection of the fake received, in order."""
    return [
        int.from_bytes(b64decode_any(blob["data"])[4:8], "big") for blob in _frame_blobs(record)
    ]


@pytest.mark.parametrize("window", [20, None], ids=["window-20", "default-window"])
async def test_a_camera_stream_to_a_silent_model_keeps_and_replays_only_the_newest_frames(
    make_agent: AgentFactory, run_stats: list[RunStats], window: int | None
) -> None:
    kept = DEFAULT_WINDOW if window is None else window
    sent = kept + 100
    policy = None if window is None else ResumePolicy(replay_frames=window)
    handles = 0
    async with asyncio.timeout(90), FakeLiveServer() as server:
        async with await LiveDriver.start(make_agent(server, policy=policy)) as live:
            assert await live.say("watch this") == "echo: watch this"
            first = server.connections[0]
            for n in range(sent):
                live.queue.send_realtime(camera_frame(n))
                live.send_audio(bytes(3200))  # 100 ms of microphone silence between frames
                if n % 8 == 7:  # the model says nothing; the service issues handles
                    await server.wait_for(
                        lambda n=n: len(_frame_blobs(first)) == n + 1, 10, what=f"frame {n}"
                    )
                    issued = await server.issue_handles_now()
                    handles += sum(1 for issue in issued.values() if issue is not None)
            await server.wait_for(lambda: len(_frame_blobs(first)) == sent, 10, what="all frames")
            await server.close_open(1011)  # a drop
            await server.wait_for_connections(2)
            assert await live.say("still there?") == "echo: still there?"
            assert await live.close() is None
        second = server.connections[1]
        assert handles >= sent // 8 - 1
        assert frames_received(first) == list(range(sent))
        assert second.resumed
        assert frames_received(second) == list(range(sent - kept, sent))  # once, in order
    [stats] = run_stats
    assert stats.error is None and stats.connections == 2
    assert stats.dropped_frames == sent - kept == 100
    assert kept < stats.peak_replay_frames <= kept + max(1, kept // 4)


async def test_frames_a_fresh_session_is_not_sent_are_counted(
    make_agent: AgentFactory, run_stats: list[RunStats]
) -> None:
    """A dead handle: the fresh session gets the history rebuilt from ADK's session, which
    holds no frames; the frames held leave counted, not silently."""
    async with asyncio.timeout(60), FakeLiveServer() as server:
        async with await LiveDriver.start(make_agent(server)) as live:
            assert await live.say("watch this") == "echo: watch this"
            first = server.connections[0]
            for n in range(3):
                live.queue.send_realtime(camera_frame(n))
            await server.wait_for(lambda: len(_frame_blobs(first)) == 3, 10, what="3 frames")
            server.expire_handles()
            await server.close_open(1011)  # a drop; the resume is refused: a fresh start
            await server.wait_for(lambda: any(not c.resumed for c in server.connections[1:]), 10)
            assert await live.say("still there?") == "echo: still there?"
            assert await live.close() is None
        assert all(frames_received(c) == [] for c in server.connections[1:])
    [stats] = run_stats
    assert stats.error is None and stats.dropped_frames == 3
