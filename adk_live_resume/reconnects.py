"""What a run remembers of its reconnects: the outage in progress, the rate, the next report.

:class:`Reconnects` holds what :func:`~adk_live_resume.next_step.next_step` reads of the
run's past (the :class:`~adk_live_resume.outage.Outage` in progress, the reconnects of the
last minute) and what the next :class:`~adk_live_resume.observe.ReconnectInfo` says (the
reason, the cause, the stall, the failure class, the time the old connection was lost). It
makes no decision: the loop hands it each step it carries out. No I/O and no clock of its
own: times are ``loop.time()`` values passed in.

Guarantees:

* **One reason per recovery**: the reason, cause and stall of the reconnect reported next
  are those of the end that began the recovery; a later attempt of it that fails (a resume
  refused, a connect that fails) changes only the attempt and the failure class, so a stall
  recovery is reported as a ``"stall"`` with what was seen however many attempts it took.
* Handles appear nowhere here.
"""

from __future__ import annotations

from .next_step import FreshStart, GiveUp, Resume, Step
from .observe import ReconnectReason
from .outage import AttemptEnd, FailureClass, Outage
from .policy import ReconnectRate, ResumePolicy

#: The reason reported for a reconnect, by the kind of end that began its recovery.
_REASONS: dict[str, ReconnectReason] = {"drop": "drop", "stall": "stall", "moved": "go_away"}


class Reconnects:
    """One run's reconnects: the outage in progress, the rate, the next report, the stalls."""

    def __init__(self, policy: ResumePolicy) -> None:
        self.policy = policy
        self.rate = ReconnectRate(policy.max_reconnects_per_minute)
        #: The outage in progress (``None``: the run made progress since the last end).
        self.outage: Outage | None = None
        #: Why the next connection is made (``None``: it is not a reconnect, or was reported).
        self.reason: ReconnectReason | None = None
        #: How the connection that began the recovery ended; what was seen, for a stall.
        self.cause = ""
        self.stall = ""
        #: The failure class of the step that makes the next connection (``""``: none).
        self.failure: FailureClass = ""
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
        self.reason = None
        self.lost_at = None
        self.stall = ""
        self.failure = ""

    @property
    def attempt(self) -> int:
        """The attempt of the outage that made the current connection (1 outside one)."""
        return self.outage.attempts if self.outage and self.outage.attempts else 1

    def has_room(self, now: float) -> bool:
        """``max_reconnects_per_minute`` allows one more reconnect at ``now``."""
        return self.rate.has_room(now)

    def decided(self, end: AttemptEnd, step: Step, now: float) -> None:
        """The loop carries out ``step`` after ``end`` at ``now``: the outage moves on, the
        reconnect is counted against the rate, and the next report says why (see the
        module's guarantees)."""
        self.last_cause = end.describe()
        if end.kind == "stall":
            self.stalls += 1
            self.stall_fresh_starts += isinstance(step, FreshStart)
        if isinstance(step, GiveUp):
            return
        assert isinstance(step, (Resume, FreshStart))
        self.outage = step.outage
        self.rate.allow(now)
        self.failure = step.failure
        if self.reason is None:
            self.reason = _REASONS[end.kind]
            self.cause = end.what if end.kind == "moved" else end.describe()
            self.stall = end.what if end.kind == "stall" else ""
