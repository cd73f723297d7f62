"""The lines that say live runs resume show where ADK's lines go (``startup_log``).

The install line logged before logging shows INFO is held and logged at the first live run
that finds it shown; the subclass entry point (no ``install()``) says once per process, at its
first live run, that live runs resume. Real ``Runner.run_live`` against the fake server.
(The launcher with a real ``adk api_server``: tests/unit/launch/test_launcher_logging.py.)
"""

from __future__ import annotations

import asyncio
import logging

import pytest
from google.adk.agents import LlmAgent

import adk_live_resume
from adk_live_resume import ResumableLlmAgent
from adk_live_resume.observe import startup_log
from adk_live_resume.testing import FakeLiveServer
from adk_live_resume.testing.driver import LiveDriver

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]

INSTALLED = "adk_live_resume installed on google-adk"
SUBCLASS = "live runs of ResumableLlmAgent resume"


def _lines(caplog: pytest.LogCaptureFixture, text: str) -> list[logging.LogRecord]:
    return [
        r
        for r in caplog.records
        if text in r.getMessage() and r.name == "adk_live_resume" and r.levelno == logging.INFO
    ]


async def _one_turn(agent: object) -> None:
    async with asyncio.timeout(20), await LiveDriver.start(agent) as live:
        assert await live.say("hello") == "echo: hello"
        assert await live.close() is None


async def test_the_install_line_logged_before_logging_shows_it_comes_at_the_first_live_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)  # logging not (yet) set to show INFO
    adk_live_resume.install()
    assert _lines(caplog, INSTALLED) == []
    caplog.set_level(logging.INFO)  # the app sets logging up afterwards
    async with FakeLiveServer() as server:
        await _one_turn(LlmAgent(name="assistant", model=server.gemini()))
        await _one_turn(LlmAgent(name="assistant", model=server.gemini()))
    assert len(_lines(caplog, INSTALLED)) == 1


async def test_an_uninstalled_patch_is_not_announced_later(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    adk_live_resume.install()
    adk_live_resume.uninstall()
    caplog.set_level(logging.INFO)
    startup_log.flush()
    assert _lines(caplog, INSTALLED) == []


async def test_the_subclass_says_once_per_process_that_live_runs_resume(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(startup_log, "_subclass_announced", False)
    caplog.set_level(logging.INFO)
    async with FakeLiveServer() as server:
        assert _lines(caplog, SUBCLASS) == []  # not when the agent is made: at its live run
        await _one_turn(ResumableLlmAgent(name="assistant", model=server.gemini()))
        await _one_turn(ResumableLlmAgent(name="other", model=server.gemini()))
    (line,) = _lines(caplog, SUBCLASS)
    assert "ResumePolicy(" in line.getMessage()


async def test_under_install_the_subclass_says_nothing_more(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(startup_log, "_subclass_announced", False)
    caplog.set_level(logging.INFO)
    adk_live_resume.install()
    async with FakeLiveServer() as server:
        await _one_turn(ResumableLlmAgent(name="assistant", model=server.gemini()))
    assert len(_lines(caplog, INSTALLED)) == 1
    assert _lines(caplog, SUBCLASS) == []
