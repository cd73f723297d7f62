"""The fake server leaves logger levels alone and never logs a resumption handle whole."""

from __future__ import annotations

import asyncio
import logging
import re
import subprocess
import sys

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
