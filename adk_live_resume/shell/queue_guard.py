"""The live loop's hold on one ``LiveRequestQueue``: no request lost, a close never missed.

ADK's send step does ``request = await queue.get()``, then its own work for the request
(appending the user event to the ADK session, callbacks), then the socket send. Stock ADK
loses the request if the connection dies in between. :class:`QueueGuard` wraps ``get`` and
``close`` of that one queue object:

* it knows the request *in hand* (taken, not yet at the socket) until :meth:`mark_sent`;
* :meth:`pause` makes ``get`` hand out nothing more (the sender of a dead connection must
  not take requests meant for the next one) until :meth:`resume`;
* :meth:`wait_idle` lets the loop wait until the sender finished ADK's work for the request
  in hand, exactly once (its send then goes to the outbox, not to the dead socket): ADK's
  work (the session write, the screening callbacks) is never cut short when the session moves
  to a new connection;
* :meth:`on_withheld` reports a user turn the sender took and came back from without sending
  it (ADK's screening blocked it: :mod:`adk_live_resume.conversation.withheld`);
* :meth:`on_content` reports every ``send_content`` as it is queued (ADK queues the response
  of a NON_BLOCKING tool that way before its background task ends);
* ``close()`` on the queue is seen at once (:attr:`close_requested`, :meth:`wait_closed`,
  :meth:`on_close`), so closing it during an outage ends the run without a new connection.

A request taken off the queue is never handed out again: what ADK sends for it is in the
outbox, which replays it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any


class QueueGuard:
    """Wraps ``get``, ``send_content`` and ``close`` of one ``LiveRequestQueue``; undo with
    :meth:`release`."""

    def __init__(self, queue: Any) -> None:
        self.queue = queue
        self._original_get = queue.get
        self._original_close = queue.close
        self._original_send_content = queue.send_content
        self._content_callbacks: list[Callable[[Any], None]] = []
        self._withheld_callbacks: list[Callable[[Any], None]] = []
        self._in_hand: Any = None
        self._sent = False
        self._idle = asyncio.Event()
        self._idle.set()
        self._open = asyncio.Event()
        self._open.set()
        self._closed = asyncio.Event()
        self._close_callbacks: list[Callable[[], None]] = []
        #: Requests in the sender's hand when their connection ended, carried to the next.
        self.recovered = 0
        queue.get = self.get
        queue.close = self.close
        queue.send_content = self.send_content

    def note_recovered(self) -> None:
        """A request was in the sender's hand when its connection ended: carried to the next."""
        self.recovered += 1

    # -- the wrapped queue methods --------------------------------------------------------

    async def get(self) -> Any:
        previous, self._in_hand = self._in_hand, None
        if previous is not None and not self._sent:
            self._withheld(previous)
        self._idle.set()
        if not self._open.is_set():
            await self._open.wait()
        request = await self._original_get()
        self._in_hand, self._sent = request, False
        if not getattr(request, "close", False):
            self._idle.clear()
        return request

    def send_content(self, content: Any, *args: Any, **kwargs: Any) -> None:
        for callback in list(self._content_callbacks):
            callback(content)
        self._original_send_content(content, *args, **kwargs)

    def _withheld(self, request: Any) -> None:
        """ADK's send step came back for the next request without sending ``request``: its
        screening (``before_model_callback``) blocked it."""
        content = getattr(request, "content", None)
        parts = getattr(content, "parts", None) or []
        if content is None or any(getattr(p, "function_response", None) for p in parts):
            return
        for callback in list(self._withheld_callbacks):
            callback(content)

    def on_withheld(self, callback: Callable[[Any], None]) -> None:
        """Call ``callback(content)`` for every user turn the send step took and came back
        from without sending (blocked by its screening); the callback must not raise."""
        self._withheld_callbacks.append(callback)

    def on_content(self, callback: Callable[[Any], None]) -> None:
        """Call ``callback(content)`` for every ``send_content``, before it is queued; the
        callback must not raise."""
        self._content_callbacks.append(callback)

    def close(self) -> None:
        self._closed.set()
        for callback in list(self._close_callbacks):
            callback()
        self._original_close()

    # -- the request in hand --------------------------------------------------------------

    @property
    def in_hand(self) -> bool:
        """A request was taken off the queue and has not reached the socket yet."""
        return self._in_hand is not None and not self._sent

    def mark_sent(self) -> None:
        """The request in hand reached the socket (the outbox has it now)."""
        self._sent = True
        self._idle.set()

    async def wait_idle(self, timeout: float | None) -> bool:
        """Wait until no request is in hand (at most ``timeout`` s, ``None``: as long as it
        takes); return whether that happened in time."""
        try:
            await asyncio.wait_for(self._idle.wait(), timeout)
        except TimeoutError:
            return False
        return True

    # -- pausing --------------------------------------------------------------------------

    def pause(self) -> None:
        """``get`` hands out nothing until :meth:`resume`."""
        self._open.clear()

    def resume(self) -> None:
        self._open.set()

    # -- closing --------------------------------------------------------------------------

    @property
    def close_requested(self) -> bool:
        return self._closed.is_set()

    async def wait_closed(self, timeout: float) -> bool:
        """Wait up to ``timeout`` s for ``close()``; return whether it was called."""
        if self._closed.is_set() or timeout <= 0:
            return self._closed.is_set()
        try:
            await asyncio.wait_for(self._closed.wait(), timeout)
        except TimeoutError:
            return False
        return True

    def on_close(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` when ``close()`` is called; return a function that unregisters it."""
        if self._closed.is_set():
            callback()
            return lambda: None
        self._close_callbacks.append(callback)
        return lambda: self._close_callbacks.remove(callback)

    def release(self) -> None:
        """Restore the queue's own methods."""
        self._open.set()
        if self.queue.__dict__.get("get") == self.get:
            del self.queue.get
        if self.queue.__dict__.get("close") == self.close:
            del self.queue.close
        if self.queue.__dict__.get("send_content") == self.send_content:
            del self.queue.send_content
