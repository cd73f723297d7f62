"""Random faults for the chaos tests: one per connection, every retryable style."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import logging.handlers
import os
import random
import sys
from collections.abc import AsyncIterator, Awaitable, Iterator
from pathlib import Path

from adk_live_resume.testing import FakeLiveServer, Fault

#: Close codes a resume is worth a try after (1006 comes from aborts).
RETRYABLE = [1000, 1001, 1011, 1012, 1013, 1014]


def random_fault(
    rng: random.Random,
    connection: int,
    *,
    messages: tuple[int, int] = (1, 12),
    seconds: tuple[float, float] = (0.02, 0.4),
) -> Fault:
    """A fault for ``connection``: a close or abort after some client messages or seconds,
    mid-answer, mid-tool-call, and from the second connection on also during the reconnect
    or a refused handle."""
    choices = ["close", "abort", "mid_turn", "mid_tool_call", "after_seconds"]
    if connection > 1:
        choices += ["during_reconnect", "refuse_resume"]
    choice = rng.choice(choices)
    code = rng.choice(RETRYABLE)
    if choice == "close":
        return Fault.close(code, after_client_messages=rng.randint(*messages))
    if choice == "abort":
        return Fault.abort(after_client_messages=rng.randint(*messages))
    if choice == "mid_turn":
        return (
            Fault.abort(mid_turn=True) if rng.random() < 0.5 else Fault.close(code, mid_turn=True)
        )
    if choice == "mid_tool_call":
        return Fault.close(code, mid_tool_call=True)
    if choice == "after_seconds":
        return Fault.abort(after_seconds=rng.uniform(*seconds))
    if choice == "during_reconnect":
        return Fault.close(code, after_setup=True)
    return Fault.refuse_resume()


@contextlib.asynccontextmanager
async def restart_after(server: FakeLiveServer, delay: float | None) -> AsyncIterator[None]:
    """Restart ``server`` (every socket dropped) ``delay`` s into the block; None: never."""

    async def restart_later(seconds: float) -> None:
        await asyncio.sleep(seconds)
        await server.restart()

    task = asyncio.create_task(restart_later(delay)) if delay is not None else None
    try:
        yield
    finally:
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


async def run_seed(
    name: str, seed: int, description: str, run: Awaitable[None], *, timeout: float, replay: str
) -> None:
    """Run one chaos seed under a hard ``timeout``; a failure names the seed, its plan and
    how to replay it alone (``replay``: the environment variable and test file).

    With ``SOAK_FAILURE_LOGS`` set to a folder, a failing seed also leaves the
    package's DEBUG log of its run there (every frame the fake saw, the loop's decisions):
    a failure seen once under load can be read without reproducing it."""
    try:
        with _log_kept_on_failure(f"{name.replace(' ', '_')}-{seed}"):
            async with asyncio.timeout(timeout):
                await run
    except BaseException as error:
        raise AssertionError(
            f"{name} seed {seed} failed: {description}\nreplay it alone: {replay.format(seed=seed)}"
        ) from error


@contextlib.contextmanager
def _log_kept_on_failure(name: str) -> Iterator[None]:
    """Keep the package's records (``SOAK_FAILURE_LOG_LEVEL``, DEBUG by default) while the
    block runs, formatted only if it raises, then written to ``$SOAK_FAILURE_LOGS/<name>.log``
    with the wire summary (nothing when the variable is unset)."""
    folder = os.environ.get("SOAK_FAILURE_LOGS")
    if not folder:
        yield
        return
    _watched_servers.clear()
    handler = logging.handlers.BufferingHandler(capacity=sys.maxsize)  # (never flushed)
    formatter = logging.Formatter("%(relativeCreated)9.1f %(levelname)-7s %(name)s: %(message)s")
    package = logging.getLogger("adk_live_resume")
    level = package.level
    # (SOAK_FAILURE_LOG_LEVEL=INFO keeps the run's timing closest to a run without the log)
    package.setLevel(os.environ.get("SOAK_FAILURE_LOG_LEVEL", "DEBUG"))
    # (every frame formatted as it passes would slow the run down enough to hide a race:
    # the fake's records are summed up after a failure instead)
    frames = logging.getLogger("adk_live_resume.testing.frames")
    frames_level = frames.level
    frames.setLevel(logging.INFO)
    package.addHandler(handler)
    try:
        yield
    except BaseException:
        records = [formatter.format(record) for record in handler.buffer] + _wire_summary()
        Path(folder).mkdir(parents=True, exist_ok=True)
        Path(folder, f"{name}.log").write_text("\n".join(records) + "\n")
        raise
    finally:
        package.removeHandler(handler)
        package.setLevel(level)
        frames.setLevel(frames_level)
        _watched_servers.clear()


#: The fake servers of the seed running now (:func:`watch_wire`), summed up if it fails.
_watched_servers: list[FakeLiveServer] = []


def watch_wire(server: FakeLiveServer) -> None:
    """Sum up what ``server`` received if the seed running now fails (with
    ``SOAK_FAILURE_LOGS`` set; without it nothing is kept, so no seed's server outlives it)."""
    if os.environ.get("SOAK_FAILURE_LOGS"):
        _watched_servers.append(server)


def _wire_summary() -> list[str]:
    """Each connection of the watched servers: its record, then every client message but
    the microphone's chunks, cut to 300 characters."""
    lines = []
    for server in _watched_servers:
        for record in server.connections:
            lines.append(f"== {record}")
            audio = 0
            for n, message in enumerate(record.client_messages):
                text = json.dumps(message)
                if ("realtimeInput" in text or "realtime_input" in text) and (
                    '"audio"' in text or "mediaChunks" in text or "media_chunks" in text
                ):
                    audio += 1
                    continue
                lines.append(f"  #{n} (after {audio} audio) {text[:300]}")
            lines.append(f"  ({audio} audio chunks in all)")
    return lines
