"""The fake Gemini Live server of ``benchmarks/scale.py``, in a process of its own.

Run by ``scale.py`` and ``voice_scale.py`` (not a benchmark itself: helper modules start with
``_``)::

    python benchmarks/_scale_server.py ['<settings JSON>']

It starts a :class:`~adk_live_resume.testing.FakeLiveServer` (by default no goAway within the
run, handles after every turn, answers 5 ms a chunk; the settings JSON, if given, is the
server's keyword arguments instead) and a control channel: a plain TCP line protocol on
127.0.0.1. Its first line on stdout is JSON: ``{"base_url", "cert_path", "control_port",
"pid"}``. Commands, one JSON reply line each:

* ``drop``: drop every open socket at once, without a close frame (a server restart:
  ``FakeLiveServer.restart``); replies ``{"dropped": n, "at": t, "done": t}`` (``at`` and
  ``done`` are ``time.monotonic()``, which on Linux is one clock for every process);
* ``goaway <seconds>``: send ``goAway`` with that ``timeLeft`` on every open connection now
  (``FakeLiveServer.go_away_now``); replies ``{"warned": n, "at": t}``;
* ``heard <path>``: write every connection's record, as ``_voice_mic.heard_by_connection``
  sums it up (timestamps, session, the audio chunks it received), to ``path`` as JSON;
  replies ``{"connections": n}``;
* ``count``: ``{"connections": n, "open": n}``;
* ``quit``: stop the server and exit.

It also exits when its stdin closes (the benchmark ended or died).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from adk_live_resume.testing import FakeLiveServer, HandleSchedule
from adk_live_resume.testing.children import reap, spawn

HERE = Path(__file__).resolve().parent


@contextlib.contextmanager
def running(settings: dict[str, Any] | None = None) -> Iterator[dict[str, Any]]:
    """This server in a process of its own (for a benchmark); yields its hello line, parsed.
    ``settings``: the ``FakeLiveServer``'s keyword arguments (JSON values), if not the
    default. The process is stopped (its stdin closed, killed after 30 s) when the block
    ends."""
    extra = [json.dumps(settings)] if settings is not None else []
    server = spawn(
        [sys.executable, str(HERE / "_scale_server.py"), *extra],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        hello = server.stdout.readline()
        if not hello:
            raise RuntimeError("the fake server process did not start")
        yield json.loads(hello)
    finally:
        if server.stdin is not None:
            server.stdin.close()  # the server exits when its stdin closes
        with contextlib.suppress(subprocess.TimeoutExpired):
            server.wait(timeout=30)
        reap(server, signal.SIGKILL)


def raise_fd_limit() -> int:
    """Raise this process's open-file limit to its hard limit; return the new soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


async def _control(
    server: FakeLiveServer,
    stop: asyncio.Event,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
) -> None:
    while line := await reader.readline():
        reply: dict[str, object]
        command = line.decode().strip()
        if command == "drop":
            at = time.monotonic()
            dropped = server.open_connections()
            await server.restart(timeout=120.0)
            reply = {"dropped": dropped, "at": at, "done": time.monotonic()}
        elif command.startswith("goaway "):
            at = time.monotonic()
            warned = server.go_away_now(float(command.split()[1]))
            reply = {"warned": len(warned), "at": at}
        elif command.startswith("heard "):
            from _voice_mic import heard_by_connection

            summary = heard_by_connection(list(server.connections))
            # written in one go while the server waits: the round is over, nothing streams
            Path(command.split(maxsplit=1)[1]).write_text(json.dumps(summary))  # noqa: ASYNC240
            reply = {"connections": len(summary)}
        elif command == "count":
            reply = {"connections": len(server.connections), "open": server.open_connections()}
        elif command == "quit":
            stop.set()
            reply = {"quit": True}
        else:
            reply = {
                "error": f"unknown command {command!r}: drop, goaway <s>, heard <path>, count"
                " or quit"
            }
        writer.write((json.dumps(reply) + "\n").encode())
        await writer.drain()
    writer.close()


def _settings(argv: list[str]) -> dict[str, Any]:
    """The server's keyword arguments: the JSON argument, if any (``handle_schedule`` as a
    dict of :class:`~adk_live_resume.testing.HandleSchedule` fields)."""
    if not argv:
        return {"chunk_delay": 0.005}
    settings: dict[str, Any] = json.loads(argv[0])
    if isinstance(settings.get("handle_schedule"), dict):
        settings["handle_schedule"] = HandleSchedule(**settings["handle_schedule"])
    return settings


async def _main() -> None:
    fd_limit = raise_fd_limit()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    async with FakeLiveServer(**_settings(sys.argv[1:])) as server:
        control = await asyncio.start_server(
            lambda r, w: _control(server, stop, r, w), "127.0.0.1", 0
        )
        port = control.sockets[0].getsockname()[1]
        hello = {
            "base_url": server.base_url,
            "cert_path": server.cert_path,
            "control_port": port,
            "pid": os.getpid(),
            "fd_limit": fd_limit,
        }
        print(json.dumps(hello), flush=True)
        stdin = sys.stdin.fileno()

        def on_stdin() -> None:
            if not os.read(stdin, 4096):
                stop.set()

        loop.add_reader(stdin, on_stdin)
        await stop.wait()
        loop.remove_reader(stdin)
        control.close()
        await control.wait_closed()


if __name__ == "__main__":
    asyncio.run(_main())
