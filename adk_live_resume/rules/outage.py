"""An outage as an immutable value: how each of its connections ended and what followed.

:class:`AttemptEnd` is one connection's end as the decision about what follows reads it: the
close (code, reason), or the stall, whether it failed at its connect, whether it resumed a
handle, whether the model answered on it, how long it was connected and how long it had been
quiet. :class:`Outage` is the history since the run last made *progress*: each end in order,
with the step taken after it (a resume or a fresh start) and the failure class it was read
as. Like urllib3's ``Retry.increment()``, :meth:`Outage.increment` returns a new value with
one more entry; nothing is changed in place, so a decision can be made, kept, and dropped
unused (the run ended meanwhile) without undoing anything.

Pure: no I/O, no clock (times are ``loop.time()`` values passed in).

Guarantees:

* **Progress is an answer, or a minute connected.** :attr:`AttemptEnd.progress` is true for
  a connection on which the model answered (any model output or a tool call; for a stalled
  connection, a user turn answered with content before the stall), or that stayed connected
  :data:`PROGRESS_CONNECTED` seconds without stalling. ``setupComplete`` alone is no
  progress: the service sets a session up and closes it about a second later when the quota
  is spent. An end with progress begins a new outage (:meth:`Outage.after`).
* :attr:`Outage.attempts` counts the connections opened in the outage (one per step); the
  time :meth:`Outage.elapsed` counts against ``outage_timeout`` is the time disconnected,
  not the time the outage's own connections were open.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .errors import Drop

#: Seconds connected that count as progress, without an answer (a quiet user).
PROGRESS_CONNECTED = 60.0

EndKind = Literal["drop", "stall", "moved"]
StepKind = Literal["resume", "fresh_start"]

#: How an end was read (:mod:`.failure_classes`); ``""``: an ordinary drop or a move.
FailureClass = Literal[
    "",
    "quota",
    "idle_close",
    "refused_handle",
    "poisoned_handle",
    "refused_model",
    "stall",
]


@dataclass(frozen=True)
class AttemptEnd:
    """How one connection ended, as the decision about what follows reads it."""

    #: ``"drop"`` (lost: a close, an abort, a failed connect), ``"stall"`` (closed by us
    #: after a stall) or ``"moved"`` (a goAway move, or a move on purpose).
    kind: EndKind
    #: ``loop.time()`` of the end's first sign.
    at: float
    #: The close (``None`` for a stall or a move).
    drop: Drop | None = None
    #: For a stall, what was seen; for a move, why it moved.
    what: str = ""
    #: For a stall: a silence, which a resume with the input replayed may answer (a
    #: degenerate turn is held by every later handle: only a fresh session helps).
    silence: bool = False
    #: The connection failed before it was set up (connect or setup).
    at_connect: bool = False
    #: Its setup carried a handle.
    resumed: bool = False
    #: The model answered on it (see the module's guarantees).
    answered: bool = False
    #: Seconds from its setup to its end (0 when it failed at connect).
    connected_for: float = 0.0
    #: Seconds without traffic (a client send, model output) before the end.
    quiet_for: float = 0.0

    @property
    def progress(self) -> bool:
        """The run made progress on this connection (see the module's guarantees)."""
        if self.kind == "stall":
            return self.answered
        return self.answered or self.connected_for >= PROGRESS_CONNECTED

    @property
    def closed_by_server(self) -> bool:
        """The server ended the connection with a close frame (not an abort, 1006)."""
        drop = self.drop
        return drop is not None and drop.kind == "closed" and drop.code not in (None, 1006)

    def same_way(self, other: AttemptEnd) -> bool:
        """Both were closed by the server with the same code and the same reason."""
        if not (self.closed_by_server and other.closed_by_server):
            return False
        assert self.drop is not None and other.drop is not None
        return (self.drop.code, self.drop.reason.strip()) == (
            other.drop.code,
            other.drop.reason.strip(),
        )

    def describe(self) -> str:
        """The end in words, e.g. ``1011 Internal error encountered.`` or ``stall: ...``."""
        if self.kind == "stall":
            return f"stall: {self.what}"
        if self.kind == "moved":
            return self.what or "goAway"
        return self.drop.describe() if self.drop is not None else "connection ended"


@dataclass(frozen=True)
class Taken:
    """One end of an outage, the step taken after it, and the failure class it was read as."""

    end: AttemptEnd
    step: StepKind
    failure: FailureClass = ""
    #: The step left a handle behind (a fresh start while the run had one).
    abandoned: bool = False


@dataclass(frozen=True)
class Outage:
    """The ends since the run last made progress, each with the step taken after it."""

    #: ``loop.time()`` of the end that began it.
    started_at: float
    history: tuple[Taken, ...] = ()
    #: Seconds its own connections (every end after the first) were connected.
    connected: float = 0.0

    @classmethod
    def after(cls, end: AttemptEnd, outage: Outage | None) -> Outage:
        """The outage ``end`` belongs to: ``outage`` going on, or a new one when there is
        none or ``end`` made progress."""
        if outage is None or end.progress:
            return cls(started_at=end.at)
        return outage

    def increment(
        self, end: AttemptEnd, step: StepKind, failure: FailureClass = "", *, abandoned: bool
    ) -> Outage:
        """A new outage with ``end`` and the ``step`` taken after it added."""
        connected = self.connected + (end.connected_for if self.history else 0.0)
        taken = Taken(end, step, failure, abandoned)
        return Outage(self.started_at, (*self.history, taken), connected)

    @property
    def attempts(self) -> int:
        """Connections opened in this outage."""
        return len(self.history)

    @property
    def last(self) -> Taken | None:
        """The latest end and its step (``None``: the outage has just begun)."""
        return self.history[-1] if self.history else None

    def elapsed(self, now: float, end: AttemptEnd | None = None) -> float:
        """Seconds disconnected from the outage's start until ``now``; ``end`` (not in the
        history yet) is the end about to be decided, whose connected time is not counted."""
        connected = self.connected
        if end is not None and self.history:
            connected += end.connected_for
        return max(0.0, now - self.started_at - connected)

    def read_as(self, failure: FailureClass) -> list[Taken]:
        """The ends read as ``failure`` so far."""
        return [taken for taken in self.history if taken.failure == failure]

    @property
    def abandoned(self) -> int:
        """Handles left behind by a fresh start in this outage."""
        return sum(taken.abandoned for taken in self.history)

    def stalls(self) -> list[str]:
        """What was seen at each stall of this outage, in order."""
        return [taken.end.what for taken in self.history if taken.end.kind == "stall"]
