"""Keep the request ADK's sender had already taken off ``LiveRequestQueue`` when a socket died.

ADK's send step does ``request = await queue.get()``, then some work (session events,
callbacks), then the socket send. If the connection is lost in between, the request is in
nobody's hands: stock ADK loses it in every release. :class:`QueueGuard` wraps the queue's
``get`` on that one queue object: it remembers the request in hand until a send for it is
seen, and :meth:`recover` puts an unsent request back at the front for the next connection.

A request that *was* handed to the socket is not put back: the outbox replays it (sending it
twice would be worse than the loss we prevent).
"""

from __future__ import annotations

import collections
from typing import Any


class QueueGuard:
    """Wraps ``queue.get`` of one ``LiveRequestQueue``; undo with :meth:`release`."""

    def __init__(self, queue: Any) -> None:
        self.queue = queue
        self._original_get = queue.get
        self._pushback: collections.deque[Any] = collections.deque()
        self._in_hand: Any = None
        self._sent = False
        self.recovered = 0
        queue.get = self.get

    async def get(self) -> Any:
        self._in_hand = None
        request = self._pushback.popleft() if self._pushback else await self._original_get()
        self._in_hand, self._sent = request, False
        return request

    def mark_sent(self) -> None:
        """The request in hand reached the socket (the outbox has it now)."""
        self._sent = True

    def recover(self) -> bool:
        """After the send task ended: put an unsent request back first in line."""
        request, self._in_hand = self._in_hand, None
        if request is None or self._sent or getattr(request, "close", False):
            return False
        self._pushback.appendleft(request)
        self.recovered += 1
        return True

    def release(self) -> None:
        """Restore the queue's own ``get``; pending put-backs go back into the queue."""
        if self.queue.__dict__.get("get") == self.get:
            del self.queue.get
        for request in reversed(self._pushback):
            self.queue.send(request)
        self._pushback.clear()
