"""The fake Gemini Live server in a child process, so that the benchmark process's CPU time
and traced memory are the client's alone.

::

    async with FakeServerProcess(chunk_delay=0.0, session_limit=None) as server:
        agent = LlmAgent(name="a", model=server.gemini())

The child runs :class:`adk_live_resume.testing.FakeLiveServer` with the given settings (JSON;
``handle_schedule`` as a dict of :class:`~adk_live_resume.testing.HandleSchedule` fields),
prints its address as one JSON line and serves until its stdin closes. Nothing is controlled
after the start: these benchmarks inject no faults.
"""

from __future__ import annotations

import asyncio
import json
import sys
from types import TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from google.adk.models import Gemini

_CHILD = """
import asyncio, json, sys
from adk_live_resume.testing import FakeLiveServer, HandleSchedule

async def serve(settings):
    schedule = settings.pop("handle_schedule", None)
    if schedule is not None:
        settings["handle_schedule"] = HandleSchedule(**schedule)
    async with FakeLiveServer(**settings) as server:
        print(json.dumps({"base_url": server.base_url, "cert_path": server.cert_path}), flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)

asyncio.run(serve(json.loads(sys.argv[1])))
"""


class FakeServerProcess:
    """A :class:`~adk_live_resume.testing.FakeLiveServer` in a child process."""

    def __init__(self, **settings: Any) -> None:
        self.settings = settings
        self.base_url = ""
        self.cert_path = ""
        self._process: asyncio.subprocess.Process | None = None

    async def __aenter__(self) -> FakeServerProcess:
        self._process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            _CHILD,
            json.dumps(self.settings),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        assert self._process.stdout is not None
        line = await asyncio.wait_for(self._process.stdout.readline(), 60.0)
        if not line:
            raise RuntimeError("the fake server process ended before it said where it listens")
        address = json.loads(line)
        self.base_url, self.cert_path = address["base_url"], address["cert_path"]
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        process = self._process
        if process is None:
            return
        assert process.stdin is not None
        process.stdin.close()
        try:
            await asyncio.wait_for(process.wait(), 10.0)
        except TimeoutError:
            process.kill()
            await process.wait()

    def gemini(self) -> Gemini:
        """An ADK ``Gemini`` model bound to the child's server."""
        from adk_live_resume.fault_proxy.client_config import fake_gemini

        return fake_gemini(self)
