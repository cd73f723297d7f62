"""``adk api_server`` / ``adk web`` processes under the launcher, as deployed, for tests.

:func:`start_adk` starts ``python -m adk_live_resume adk <command>`` (the launcher) on a free
port of 127.0.0.1, talking to a fake Live server (its ``base_url`` and ``cert_path``, in
either dialect); :func:`start_api_worker` is an ``api_server`` worker with its sessions at
``--session_service_uri``. The process imports the same
``adk_live_resume`` as the caller (its checkout goes first on ``PYTHONPATH``), never reads the
caller's ``ADK_LIVE_RESUME_*`` or Google credentials, and is started with
:func:`~adk_live_resume.testing.children.spawn`: in a process group of its own, so
:meth:`ApiWorker.kill` (SIGKILL) leaves no survivor, reaped at interpreter exit, and on Linux
sent SIGTERM when the caller dies, even by SIGKILL.
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

from ..fault_proxy.client_config import _ServerAddress, environment_variables
from .children import reap, spawn

__all__ = [
    "ApiWorker",
    "RunLiveClient",
    "child_environment",
    "free_port",
    "http_json",
    "start_adk",
    "start_api_worker",
    "wait_ready",
]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class ApiWorker:
    """One ``adk api_server`` process (``argv`` and ``env`` start it again, on ``port``)."""

    name: str
    port: int
    proc: subprocess.Popen[bytes]
    log: Path
    argv: tuple[str, ...] = ()
    env: dict[str, str] | None = None

    def lost_its_port(self) -> bool:
        """Whether the process exited because its port was taken before it could bind it
        (:func:`free_port` only finds a port free; another process, such as any TLS client's
        ephemeral port, may take it before the child binds it)."""
        return self.proc.poll() is not None and "address already in use" in self.tail()

    def restart_on_a_new_port(self) -> None:
        """Start the same command again on another free port (after :meth:`lost_its_port`)."""
        self.port = free_port()
        argv = list(self.argv)
        argv[argv.index("--port") + 1] = str(self.port)
        self.argv = tuple(argv)
        with self.log.open("wb") as out:
            self.proc = spawn(
                argv, cwd=self.log.parent, env=self.env, stdout=out, stderr=subprocess.STDOUT
            )

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]

    def kill(self) -> None:
        """SIGKILL the worker's whole process group (no survivor) and reap it; never raises."""
        reap(self.proc, signal.SIGKILL)


def _request(method: str, url: str, body: object = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        url, data=data, method=method, headers={"Content-Type": "application/json"}
    )
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # (127.0.0.1 only)
    with direct.open(request, timeout=30) as response:
        raw = response.read()
        if response.headers.get_content_type() == "text/event-stream":
            return raw.decode()
        return json.loads(raw)


async def http_json(method: str, url: str, body: object = None) -> Any:
    """An HTTP request with a JSON body and answer (an event stream's text as it came), in a
    thread: it never blocks the loop. Never through a proxy."""
    return await asyncio.to_thread(_request, method, url, body)


def child_environment(
    server: _ServerAddress, *, vertex: bool = False, extra_env: dict[str, str] | None = None
) -> dict[str, str]:
    """The environment of a child process pointed at ``server``: this one's, without the
    caller's ``ADK_LIVE_RESUME_*`` settings or Google credentials, with the
    ``adk_live_resume`` the caller imported first on ``PYTHONPATH`` (not another checkout's),
    then ``extra_env``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ADK_LIVE_RESUME_")}
    for removed in ("GEMINI_API_KEY", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION"):
        env.pop(removed, None)
    env["PYTHONPATH"] = str(Path(adk_live_resume.__file__).resolve().parents[1])
    env.update(environment_variables(server, vertex=vertex))
    env.update(extra_env or {})
    return env


def start_api_worker(
    name: str,
    *,
    cwd: Path,
    agents_dir: Path,
    server: _ServerAddress,
    session_uri: str,
    extra_env: dict[str, str] | None = None,
) -> ApiWorker:
    """Start one ``api_server`` worker; its output goes to ``<cwd>/worker-<name>.log``."""
    return start_adk(
        f"worker-{name}",
        cwd=cwd,
        agents_dir=agents_dir,
        server=server,
        args=("--session_service_uri", session_uri),
        extra_env=extra_env,
    )


def start_adk(
    name: str,
    *,
    cwd: Path,
    agents_dir: Path,
    server: _ServerAddress,
    command: str = "api_server",
    args: tuple[str, ...] = (),
    launcher_args: tuple[str, ...] = (),
    extra_env: dict[str, str] | None = None,
    vertex: bool = False,
) -> ApiWorker:
    """Start ``adk-live-resume [launcher_args] adk <command> [args] <agents_dir>`` on a free
    port, pointed at ``server`` (Vertex AI's dialect with ``vertex``); its output goes to
    ``<cwd>/<name>.log``."""
    port = free_port()
    env = child_environment(server, vertex=vertex, extra_env=extra_env)
    log = cwd / f"{name}.log"
    argv = [sys.executable, "-W", "ignore", "-m", "adk_live_resume", *launcher_args]
    argv += ["adk", command]
    argv += ["--host", "127.0.0.1", "--port", str(port), "--no-reload", *args, str(agents_dir)]
    with log.open("wb") as out:
        proc = spawn(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
    return ApiWorker(name, port, proc, log, tuple(argv), env)


async def wait_ready(worker: ApiWorker, timeout: float = 90.0) -> None:
    """Wait until ``worker`` serves HTTP; raises ``AssertionError`` with its log if it exits
    or does not serve within ``timeout`` seconds. A worker whose port was taken before it
    bound it is started again on another port (at most twice)."""
    deadline = asyncio.get_running_loop().time() + timeout
    moves = 0
    while True:
        if worker.lost_its_port() and moves < 2:
            moves += 1
            worker.restart_on_a_new_port()
        if worker.proc.poll() is not None:
            raise AssertionError(f"{worker.name} exited:\n{worker.tail()}")
        try:
            await http_json("GET", f"{worker.http}/list-apps")
            return
        except (OSError, urllib.error.URLError) as error:
            if asyncio.get_running_loop().time() > deadline:
                message = f"{worker.name} never served:\n{worker.tail()}"
                raise AssertionError(message) from error
            await asyncio.sleep(0.25)


class RunLiveClient:
    """A browser stand-in on a worker's ``/run_live``: typed turns in, every frame kept
    (:attr:`raw`), every finished model answer in order (:attr:`answers`)."""

    def __init__(self, websocket: Any) -> None:
        self.websocket = websocket
        self.raw: list[str] = []
        self.answers: list[str] = []
        self._read = 0
        self._pieces: list[str] = []

    @classmethod
    async def connect(
        cls, worker: ApiWorker, *, app: str, user: str, session_id: str, timeout: float = 60.0
    ) -> RunLiveClient:
        from websockets.asyncio.client import connect

        url = (
            f"ws://127.0.0.1:{worker.port}/run_live?app_name={app}&user_id={user}"
            f"&session_id={session_id}&modalities=TEXT"
        )
        return cls(await connect(url, open_timeout=timeout, proxy=None))

    async def send_text(self, text: str) -> None:
        message = {"content": {"role": "user", "parts": [{"text": text}]}}
        await self.websocket.send(json.dumps(message))

    async def say(self, text: str, want: Any = None, timeout: float = 30.0) -> str:
        """Send ``text``; the next finished answer (that satisfies ``want``, if given)."""
        await self.send_text(text)
        return await self.next_answer(want, timeout)

    async def next_answer(self, want: Any = None, timeout: float = 30.0) -> str:
        """The next finished answer not returned before (answers that do not satisfy
        ``want`` are passed over, and stay in :attr:`answers`)."""
        async with asyncio.timeout(timeout):
            while True:
                while self._read < len(self.answers):
                    text = self.answers[self._read]
                    self._read += 1
                    if want is None or want(text):
                        return text
                frame = await self.websocket.recv()
                self.raw.append(frame)
                event = json.loads(frame)
                parts = (event.get("content") or {}).get("parts") or []
                if not event.get("partial"):
                    self._pieces.extend(p["text"] for p in parts if p.get("text"))
                if event.get("turnComplete") and self._pieces:
                    self.answers.append("".join(self._pieces))
                    self._pieces = []

    async def closed(self, timeout: float) -> None:
        """Wait until the worker's end of the socket is gone."""
        from websockets.exceptions import ConnectionClosed

        async with asyncio.timeout(timeout):
            try:
                while True:
                    self.raw.append(await self.websocket.recv())
            except ConnectionClosed:
                return
