"""What follows a lost connection: reconnect after a wait, start a fresh session, or give up.

:class:`Reconnects` holds one run's reconnect state (the outage in progress, the run's
reconnect rate, why the next connection is made) and makes the decisions about it; the loop
only acts on them. No I/O and no clock of its own: times are ``loop.time()`` values passed in.

Guarantees:

* A close code outside ``retryable_close_codes`` (1007, 1008...) ends the run with
  :class:`~adk_live_resume.errors.SessionNotResumableError`, unless it is the server refusing
  a resume and ``fresh_start_when_handle_dead`` is on (then the next connection starts fresh);
  a refused resume of an audio session that hit the 15-minute limit ends it with
  :class:`~adk_live_resume.errors.SessionLimitError`.
* An outage that outlasts ``max_attempts`` or ``outage_timeout``, or reconnects beyond
  ``max_reconnects_per_minute``, end the run with
  :class:`~adk_live_resume.errors.ReconnectFailedError`, chained to the last error; so does a
  retry hook that gives up (chained to the last error) or fails (chained to its error).
* One decision per attempt: whether to retry now, wait or give up is
  :func:`~adk_live_resume.retry_decision.decide`'s answer, asked once for each attempt and
  drop (:meth:`Reconnects.decide`): the close frame's question (:meth:`Reconnects.at_once`)
  and the loop's (:meth:`Reconnects.after_drop`) get the same answer, so the next socket is
  opened early exactly when the loop then retries with no wait.
* A handle appears in messages only redacted.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from . import observe, retry_decision, retry_hooks
from .connection_end import Outcome
from .errors import Drop, ReconnectFailedError, SessionLimitError, SessionNotResumableError
from .handles import ResumptionState, redact
from .observe import ReconnectReason
from .policy import OutageBudget, ReconnectRate, ResumePolicy, is_testing
from .retry_decision import RetryDecision

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
        #: The decision made about the next attempt, and what it was made for.
        self._decided: tuple[tuple[object, ...], RetryDecision] | None = None

    def lost(self, at: float) -> None:
        """The connection was lost at ``at`` (``loop.time()``): the first sign of an outage
        is kept, a later one (the same outage, seen again) does not move it."""
        if self.lost_at is None:
            self.lost_at = at

    def moving(self, cause: str) -> None:
        """The next connection is made to move the session off a connection (goAway, or a
        move on purpose) for ``cause``: it is reported as a ``"go_away"`` reconnect."""
        self.reason = "go_away"
        self.cause = cause

    def reported(self) -> None:
        """The reconnect that made the current connection was reported: the next connection
        is not a reconnect until a loss or a move says so, and the outage's start is gone."""
        self.reason = None
        self.lost_at = None

    def healthy(self) -> None:
        """A connection proved healthy: the outage, if any, is over."""
        self.outage = None
        self._decided = None

    @property
    def attempt(self) -> int:
        """The attempt of the outage that made the current connection (1 outside one)."""
        return self.outage.attempts if self.outage else 1

    def decide(self, drop: Drop, now: float, *, fresh_start: bool = False) -> RetryDecision:
        """The decision about the next attempt after ``drop`` (see
        :func:`~adk_live_resume.retry_decision.decide`), made once per attempt and drop: asked
        again for the same attempt and a drop with the same kind, code, status, ``Retry-After``
        and goAway before it, it returns the first answer (the retry hooks are not asked again).
        The answer is forgotten once acted on (:meth:`after_drop`), at every reconnect
        (:meth:`count`) and when a connection proves healthy."""
        attempt = self.outage.attempts + 1 if self.outage else 1
        key: tuple[object, ...] = (attempt, drop.kind, drop.code, drop.status, drop.retry_after)
        key += (drop.after_go_away, fresh_start)
        if self._decided is not None and self._decided[0] == key:
            return self._decided[1]
        decision = retry_decision.decide(
            drop,
            attempt,
            policy=self.policy,
            elapsed=self.outage.elapsed(now) if self.outage else 0.0,
            rate_has_room=self.rate.has_room(now),
            hooks=retry_hooks.registered(),
            testing=is_testing(),
            fresh_start=fresh_start,
        )
        self._decided = (key, decision)
        return decision

    def at_once(self, drop: Drop, *, closing: bool, close_requested: bool, now: float) -> bool:
        """Whether the next attempt after ``drop`` goes without a wait (:meth:`decide` says
        "now"), asked while the connection is still being taken down. Never for a close we
        started (``closing``: a move, the client's close) or once the client closed the
        queue (``close_requested``): the loop does not retry those."""
        if closing or close_requested:
            return False
        return self.decide(drop, now).now

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

        ``start_fresh`` is called when the server refused the handle and the policy makes a
        fresh start instead (it forgets the handle in ``handles``)."""
        drop = outcome.drop
        assert drop is not None
        cause = drop.describe()
        self.reason = "drop"
        self.cause = cause
        fatal = not retry_decision.retryable(drop, self.policy)
        refused = fatal and outcome.at_connect and handles.handle and drop.code in (1007, 1008)
        if refused and drop.code == 1007 and session_limited():
            raise SessionLimitError(
                "the audio session reached its 15-minute limit; for longer ones set"
                " ResumePolicy(sliding_window=True). The live server refused to resume it"
                f" ({cause}): audio sessions without context window compression end after 15"
                " minutes and cannot be resumed or continued. Set RunConfig("
                "context_window_compression=types.ContextWindowCompressionConfig("
                "sliding_window=types.SlidingWindow())) or ResumePolicy(sliding_window=True).",
                code=drop.code,
            ) from outcome.error
        fresh = bool(refused and self.policy.fresh_start_when_handle_dead)
        if fresh:
            logger.info(
                "the server refused handle %s (%s); starting a fresh session with the"
                " conversation so far",
                redact(handles.handle),
                cause,
            )
            start_fresh()
        if fatal and not fresh:
            resumed = (
                " while resuming with a handle" if outcome.at_connect and handles.handle else ""
            )
            raise SessionNotResumableError(
                "the live server ended the session in a way a reconnect cannot fix: check the"
                f" model name, API key and request. Cause: {cause}{resumed}; this close is not"
                " retryable (ResumePolicy.retryable_close_codes). For 1008 check also that the"
                " handle is not expired; for 1007 the request content or an exhausted context"
                " window.",
                code=drop.code,
            ) from outcome.error
        decision = self.decide(drop, now, fresh_start=fresh)
        if self.outage is None:
            self.outage = OutageBudget(self.policy, started_at=now)
        self._decided = None  # (spent: the next drop is about the next attempt)
        if decision.cause == "rate":
            self._rate_exceeded(now, outcome.error)
        if decision.cause == "hook":
            raise ReconnectFailedError(
                "gave up reconnecting the live session on a retry hook's answer: check the hook"
                " given to adk_live_resume.on_retry() or remove it to let ResumePolicy decide."
                f" Why: {decision.why} (last cause: {cause}).",
                attempts=self.outage.attempts,
                elapsed=now - self.outage.started_at,
            ) from (decision.error or outcome.error)
        if not decision.retries:
            raise ReconnectFailedError(
                "gave up reconnecting the lost live connection: check the network and the"
                f" service status. Why: {decision.why} (last cause: {cause}). The server or"
                " network did not come back within ResumePolicy(max_attempts="
                f"{self.policy.max_attempts}, outage_timeout={self.policy.outage_timeout}).",
                attempts=self.outage.attempts,
                elapsed=now - self.outage.started_at,
            ) from outcome.error
        self.outage.attempt_made()
        observe.attempt_failed(
            cause,
            self.outage.attempts,
            self.policy.max_attempts,
            decision.seconds,
            redact(handles.handle),
        )
        return decision.seconds

    def after_stall(self, seen: str, now: float) -> None:
        """The session stalled (``seen``: what was seen): the recovery is the next attempt of
        an outage, counted against ``max_attempts`` and ``outage_timeout`` as after a drop;
        raise :class:`~adk_live_resume.errors.ReconnectFailedError` when they are spent."""
        self.reason = "stall"
        self.cause = f"stall: {seen}"
        if self.outage is None:
            self.outage = OutageBudget(self.policy, started_at=now)
        self._decided = None
        spent = self.outage.attempts >= self.policy.max_attempts or (
            self.outage.elapsed(now) >= self.policy.outage_timeout
        )
        if spent:
            raise ReconnectFailedError(
                "gave up recovering the stalled live session, out of attempts: check the service"
                f" status and quota. Seen: {seen}; ResumePolicy(max_attempts="
                f"{self.policy.max_attempts}, outage_timeout={self.policy.outage_timeout})"
                " spent.",
                attempts=self.outage.attempts,
                elapsed=self.outage.elapsed(now),
            )
        self.outage.attempt_made()

    def count(self, now: float, error: BaseException | None) -> None:
        """Count a reconnect at ``now`` against ``max_reconnects_per_minute``; raise if the
        run has had too many (``error``: the one that ended the last connection)."""
        self._decided = None  # (a reconnect happens: what comes next is decided afresh)
        if not self.rate.allow(now):
            self._rate_exceeded(now, error)

    def _rate_exceeded(self, now: float, error: BaseException | None) -> None:
        raise ReconnectFailedError(
            "gave up: the server keeps dropping the live connection (more than"
            f" {self.policy.max_reconnects_per_minute} reconnects within 60 s); check the service"
            f" status. Last cause: {self.cause}. If it drops it this often in your setup,"
            " raise ResumePolicy.max_reconnects_per_minute.",
            attempts=self.outage.attempts if self.outage else 0,
            elapsed=now - (self.lost_at or now),
        ) from error
