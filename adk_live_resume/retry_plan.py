"""What follows a lost connection: reconnect after a wait, start a fresh session, or give up.

:class:`Reconnects` holds one run's reconnect state (the outage in progress, the run's
reconnect rate, why the next connection is made) and makes the decisions about it; the loop
only acts on them. No I/O and no clock of its own: times are ``loop.time()`` values passed in.

Guarantees:

* A close code outside ``retryable_close_codes`` (1007, 1008...) ends the run with
  :class:`~adk_live_resume.errors.SessionNotResumableError`, unless it is the server refusing
  a resume and ``restart_when_handle_dead`` is on (then the next connection starts fresh);
  a refused resume of an audio session that hit the 15-minute limit ends it with
  :class:`~adk_live_resume.errors.SessionLimitError`.
* An outage that outlasts ``max_attempts`` or ``outage_timeout``, or reconnects beyond
  ``max_reconnects_per_minute``, end the run with
  :class:`~adk_live_resume.errors.ReconnectFailedError`, chained to the last error.
* A handle appears in messages only redacted.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from . import observe
from .connection_end import Outcome
from .errors import ReconnectFailedError, SessionLimitError, SessionNotResumableError
from .handles import ResumptionState, redact
from .observe import ReconnectReason
from .policy import OutageBudget, ReconnectRate, ResumePolicy

logger = logging.getLogger("adk_live_resume.loop")


class Reconnects:
    """One run's reconnects: the outage in progress, the rate cap, the pending reconnect."""

    def __init__(self, policy: ResumePolicy) -> None:
        self.policy = policy
        self.rate = ReconnectRate(policy.max_reconnects_per_minute)
        self.outage: OutageBudget | None = None
        #: Why the next connection is made (``None``: it is not a reconnect, or was reported).
        self.reason: ReconnectReason | None = None
        self.cause = ""
        #: ``loop.time()`` of the first sign that the connection was lost.
        self.lost_at: float | None = None

    def healthy(self) -> None:
        """A connection proved healthy: the outage, if any, is over."""
        self.outage = None

    @property
    def attempt(self) -> int:
        """The attempt of the outage that made the current connection (1 outside one)."""
        return self.outage.attempts if self.outage else 1

    def at_once(
        self, code: int | None, *, closing: bool, close_requested: bool, now: float
    ) -> bool:
        """A close with ``code`` is followed by an attempt without delay: the first of an
        outage, no ``first_attempt_jitter``, a code worth retrying, room in the rate cap, a
        close we did not start (``closing``: a move, the client's close) and a queue the
        client has not closed (``close_requested``)."""
        return not (
            closing
            or self.outage is not None
            or self.policy.first_attempt_jitter
            or not self.rate.has_room(now)
            or close_requested
            or not self.policy.is_retryable_code(code)
        )

    def after_drop(
        self,
        outcome: Outcome,
        now: float,
        *,
        handles: ResumptionState,
        session_limited: Callable[[], bool],
        start_fresh: Callable[[], None],
    ) -> float:
        """Decide about a drop: return the wait before the next attempt, or raise.

        ``start_fresh`` is called when the server refused the handle and the policy restarts
        the session instead (it forgets the handle in ``handles``)."""
        drop = outcome.drop
        assert drop is not None
        cause = drop.describe()
        self.reason = "drop"
        self.cause = cause
        fatal = drop.kind == "rejected" or (
            drop.kind == "closed" and not self.policy.is_retryable_code(drop.code)
        )
        refused = fatal and outcome.at_connect and handles.handle and drop.code in (1007, 1008)
        if refused and drop.code == 1007 and session_limited():
            raise SessionLimitError(
                f"the live server refused to resume this audio session ({cause}). Audio"
                " sessions without context window compression end after 15 minutes and cannot"
                " be resumed or continued. Set RunConfig(context_window_compression="
                "types.ContextWindowCompressionConfig(sliding_window=types.SlidingWindow()))"
                " or ResumePolicy(sliding_window=True) for longer conversations.",
                code=drop.code,
            ) from outcome.error
        if refused and self.policy.restart_when_handle_dead:
            logger.info(
                "the server refused handle %s (%s); starting a fresh session with the"
                " conversation so far",
                redact(handles.handle),
                cause,
            )
            start_fresh()
            fatal = False
        if fatal:
            resumed = (
                " while resuming with a handle" if outcome.at_connect and handles.handle else ""
            )
            raise SessionNotResumableError(
                f"the live server ended the session with {cause}{resumed}; this close is not"
                " retryable (ResumePolicy.retryable_close_codes). For 1008 check the model"
                " name, API key and that the handle is not expired; for 1007 the request"
                " content or an exhausted context window.",
                code=drop.code,
            ) from outcome.error
        if self.outage is None:
            self.outage = OutageBudget(self.policy, started_at=now)
        decision, wait, why = self.outage.next_attempt(now)
        if decision == "give_up":
            raise ReconnectFailedError(
                f"gave up reconnecting the live session: {why} (last cause: {cause}). The"
                " server or network did not come back within ResumePolicy(max_attempts="
                f"{self.policy.max_attempts}, outage_timeout={self.policy.outage_timeout}).",
                attempts=self.outage.attempts,
                elapsed=now - self.outage.started_at,
            ) from outcome.error
        observe.attempt_failed(
            cause, self.outage.attempts, self.policy.max_attempts, wait, redact(handles.handle)
        )
        return wait

    def count(self, now: float, error: BaseException | None) -> None:
        """Count a reconnect at ``now`` against ``max_reconnects_per_minute``; raise if the
        run has had too many (``error``: the one that ended the last connection)."""
        if not self.rate.allow(now):
            raise ReconnectFailedError(
                f"gave up: more than {self.policy.max_reconnects_per_minute} reconnects within"
                f" 60 s (last cause: {self.cause}). The server keeps dropping the"
                " connection; check the service status or raise"
                " ResumePolicy.max_reconnects_per_minute.",
                attempts=self.outage.attempts if self.outage else 0,
                elapsed=now - (self.lost_at or now),
            ) from error
