"""``python -m adk_live_resume.testing serve``: keep a fake server running for a person.

Starts a :class:`~adk_live_resume.testing.FakeLiveServer` (Live and REST on one TLS port on
127.0.0.1), prints the environment that points google-genai and google-adk at it as
``export NAME=VALUE`` lines (values shell-quoted; other lines start with ``#``, so the whole
output can be pasted into a POSIX shell), then serves until interrupted (Ctrl-C or SIGTERM),
when it stops cleanly and exits 0. With that environment, ``adk web`` (or ``adk-live-resume adk
web``) and every ``genai.Client()`` reach the fake only.

The certificate lives in a temporary file that exists while the server runs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import shlex
import signal
import sys
from typing import TextIO

from ..fault_proxy.client_config import environment_variables
from .server import FakeLiveServer

__all__ = ["add_arguments", "export_lines", "serve"]


def export_lines(variables: dict[str, str]) -> list[str]:
    """``export NAME=VALUE`` lines, values quoted for a POSIX shell, in the given order."""
    return [f"export {name}={shlex.quote(value)}" for name, value in variables.items()]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``serve`` command's options."""
    parser.add_argument(
        "--port", type=int, default=0, help="TCP port on 127.0.0.1 (default: any free port)"
    )
    parser.add_argument(
        "--vertex",
        action="store_true",
        help="print the Vertex AI dialect's environment (express mode) instead of the Gemini API's",
    )
    parser.add_argument(
        "--time-scale",
        type=float,
        default=1.0,
        help="real seconds per service second (default 1: a connection lasts 10 minutes)",
    )


async def serve(
    *,
    port: int = 0,
    vertex: bool = False,
    time_scale: float = 1.0,
    out: TextIO = sys.stdout,
    stop: asyncio.Event | None = None,
) -> int:
    """Run the fake until ``stop`` is set (or SIGINT / SIGTERM arrives); returns 0."""
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    handled = []
    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signum, stop.set)
            handled.append(signum)
    try:
        async with FakeLiveServer(port=port, time_scale=time_scale) as server:
            dialect = "Vertex AI (express mode)" if vertex else "Gemini API"
            print(f"# fake Gemini server ({dialect}) on {server.base_url}", file=out)
            print("# paste these lines into the shell that runs adk web:", file=out)
            for line in export_lines(environment_variables(server, vertex=vertex)):
                print(line, file=out)
            print("# serving; Ctrl-C stops", file=out, flush=True)
            await stop.wait()
            print(
                f"# stopped after {len(server.connections)} live connections and "
                f"{len(server.rest_calls())} REST requests",
                file=out,
                flush=True,
            )
    finally:
        for signum in handled:
            loop.remove_signal_handler(signum)
    return 0
