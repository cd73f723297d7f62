"""A person's call in ADK's web UI survives a dropped connection and a goAway.

``adk web`` runs under our launcher (``adk-live-resume adk web``), pointed at the fake by
``environment_variables`` alone. Headless Chromium (Debian's ``chromium``, driven by Playwright
with ``executable_path``) opens the dev UI, sends a typed turn (``/run_sse``: the fake's REST
``streamGenerateContent``), then presses the call button: the fake microphone plays a WAV file
in a loop (speech-loud bursts and silence), the UI streams it on ``/run_live``. The fake then
drops the live connection (1011) and later sends a ``goAway``. The call must go on: each time a
later connection resumed with a handle and the fake *heard* audio on it (utterances are
identified by what the fake's voice activity detection heard: synthetic speech does not
survive Chromium's capture chain), the browser's one ``/run_live`` socket stayed open, and the
page showed no error. Every request of the page to a host other than 127.0.0.1 (web fonts) is
aborted, and the ADK process's proxies point at a dead port, so nothing leaves the machine.

Skipped, with the reason, where Chromium or Playwright is missing (``pip install
'adk-live-resume[browser]'``; ``apt-get install chromium``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import textwrap
import wave
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from adk_live_resume.testing import FakeLiveServer, silence_pcm, speech_pcm
from adk_live_resume.testing.records import ConnectionRecord
from adk_live_resume.testing.workers import start_adk, wait_ready

from .adk_processes import DEAD_PROXY

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

CHROMIUM = os.environ.get("ADK_LIVE_RESUME_CHROMIUM") or shutil.which("chromium") or ""
APP = "voice"
AGENT = textwrap.dedent(
    """
    from google.adk.agents import LlmAgent

    root_agent = LlmAgent(name="voice", model="gemini-live-fake", instruction="Be brief.")
    """
)
PROXIES = {name: DEAD_PROXY for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy")}


def _playwright() -> Any:
    if not CHROMIUM:
        pytest.skip("no chromium on PATH (apt-get install chromium)")
    module = pytest.importorskip(
        "playwright.async_api", reason="playwright missing (pip install 'adk-live-resume[browser]')"
    )
    return module.async_playwright


def _write_microphone(path: Path) -> None:
    """A WAV the fake hears as one utterance every 3.5 s: 1.5 s of loud speech, 2 s silence."""
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(16000)
        out.writeframes(speech_pcm("hello there", seconds=1.5) + silence_pcm(2.0))


def _spoke(record: ConnectionRecord) -> bool:
    return any(turn.how == "spoken" for turn in record.heard)


def _answered(record: ConnectionRecord) -> bool:
    """The connection heard an utterance and issued a handle after answering it."""
    return _spoke(record) and bool(record.handles_issued) and not record.finished


async def test_a_call_in_adk_web_keeps_going_through_a_drop_and_a_go_away(
    tmp_path: Path,
) -> None:
    async_playwright = _playwright()
    (tmp_path / "agents" / APP).mkdir(parents=True)
    (tmp_path / "agents" / APP / "__init__.py").write_text("from . import agent\n")
    (tmp_path / "agents" / APP / "agent.py").write_text(AGENT)
    microphone = tmp_path / "microphone.wav"
    _write_microphone(microphone)
    home = {"HOME": str(tmp_path)}  # ADK's telemetry choice is written under ~/.adk
    async with FakeLiveServer() as server:
        web = start_adk(
            "web",
            cwd=tmp_path,
            agents_dir=tmp_path / "agents",
            server=server,
            command="web",
            extra_env=home | PROXIES,
        )
        try:
            await wait_ready(web)
            async with async_playwright() as playwright:
                browser = await playwright.chromium.launch(
                    executable_path=CHROMIUM,
                    headless=True,
                    args=[
                        "--no-sandbox",
                        "--use-fake-ui-for-media-stream",
                        "--use-fake-device-for-media-stream",
                        f"--use-file-for-fake-audio-capture={microphone}",
                    ],
                )
                try:
                    await _call_through_faults(browser, web.http, server)
                finally:
                    await browser.close()
        finally:
            web.kill()


async def _call_through_faults(browser: Any, origin: str, server: FakeLiveServer) -> None:
    page = await browser.new_page()
    left_machine: list[str] = []
    page_errors: list[str] = []
    sockets: list[Any] = []
    page.on("pageerror", lambda error: page_errors.append(str(error)))
    page.on("websocket", lambda socket: sockets.append(socket))

    async def only_loopback(route: Any) -> None:
        if urlparse(route.request.url).hostname == "127.0.0.1":
            await route.continue_()
        else:
            left_machine.append(route.request.url)
            await route.abort()

    await page.route("**/*", only_loopback)
    await page.goto(f"{origin}/dev-ui/?app={APP}")
    no_thanks = page.get_by_role("button", name="No Thanks")  # ADK's telemetry question
    with contextlib.suppress(Exception):  # not asked (older ADK): nothing to dismiss
        await no_thanks.click(timeout=10_000)

    box = page.get_by_placeholder("Type a message...")
    await box.fill("typed hello")
    await box.press("Enter")
    await page.get_by_text("echo: typed hello").first.wait_for(timeout=30_000)
    assert [(c.status, c.answer) for c in server.rest_calls()] == [(200, "echo: typed hello")]

    await page.locator("button.audio-rec-btn").first.click(timeout=30_000)  # "call" or "mic"
    await server.wait_for(lambda: any(_answered(c) for c in server.connections), 60, what="speech")
    first = server.connections[-1]

    await server.close_open(1011, "drop")
    await server.wait_for(
        lambda: any(c.resumed and _spoke(c) for c in server.connections[first.index :]),
        60,
        what="speech on a connection resumed after the drop",
    )
    after_drop = next(c for c in server.connections[first.index :] if c.resumed and _spoke(c))
    await server.wait_for(lambda: _answered(server.connections[-1]), 60, what="a handle")
    warned = server.go_away_now(2.0)
    assert warned, "no open connection to warn"
    await server.wait_for(
        lambda: any(c.resumed and _spoke(c) for c in server.connections[max(warned) :]),
        60,
        what="speech on a connection resumed after the goAway",
    )

    handles = set(server.handles_issued())
    later = server.connections[first.index :]
    assert all(c.resume_handle in handles for c in later if c.resumed)
    assert after_drop.resume_handle in handles
    assert first.ended_by == "fault" and server.duplicate_history_sends() == 0
    live = [s for s in sockets if "/run_live" in s.url]
    assert len(live) == 1 and not live[0].is_closed(), "the browser's call socket was replaced"
    snack = page.locator("mat-snack-bar-container, .mat-mdc-snack-bar-container")
    assert await snack.count() == 0, await snack.all_inner_texts()
    # ADK 1.27's UI throws "Not implemented" from its lazyLoadMessages stub when the chat
    # scrolls (its own gap, not the call's): every other page error fails the test.
    assert [e for e in page_errors if e != "Not implemented"] == []
    print("aborted, not to 127.0.0.1:", sorted({urlparse(u).hostname or "" for u in left_machine}))
