"""The resumption state of one live session: which handle to resume with, and when it is safe.

Rules (from the Gemini Live API documentation and the bugs this project fixes):

* Only an update with ``resumable=True`` and a non-empty ``new_handle`` replaces the handle.
  An update without a handle (the server sends ``{}`` or ``resumable=false`` while the model
  generates or a tool call is pending) never erases the last good one; an empty ``{}``
  (recorded every 0.5-1 s, with or without resumption asked) changes nothing at all.
* The session is at a *safe point* for a planned reconnect when the newest update said
  ``resumable=True``: the state behind the handle then includes everything the model did.
* Handles are credentials: :func:`redact` is the only form in which one may be logged.

Pure: no I/O; times are passed in.
"""

from __future__ import annotations

from dataclasses import dataclass


def redact(handle: str | None) -> str:
    """A loggable form of ``handle``: its first 6 characters and its length."""
    if not handle:
        return "<none>"
    return f"{handle[:6]}…({len(handle)} chars)"


@dataclass
class ResumptionState:
    """Last good handle of a session and whether the session is at a resumable point."""

    handle: str | None = None
    #: ``loop.time()`` when :attr:`handle` arrived.
    received_at: float | None = None
    #: ``last_consumed_client_message_index`` that came with :attr:`handle` (Vertex
    #: ``transparent`` mode only).
    last_consumed_index: int | None = None
    #: Whether the newest update (with or without a handle) said ``resumable=True``.
    resumable_now: bool = False
    #: Handles received in this run, for statistics.
    handles_received: int = 0

    @classmethod
    def starting_with(
        cls, handle: str | None, *, received_at: float | None = None
    ) -> ResumptionState:
        """State for a run that starts from a handle the caller stored earlier (or none),
        received at ``received_at`` if known."""
        return cls(handle=handle or None, received_at=received_at, resumable_now=bool(handle))

    def observe(
        self,
        *,
        new_handle: str | None,
        resumable: bool | None,
        last_consumed_index: int | None,
        now: float,
    ) -> bool:
        """Apply one ``sessionResumptionUpdate``; return whether the handle changed.

        An empty update (no handle, ``resumable`` absent: the service sends ``{}`` every
        0.5-1 s in a recorded run) says nothing: no handle, no coverage, and the session's
        resumable point stays as the last update that said something left it."""
        if resumable is None and not new_handle:
            return False
        self.resumable_now = bool(resumable)
        if not (resumable and new_handle):
            return False
        self.handle = new_handle
        self.received_at = now
        self.last_consumed_index = last_consumed_index
        self.handles_received += 1
        return True

    def forget(self) -> None:
        """Drop the handle (it was refused, or a new session starts on purpose)."""
        self.handle = None
        self.received_at = None
        self.last_consumed_index = None
        self.resumable_now = False

    def age(self, now: float) -> float | None:
        """Seconds since the current handle arrived, or ``None`` without a handle."""
        if self.received_at is None:
            return None
        return now - self.received_at
