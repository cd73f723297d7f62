"""Real ``adk api_server`` / ``adk web`` processes under our launcher, for end-to-end tests.

``start_adk`` runs ``python -m adk_live_resume adk <command> ... <agents>`` on 127.0.0.1 in its
own process group, with the checkout under test first on ``PYTHONPATH``, its environment
pointed at a fake server (``environment_variables``), its output in a log file; ``ready``
waits until it serves; ``AdkProcess.kill`` kills the whole group (every test calls it in a
``finally``). Nothing here reaches past 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import adk_live_resume
from adk_live_resume.testing import FakeLiveServer
from adk_live_resume.testing.client_config import environment_variables

#: Any request that bypasses NO_PROXY (so goes anywhere but 127.0.0.1) fails through this.
DEAD_PROXY = "http://127.0.0.1:9"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class AdkProcess:
    name: str
    port: int
    proc: subprocess.Popen[bytes]
    log: Path

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)  # the whole group: no survivor
            self.proc.wait(timeout=10)


def request(method: str, url: str, body: object = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    call = urllib.request.Request(
        url, data=data, method=method, headers={"Content-Type": "application/json"}
    )
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(call, timeout=30) as response:
        raw = response.read()
        if response.headers.get_content_type() == "text/event-stream":
            return raw.decode()
        return json.loads(raw)


async def http(method: str, url: str, body: object = None) -> Any:
    return await asyncio.to_thread(request, method, url, body)


def start_adk(
    name: str,
    cwd: Path,
    agents: Path,
    server: FakeLiveServer,
    *,
    command: str = "api_server",
    args: tuple[str, ...] = (),
    extra_env: dict[str, str] | None = None,
    vertex: bool = False,
) -> AdkProcess:
    """Start ``adk <command>`` through the launcher on a free port, pointed at ``server``."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ADK_LIVE_RESUME_")}
    # The package under test (this checkout), not whichever copy the venv has installed.
    env["PYTHONPATH"] = str(Path(adk_live_resume.__file__).resolve().parents[1])
    for removed in ("GEMINI_API_KEY", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION"):
        env.pop(removed, None)
    env.update(environment_variables(server, vertex=vertex))
    env.update(extra_env or {})
    log = cwd / f"adk-{name}.log"
    argv = [
        sys.executable,
        "-W",
        "ignore",
        "-m",
        "adk_live_resume",  # the launcher: adk-live-resume adk <command> ...
        "adk",
        command,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--no-reload",
        *args,
        str(agents),
    ]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    return AdkProcess(name, port, proc, log)


async def ready(process: AdkProcess, timeout: float = 90.0) -> None:
    """Wait until ``process`` answers ``GET /list-apps``; AssertionError with its log if not."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        if process.proc.poll() is not None:
            raise AssertionError(f"{process.name} exited:\n{process.tail()}")
        try:
            await http("GET", f"{process.http}/list-apps")
            return
        except (OSError, urllib.error.URLError) as error:
            if asyncio.get_running_loop().time() > deadline:
                message = f"{process.name} never served:\n{process.tail()}"
                raise AssertionError(message) from error
            await asyncio.sleep(0.25)


class LiveClient:
    """A browser stand-in on ``/run_live``: sends text turns, reads every event as JSON."""

    def __init__(self, websocket: Any) -> None:
        self.websocket = websocket
        self.raw: list[str] = []

    async def say(self, text: str, timeout: float = 20.0) -> str:
        message = {"content": {"role": "user", "parts": [{"text": text}]}}
        await self.websocket.send(json.dumps(message))
        pieces: list[str] = []
        async with asyncio.timeout(timeout):
            while True:
                frame = await self.websocket.recv()
                self.raw.append(frame)
                event = json.loads(frame)
                parts = (event.get("content") or {}).get("parts") or []
                if not event.get("partial"):
                    pieces.extend(p["text"] for p in parts if p.get("text"))
                if event.get("turnComplete") and pieces:
                    return "".join(pieces)


async def connect_live(process: AdkProcess, app: str, user: str, session_id: str) -> Any:
    """A websocket to ``process``'s ``/run_live`` (text modality) for one session."""
    from websockets.asyncio.client import connect

    url = (
        f"ws://127.0.0.1:{process.port}/run_live?app_name={app}&user_id={user}"
        f"&session_id={session_id}&modalities=TEXT"
    )
    return await connect(url, open_timeout=20, proxy=None)


def sse_texts(stream: str) -> list[str]:
    """The text of every non-partial event of a ``/run_sse`` response, in order."""
    texts = []
    for line in stream.splitlines():
        if not line.startswith("data:"):
            continue
        event = json.loads(line.removeprefix("data:"))
        parts = (event.get("content") or {}).get("parts") or []
        text = "".join(p.get("text") or "" for p in parts)
        if text and not event.get("partial"):
            texts.append(text)
    return texts
