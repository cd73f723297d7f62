"""What follows a connection's end: resume, start fresh (each after a wait), or give up.

:func:`next_step` is the one decision about it. It takes the end
(:class:`~.outage.AttemptEnd`), the outage before it
(:class:`~.outage.Outage`, ``None`` outside one) and what it needs of the run
(:class:`RunView`: the policy, the handle, the model, the reconnect rate, the retry hooks),
and returns a :data:`Step`: :class:`Resume` or :class:`FreshStart`, each with its wait and
the outage after it, or :class:`GiveUp` with the error. The loop only carries it out. Every
end goes through it: drops, stalls, goAway moves, refused handles, session limits, and the
failure classes of :mod:`.failure_classes` (quota, idle closes, poisoned handles, refused
models); the wait itself is :func:`~.retry_decision.decide`'s.

Pure: no I/O, no clock, no state; the retry hooks are the only code of someone else's it
calls.

Guarantees:

* **Caps first.** A full reconnect rate (``max_reconnects_per_minute``) gives up whatever the
  end; no connection is opened beyond ``max_attempts`` in an outage or after
  ``outage_timeout`` seconds disconnected: the run never opens more than ``max_attempts``
  connections in a row without progress (an answer, or a minute connected:
  :attr:`AttemptEnd.progress <adk_live_resume.rules.outage.AttemptEnd.progress>`).
* **At most one handle given up per outage.** A fresh start that leaves the handle because
  resuming it failed (:data:`GIVEN_UP_ON`: a refused or poisoned handle, a stall's second
  step) happens at most once per outage; what would call for a second gives up. A retry
  without a handle (the fresh session never gave one) or without a handle the run could
  resume at all (too old, a model that needs a fresh session) is no such choice.
* **The stall ladder**: a resume (only after a silence, with a usable handle), then a fresh
  start, then :class:`~adk_live_resume.SessionStalledError`; one of each per outage, never a
  resume after the ladder's fresh start. A fresh start the outage took for another reason (no
  handle yet) is no step of the ladder; one that gave a handle up is (at most one per
  outage).
* **A give-up names its class and the last close**: the error's type is the class
  (:class:`~adk_live_resume.QuotaExceededError`, :class:`~adk_live_resume.IdleCloseError`,
  :class:`~adk_live_resume.PoisonedSessionError`, :class:`~adk_live_resume.ModelRefusedError`,
  :class:`~adk_live_resume.SessionStalledError`,
  :class:`~adk_live_resume.SessionNotResumableError` and its
  :class:`~adk_live_resume.SessionLimitError`, else
  :class:`~adk_live_resume.ReconnectFailedError`), and its message quotes the last close.
* **The retry hooks are asked once per end**, only about a drop the run would retry or a
  quota close (a wait they answer replaces :class:`~adk_live_resume.QuotaExceededError`);
  never about a stall (the loop's own close of the stalled socket) or a move.
* A transient close (one 1011 "Internal error encountered", say) resumes at once, as always.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from . import failure_classes, retry_decision
from .errors import (
    LiveResumeError,
    ReconnectFailedError,
    SessionLimitError,
    SessionNotResumableError,
    SessionStalledError,
)
from .outage import AttemptEnd, FailureClass, Outage, StepKind
from .policy import ResumePolicy
from .retry_decision import RetryDecision, RetryHook
from .stall_rule import give_up_message


@dataclass(frozen=True)
class RunView:
    """What the decision needs of the run at the moment it is made."""

    policy: ResumePolicy
    #: The model of the run's request (named by the errors of the model's classes).
    model: str = ""
    #: The run has a handle to resume.
    handle: bool = False
    #: Why that handle cannot be resumed (too old, a model that needs a fresh session, a
    #: fresh session asked for); ``None``: it can.
    unusable: str | None = None
    #: An audio session without context window compression (the service ends it at 15 min).
    session_limited: bool = False
    #: ``max_reconnects_per_minute`` allows one more reconnect now.
    rate_has_room: bool = True
    hooks: tuple[RetryHook, ...] = ()
    #: The policy's backoff is off (:func:`~.policy.set_testing`).
    testing: bool = False

    @property
    def resumable(self) -> bool:
        """The next connection can resume the run's handle."""
        return self.handle and self.unusable is None


@dataclass(frozen=True)
class Resume:
    """Resume the newest handle after :attr:`wait` seconds."""

    wait: float
    #: The outage after this step (``None``: there is none, e.g. a move outside one).
    outage: Outage | None
    failure: FailureClass = ""
    #: No wait was asked for at all (a wait of 0 s drawn by the jitter, or under the
    #: testing switch, is not "at once": :class:`~.retry_decision.RetryDecision`).
    at_once: bool = True


@dataclass(frozen=True)
class FreshStart:
    """Start a fresh session with the conversation rebuilt after :attr:`wait` seconds."""

    wait: float
    outage: Outage | None
    failure: FailureClass = ""
    #: Why, in words (for the log).
    why: str = ""
    #: The run's handle is left behind.
    abandons: bool = False
    at_once: bool = True


@dataclass(frozen=True)
class GiveUp:
    """End the run with :attr:`error` (raised from :attr:`hook_error` when a hook raised)."""

    error: LiveResumeError
    hook_error: BaseException | None = None


Step = Resume | FreshStart | GiveUp

#: The failure classes whose fresh start gives the handle up because resuming it failed:
#: at most one of these per outage.
GIVEN_UP_ON: frozenset[FailureClass] = frozenset({"refused_handle", "poisoned_handle", "stall"})


def next_step(
    end: AttemptEnd,
    outage: Outage | None,
    view: RunView,
    *,
    now: float,
    rng: random.Random | None = None,
) -> Step:
    """What follows ``end`` (see the module's guarantees); ``now``: the decision's time."""
    going = Outage.after(end, outage)
    if not view.rate_has_room:
        return GiveUp(_rate_exceeded(end, going, view, now))
    if end.kind == "moved":  # (not an attempt of an outage)
        kept = None if not going.history else going
        if view.resumable:
            return Resume(0.0, kept)
        return FreshStart(0.0, kept, why=_why_fresh(end, view, ""), abandons=view.handle)
    if end.kind == "stall":
        return _after_stall(end, going, view, now)
    return _after_drop(end, going, view, now, rng)


def _after_drop(
    end: AttemptEnd, outage: Outage, view: RunView, now: float, rng: random.Random | None
) -> Step:
    drop = end.drop
    assert drop is not None
    policy = view.policy
    attempts, elapsed = outage.attempts, outage.elapsed(now, end)
    if failure_classes.refused_model(end, outage):
        return GiveUp(failure_classes.model_refused(end, view.model, attempts, elapsed))
    if failure_classes.fresh_session_poisoned(end, outage):
        return GiveUp(failure_classes.poisoned_session(end, view.model, attempts, elapsed))
    if failure_classes.quota(end):
        if outage.read_as("quota"):
            return _quota_again(end, outage, view, now, rng)
        return _retry(end, outage, view, now, rng, "quota", anyway=True)
    if failure_classes.idle(end):
        earlier = outage.read_as("idle_close")
        if earlier:
            first = earlier[0].end
            return GiveUp(failure_classes.idle_closed_again(first, end, attempts, elapsed))
        return _retry(end, outage, view, now, rng, "idle_close", anyway=True)
    if failure_classes.refused_handle(end):
        if drop.code == 1007 and view.session_limited:
            return GiveUp(_session_limit(end))
        if not policy.fresh_start_when_handle_dead:
            return GiveUp(_not_resumable(end, resuming=True))
        if outage.abandoned:
            return GiveUp(failure_classes.refused_again(end))
        return _retry(end, outage, view, now, rng, "refused_handle", fresh=True, anyway=True)
    if failure_classes.poisoned(end, outage):
        if not policy.fresh_start_when_handle_dead or outage.abandoned:
            off = not policy.fresh_start_when_handle_dead
            poisoned = failure_classes.poisoned_session(
                end, view.model, attempts, elapsed, fresh_start_off=off
            )
            return GiveUp(poisoned)
        return _retry(end, outage, view, now, rng, "poisoned_handle", fresh=True, anyway=True)
    if not retry_decision.retryable(drop, policy):
        return GiveUp(_not_resumable(end, resuming=False))
    return _retry(end, outage, view, now, rng, "")


def _retry(
    end: AttemptEnd,
    outage: Outage,
    view: RunView,
    now: float,
    rng: random.Random | None,
    failure: FailureClass,
    *,
    fresh: bool = False,
    anyway: bool = False,
) -> Step:
    """Another attempt after ``end``, as the policy (and the hooks) allow; ``anyway``: the
    failure class retries a close the policy would not; ``fresh``: without the handle."""
    decision = _decide(end, outage, view, now, rng, anyway=anyway)
    if not decision.retries:
        return GiveUp(_gave_up(decision, end, outage, view, now), decision.error)
    return _reconnect(
        end, outage, view, decision.seconds, failure, fresh=fresh, at_once=decision.now
    )


def _decide(
    end: AttemptEnd,
    outage: Outage,
    view: RunView,
    now: float,
    rng: random.Random | None,
    *,
    anyway: bool,
) -> RetryDecision:
    assert end.drop is not None
    return retry_decision.decide(
        end.drop,
        outage.attempts + 1,
        policy=view.policy,
        elapsed=outage.elapsed(now, end),
        hooks=view.hooks,
        testing=view.testing,
        retried_by_class=anyway,
        rng=rng,
    )


def _quota_again(
    end: AttemptEnd, outage: Outage, view: RunView, now: float, rng: random.Random | None
) -> Step:
    """A quota close confirmed: give up, unless a retry hook answers a wait."""
    decision = _decide(end, outage, view, now, rng, anyway=True)
    if decision.by_hook:
        if decision.retries:
            return _reconnect(end, outage, view, decision.seconds, "quota", at_once=decision.now)
        return GiveUp(_gave_up(decision, end, outage, view, now), decision.error)
    closes = 1 + len(outage.read_as("quota"))
    error = failure_classes.quota_exceeded(end, closes, outage.attempts, outage.elapsed(now, end))
    return GiveUp(error)


def _after_stall(end: AttemptEnd, outage: Outage, view: RunView, now: float) -> Step:
    """The stall ladder: a resume, then a fresh start, then giving up; each an attempt."""
    policy = view.policy
    attempts, elapsed = outage.attempts, outage.elapsed(now, end)
    taken = [t.step for t in outage.history if t.end.kind == "stall"]
    resume = end.silence and view.resumable and "resume" not in taken
    # (a fresh start a stall took is the last hope; so is one that would give up the
    # handle of a fresh session the outage started already)
    if "fresh_start" in taken or (not resume and view.handle and outage.abandoned):
        seen = [*outage.stalls(), end.what]
        message = give_up_message(seen, taken)
        error = SessionStalledError(message, attempts=attempts, elapsed=elapsed)
        return GiveUp(error)
    if attempts >= policy.max_attempts or elapsed >= policy.outage_timeout:
        return GiveUp(
            ReconnectFailedError(
                "gave up recovering the stalled live session, out of attempts: check the"
                f" service status and quota. Seen: {end.what}; ResumePolicy(max_attempts="
                f"{policy.max_attempts}, outage_timeout={policy.outage_timeout}) spent.",
                attempts=attempts,
                elapsed=elapsed,
            )
        )
    return _reconnect(end, outage, view, 0.0, "stall", fresh=not resume)


def _reconnect(
    end: AttemptEnd,
    outage: Outage,
    view: RunView,
    wait: float,
    failure: FailureClass,
    *,
    fresh: bool = False,
    at_once: bool = True,
) -> Resume | FreshStart:
    """The step for one more attempt after ``end``, and the outage with it added."""
    fresh = fresh or not view.resumable
    abandons = fresh and view.handle
    kind: StepKind = "fresh_start" if fresh else "resume"
    # (a handle the run could not resume anyway, too old say, is no choice the failure made)
    after = outage.increment(end, kind, failure, abandoned=abandons and failure in GIVEN_UP_ON)
    if not fresh:
        return Resume(wait, after, failure, at_once)
    why = _why_fresh(end, view, failure)
    return FreshStart(wait, after, failure, why, abandons, at_once)


def _why_fresh(end: AttemptEnd, view: RunView, failure: FailureClass) -> str:
    """Why the next connection starts a fresh session, in words."""
    close = end.describe()
    if failure == "refused_handle":
        return f"the server refused the handle ({close})"
    if failure == "poisoned_handle":
        return f"two resumes in a row were closed the same way before any answer ({close})"
    if failure == "stall":
        return "the session stalled again" if view.handle else "the session stalled"
    if view.handle and view.unusable:
        return view.unusable
    return "the server gave no handle for this session"


def _gave_up(
    decision: RetryDecision, end: AttemptEnd, outage: Outage, view: RunView, now: float
) -> ReconnectFailedError:
    """The error of a retry decision that gave up (the caps, or a hook)."""
    policy = view.policy
    drop = end.drop
    assert drop is not None
    if decision.cause == "hook":
        message = (
            "gave up reconnecting the live session on a retry hook's answer: check the hook"
            " given to adk_live_resume.on_retry() or remove it to let ResumePolicy decide."
            f" Why: {decision.why} (last cause: {end.describe()})."
        )
    else:
        message = (
            "gave up reconnecting the lost live connection: check the network and the"
            f" service status. Why: {decision.why} (last cause: {end.describe()}). The server"
            " or network did not come back within ResumePolicy(max_attempts="
            f"{policy.max_attempts}, outage_timeout={policy.outage_timeout})."
        )
    return ReconnectFailedError(
        message,
        attempts=outage.attempts,
        elapsed=outage.elapsed(now, end),
        code=drop.code,
        reason=drop.reason,
    )


def _rate_exceeded(
    end: AttemptEnd, outage: Outage, view: RunView, now: float
) -> ReconnectFailedError:
    policy = view.policy
    drop = end.drop
    return ReconnectFailedError(
        "gave up: the server keeps dropping the live connection (more than"
        f" {policy.max_reconnects_per_minute} reconnects within 60 s); check the service"
        f" status. Last cause: {end.describe()}. If it drops it this often in your setup,"
        " raise ResumePolicy.max_reconnects_per_minute.",
        attempts=outage.attempts,
        elapsed=outage.elapsed(now, end),
        code=drop.code if drop is not None else None,
        reason=drop.reason if drop is not None else "",
    )


def _not_resumable(end: AttemptEnd, *, resuming: bool) -> SessionNotResumableError:
    drop = end.drop
    assert drop is not None
    while_resuming = " while resuming with a handle" if resuming else ""
    return SessionNotResumableError(
        "the live server ended the session in a way a reconnect cannot fix: check the"
        f" model name, API key and request. Cause: {drop.describe()}{while_resuming}; this"
        " close is not retryable (ResumePolicy.retryable_close_codes). For 1008 check also"
        " that the handle is not expired; for 1007 the request content or an exhausted"
        " context window.",
        code=drop.code,
    )


def _session_limit(end: AttemptEnd) -> SessionLimitError:
    drop = end.drop
    assert drop is not None
    return SessionLimitError(
        "the audio session reached its 15-minute limit; for longer ones set"
        " ResumePolicy(sliding_window=True). The live server refused to resume it"
        f" ({drop.describe()}): audio sessions without context window compression end after"
        " 15 minutes and cannot be resumed or continued. Set RunConfig("
        "context_window_compression=types.ContextWindowCompressionConfig("
        "sliding_window=types.SlidingWindow())) or ResumePolicy(sliding_window=True).",
        code=drop.code,
    )
