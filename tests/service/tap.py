"""Read a live session's raw server messages (JSON as sent) while google-genai parses them."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from typing import Any

from google.genai import errors

JsonDict = dict[str, Any]


class Tap:
    """Every server message of ``session`` as a dict, in order, and how the session ended.

    A task reads ``session.receive()`` turn after turn; :meth:`wait` waits for a condition on
    :attr:`frames` (or the end)."""

    def __init__(self, session: Any) -> None:
        self.frames: list[JsonDict] = []
        self.error: errors.APIError | None = None
        self.ended = False
        self._changed = asyncio.Event()
        ws = session._ws  # google-genai's websocket: the raw JSON is not kept elsewhere
        original = ws.recv

        async def recv(*args: Any, **kwargs: Any) -> Any:
            raw = await original(*args, **kwargs)
            with contextlib.suppress(ValueError, TypeError):
                value = json.loads(raw)
                if isinstance(value, dict):
                    self.frames.append(value)
            self._changed.set()
            return raw

        ws.recv = recv
        self._task = asyncio.get_running_loop().create_task(self._pump(session))

    async def _pump(self, session: Any) -> None:
        try:
            while True:
                async for _ in session.receive():
                    pass
        except errors.APIError as error:
            self.error = error
        except Exception:  # the socket's own errors end the session all the same
            pass
        finally:
            self.ended = True
            self._changed.set()

    async def wait(self, predicate: Callable[[Tap], bool], timeout: float, what: str) -> None:
        """Until ``predicate(self)``; AssertionError naming ``what`` on timeout or on an end
        of the session before it."""
        async with asyncio.timeout(timeout):
            while not predicate(self):
                if self.ended:
                    raise AssertionError(f"session ended ({self.error!r}) before {what}")
                self._changed.clear()
                await self._changed.wait()

    async def wait_end(self, timeout: float) -> errors.APIError | None:
        async with asyncio.timeout(timeout):
            while not self.ended:
                self._changed.clear()
                await self._changed.wait()
        return self.error

    def close(self) -> None:
        self._task.cancel()

    # ---- reading frames --------------------------------------------------------------------

    def index(self, predicate: Callable[[JsonDict], bool], start: int = 0) -> int | None:
        return next((i for i, f in enumerate(self.frames) if i >= start and predicate(f)), None)


def turn_complete(frame: JsonDict) -> bool:
    return bool((frame.get("serverContent") or {}).get("turnComplete"))


def update(frame: JsonDict) -> JsonDict | None:
    value = frame.get("sessionResumptionUpdate")
    return value if isinstance(value, dict) else None


def has_handle(frame: JsonDict) -> bool:
    found = update(frame)
    return bool(found and found.get("newHandle"))


def tool_call(frame: JsonDict) -> bool:
    return "toolCall" in frame
