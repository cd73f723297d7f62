"""What a run remembers of its reconnects: the outage in progress, the rate, the next report.

:class:`Reconnects` holds what :func:`~adk_live_resume.rules.next_step.next_step` reads of the
run's past (the :class:`~adk_live_resume.rules.outage.Outage` in progress, the reconnects of the
last minute) and the typed :class:`ReconnectRecord` the next
:class:`~adk_live_resume.observe.callbacks.ReconnectInfo` is made from (why, the cause and the
detail as fields, the failure class, the connection the session left), with the time the old
connection was lost. It makes no decision: the loop hands it each step it carries out. No I/O and no
clock of its own: times are ``loop.time()`` values passed in.

Guarantees:

* **One reason per recovery**: the record of the reconnect reported next is that of the end
  that began the recovery; a later attempt of it that fails (a resume refused, a connect
  that fails) changes only the attempt and the failure class, so a stall recovery is
  reported as a ``"stall"`` with what was seen however many attempts it took.
* Handles appear nowhere here.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass

from ..observe.callbacks import ReconnectReason
from ..observe.connection_end import ConnectionReport
from ..rules.next_step import FreshStart, GiveUp, Resume, Step
from ..rules.outage import AttemptEnd, FailureClass, Outage
from ..rules.policy import ReconnectRate, ResumePolicy


class Why(enum.Enum):
    """Why a reconnect was made: the kind of end that began its recovery."""

    #: The connection was lost (a close, an abort, a failed connect).
    DROP = "drop"
    #: A move after the server's ``goAway`` (or ADK's reconnect request after it).
    GO_AWAY = "go_away"
    #: The session stalled on an open connection; the loop closed it.
    STALL = "stall"
    #: The app asked for a move or a fresh start (:func:`~adk_live_resume.request_move`).
    REQUESTED = "requested"
    #: The run moved to a fresh session on its own (a lost context, late tool results).
    RUN = "run"


#: How each origin of a move is told.
_MOVED_BY = {"go_away": Why.GO_AWAY, "requested": Why.REQUESTED, "run": Why.RUN}


@dataclass(frozen=True)
class ReconnectRecord:
    """One reconnect as it will be reported: why, how the old connection ended, what was
    seen, the failure class, and the connection the session left."""

    why: Why
    #: How the connection that began the recovery ended, in words: a close
    #: (``"1011 Deadline expired"``), ``"stall: ..."``, why a move began (for an asked
    #: move, the app's reason).
    cause: str
    #: For a stall, what was seen (``"no answer 15.0 s after a typed turn"``); ``""``
    #: otherwise.
    detail: str = ""
    #: The failure class of the step that makes the next connection (``""``: none).
    failure: FailureClass = ""
    #: What the connection the session left learnt (its tokens among it); ``None``: unknown.
    left: ConnectionReport | None = None

    def reason(self, *, state_restored: bool) -> ReconnectReason:
        """The public :attr:`ReconnectInfo.reason <adk_live_resume.ReconnectInfo.reason>`:
        ``"stall"`` and ``"requested"`` whatever the session, ``"restart"`` for any other
        fresh start, else ``"drop"`` or ``"go_away"``."""
        if self.why is Why.STALL:
            return "stall"
        if self.why is Why.REQUESTED:
            return "requested"
        if not state_restored or self.why is Why.RUN:
            return "restart"
        return "go_away" if self.why is Why.GO_AWAY else "drop"


class Reconnects:
    """One run's reconnects: the outage in progress, the rate, the next report, the stalls."""

    def __init__(self, policy: ResumePolicy) -> None:
        self.policy = policy
        self.rate = ReconnectRate(policy.max_reconnects_per_minute)
        #: The outage in progress (``None``: the run made progress since the last end).
        self.outage: Outage | None = None
        #: The next connection's reconnect (``None``: it is not one, or it was reported).
        self.record: ReconnectRecord | None = None
        #: How the latest end was, in words (for the give-up signals).
        self.last_cause = ""
        #: ``loop.time()`` of the first sign that the connection was lost.
        self.lost_at: float | None = None
        #: Stalls seen, and how many of their recoveries were fresh starts.
        self.stalls = 0
        self.stall_fresh_starts = 0

    def lost(self, at: float) -> None:
        """The connection was lost at ``at`` (``loop.time()``): the first sign of an outage
        is kept, a later one (the same outage, seen again) does not move it."""
        if self.lost_at is None:
            self.lost_at = at

    def reported(self) -> None:
        """The reconnect that made the current connection was reported: the next connection
        is not a reconnect until an end says so, and the outage's start is gone."""
        self.record = None
        self.lost_at = None

    @property
    def attempt(self) -> int:
        """The attempt of the outage that made the current connection (1 outside one)."""
        return self.outage.attempts if self.outage and self.outage.attempts else 1

    def has_room(self, now: float) -> bool:
        """``max_reconnects_per_minute`` allows one more reconnect at ``now``."""
        return self.rate.has_room(now)

    def decided(
        self, end: AttemptEnd, step: Step, now: float, left: ConnectionReport | None = None
    ) -> None:
        """The loop carries out ``step`` after ``end`` at ``now`` (``left``: what the
        connection that ended learnt): the outage moves on, the reconnect is counted against
        the rate, and the next report says why (see the module's guarantees)."""
        self.last_cause = end.describe()
        if end.kind == "stall":
            self.stalls += 1
            self.stall_fresh_starts += isinstance(step, FreshStart)
        if isinstance(step, GiveUp):
            return
        assert isinstance(step, (Resume, FreshStart))
        self.outage = step.outage
        self.rate.allow(now)
        if self.record is not None:
            self.record = dataclasses.replace(self.record, failure=step.failure)
            return
        if end.kind == "moved":
            why = _MOVED_BY[left.move_origin] if left is not None else Why.GO_AWAY
            self.record = ReconnectRecord(why, end.what, "", step.failure, left)
        elif end.kind == "stall":
            self.record = ReconnectRecord(Why.STALL, end.describe(), end.what, step.failure, left)
        else:
            self.record = ReconnectRecord(Why.DROP, end.describe(), "", step.failure, left)
