"""Random faults for the chaos tests: one per connection, every retryable style."""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator, Awaitable

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
    how to replay it alone (``replay``: the environment variable and test file)."""
    try:
        async with asyncio.timeout(timeout):
            await run
    except BaseException as error:
        raise AssertionError(
            f"{name} seed {seed} failed: {description}\nreplay it alone: {replay.format(seed=seed)}"
        ) from error
