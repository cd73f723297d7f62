"""What a failed opening ahead leaves: the old connection closed, or serving on with its sends.

On goAway the next connection is opened ahead while the old one serves. When that opening
fails, :func:`failure_of` reads how: the server refused the resume beside the open socket (it
closed the connection opened ahead: the old one closes and later moves close first), a failure
a later try may not meet (HTTP 429 or 5xx, a timeout, a network error: the old connection
serves on, and the move is tried again after the wait, ``Retry-After`` at least), or anything
else (the old one closes).

Meanwhile the old connection takes no client send: each is recorded in the outbox (the next
connection gets it from there) and held in :class:`HeldSends` too. If the old connection
serves on (:class:`~.lifecycle_events.ServeOn`), what was held goes on it, in
order, before any later send (which waits there meanwhile).

Guarantees: the held sends go in the order they were held, each once, and a send that comes
while they go waits for them; they stop going as soon as the connection holds its sends again
(the next try at opening ahead began, or the connection is being taken down: the outbox has
them for the next connection); :meth:`HeldSends.stop` cancels and awaits the sending, so no
task outlives the connection.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from .errors import classify
from .policy import ResumePolicy

logger = logging.getLogger("adk_live_resume.loop")

#: Sends one held message on the old connection as it was recorded.
Send = Callable[[str, dict[str, Any]], Awaitable[None]]


class HeldSends:
    """The client sends held for the connection opened ahead, in order."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._held: list[tuple[str, dict[str, Any]]] = []
        self._sending: asyncio.Task[None] | None = None

    @property
    def sending(self) -> bool:
        """The held sends are going on the old connection: a later send waits its turn."""
        return self._sending is not None

    def hold(self, method: str, kwargs: dict[str, Any]) -> None:
        """Hold the send ``method(**kwargs)`` (recorded in the outbox already)."""
        self._held.append((method, kwargs))

    def send_on(
        self,
        send: Send,
        *,
        holding: Callable[[], bool],
        failed: Callable[[BaseException], None],
    ) -> None:
        """Send what is held with ``send``, in order, in a task of its own, until nothing is
        left or ``holding()`` says the connection holds its sends again; ``failed(error)``
        when a send raises (the rest stays in the outbox for the next connection)."""
        if not self._held or self._sending is not None:
            return

        async def go() -> None:
            try:
                while self._held and not holding():
                    method, kwargs = self._held.pop(0)
                    await send(method, kwargs)
            except Exception as error:
                failed(error)
            finally:
                self._sending = None

        self._sending = asyncio.get_running_loop().create_task(go(), name=self._name)

    async def stop(self) -> None:
        """The connection is over: stop sending (cancel the task and wait for it)."""
        task = self._sending
        if task is not None:
            task.cancel()
            await asyncio.wait({task})


@dataclass(frozen=True)
class Failure:
    """How an opening ahead failed: ``refused`` beside the open socket, or for now (then
    ``retry_in``: the seconds before the next try), or neither; ``described`` for the log."""

    refused: bool
    retry_in: float | None
    described: str

    def next_step(self) -> str:
        """What follows, in words for the log."""
        if self.refused:
            return "closing the old one first from now on"
        if self.retry_in is not None:
            return f"the old one serves on, the move is tried again in {self.retry_in:.1f} s"
        return "closing the old one"


def failure_of(error: BaseException, failures: int, policy: ResumePolicy) -> Failure:
    """How the opening ahead that raised ``error`` failed, the ``failures``-th on this
    connection: the wait before the next try is the policy's for that many (at least the
    server's ``Retry-After``)."""
    drop = classify(error)
    if drop is None:
        return Failure(refused=False, retry_in=None, described=repr(error))
    retry_in = None
    if drop.kind == "connect_failed":
        retry_in = max(drop.retry_after or 0.0, policy.wait_before(failures + 1))
    return Failure(drop.kind == "closed", retry_in, drop.describe())


class OpeningAhead:
    """One connection's side of the connection opened ahead to take over from it: the sends
    held for it, how its failures read (:func:`failure_of`), and the move's next try after
    one that leaves this connection serving on."""

    def __init__(self, number: int, policy: ResumePolicy) -> None:
        self._policy = policy
        self._held = HeldSends(f"adk_live_resume held sends #{number}")
        self._failures = 0
        self._timer: asyncio.TimerHandle | None = None

    def holds(self, method: str, kwargs: dict[str, Any], *, for_next: bool) -> bool:
        """Whether the send ``method(**kwargs)`` (recorded in the outbox) waits here: held
        for the connection opened ahead (``for_next``), or behind the held sends going on
        this connection."""
        if for_next or self._held.sending:
            self._held.hold(method, kwargs)
            return True
        return False

    def failed(self, error: BaseException) -> Failure:
        """The opening ahead raised ``error``: how it failed (logged at INFO)."""
        self._failures += 1
        failure = failure_of(error, self._failures, self._policy)
        logger.info(
            "opening the next connection while the old one was open failed (%s); %s",
            failure.described,
            failure.next_step(),
        )
        return failure

    def serve_on(
        self,
        wait: float,
        send: Send | None,
        *,
        holding: Callable[[], bool],
        failed: Callable[[BaseException], None],
        retry: Callable[[], None],
    ) -> None:
        """This connection serves on: the held sends go with ``send``
        (:meth:`HeldSends.send_on`), and ``retry()`` is called in ``wait`` seconds."""
        if send is not None:
            self._held.send_on(send, holding=holding, failed=failed)
        if self._timer is not None:
            self._timer.cancel()
        self._timer = asyncio.get_running_loop().call_later(wait, retry)

    async def stop(self) -> None:
        """The connection is over: no next try, no held send going."""
        if self._timer is not None:
            self._timer.cancel()
        await self._held.stop()
