"""The ways the service says no, told apart by a close's reason and the pattern of the attempts.

One close code means different things in the field (``gemini-live-protocol.md``, "Field
facts of 2026-11-29"), so each class is read from the close *and* the outage before it
(:class:`~.outage.Outage`):

* **quota** (:func:`quota`): a close whose reason says a quota is spent: 1011 "You exceeded
  your current quota, please check your plan and billing details..." (cut at 123 bytes),
  also on a session set up with the quota spent, about 0.8 s after ``setupComplete``
  (kazunori279/interpretab README and issue 13, measured with ``tests/quota-close.mjs``);
  1011 "RESOURCE_EXHAUSTED: Maximum concurrent sessions" (GoogleCloudPlatform/generative-ai
  issue 1576). One confirming attempt, then :class:`~adk_live_resume.QuotaExceededError`.
* **idle close** (:func:`idle`): 1008 without a ``goAway`` on a connection that carried no
  traffic for :data:`IDLE_QUIET` seconds or more; the service closes a socket without
  traffic after about 151 s, and the session behind it is still there (Omi fork, probe
  ``lane5-goaway.py``, 2026-08-24). The handle is tried once; a second such close in a row is
  :class:`~adk_live_resume.IdleCloseError`.
* **refused handle** (:func:`refused_handle`): a resume the server ends with 1007 or 1008
  before the model answered, at its setup or at its first input: the fresh start the policy
  allows (``fresh_start_when_handle_dead``).
* **poisoned handle** (:func:`poisoned`): two resumed connections in a row die the same way
  (the same code and reason) before any answer; after a server error every session resumed
  from the handle does so, and only a fresh session breaks the loop (forum threads 175234:
  1011 with audio and video; 178035: 1007 with ``googleSearch``). The handle is abandoned
  for one fresh start; if the fresh session dies the same way too:
  :class:`~adk_live_resume.PoisonedSessionError`.
* **refused model** (:func:`refused_model`): a setup without a handle closed at its setup the
  same way as the attempt before it: the model refuses every setup, with a handle and
  without (a model refusing every Live handshake with 1011 "Internal error encountered",
  2026-08-24; ``gemini-live-2.5-flash-preview`` was shut down on 2025-12-09 per the Gemini API
  changelog): :class:`~adk_live_resume.ModelRefusedError`, naming the model.

Pure: no I/O, no clock. Every message here says what happened and what to do in its first
sentence, then the details.
"""

from __future__ import annotations

from .errors import (
    IdleCloseError,
    ModelRefusedError,
    PoisonedSessionError,
    QuotaExceededError,
    SessionNotResumableError,
)
from .outage import AttemptEnd, Outage

#: Words of a close reason that say a quota is spent (lower case).
QUOTA_WORDS = ("quota", "resource_exhausted")
#: The code of the service's close of an idle socket (and of a refused request).
IDLE_CLOSE_CODE = 1008
#: Seconds without traffic (no client send, no model output) before a 1008 that make it an
#: idle close: the service's comes after about 151 s; a close within seconds of a send or of
#: an answer is the service refusing what it was given, as before.
IDLE_QUIET = 3.0
#: The codes a server refuses a resume with.
REFUSAL_CODES = frozenset({1007, 1008})


def quota(end: AttemptEnd) -> bool:
    """The server closed the connection saying a quota is spent."""
    if not end.closed_by_server:
        return False
    assert end.drop is not None
    reason = end.drop.reason.lower()
    return any(word in reason for word in QUOTA_WORDS)


def idle(end: AttemptEnd) -> bool:
    """The server closed a quiet, set-up connection with 1008, no goAway before it."""
    drop = end.drop
    return (
        end.closed_by_server
        and drop is not None
        and drop.code == IDLE_CLOSE_CODE
        and not drop.after_go_away
        and not end.at_connect
        and end.quiet_for >= IDLE_QUIET
    )


def refused_handle(end: AttemptEnd) -> bool:
    """The server ended a resume with 1007 or 1008 before the model answered (not after a
    goAway: that 1008 is a missed deadline)."""
    drop = end.drop
    return (
        end.resumed
        and end.closed_by_server
        and drop is not None
        and drop.code in REFUSAL_CODES
        and not drop.after_go_away
        and (end.at_connect or not end.progress)
    )


def poisoned(end: AttemptEnd, outage: Outage) -> bool:
    """``end`` and the end before it were both resumes that died the same way before any
    answer."""
    last = outage.last
    if last is None or not _died_resumed(end) or not _died_resumed(last.end):
        return False
    return end.same_way(last.end)


def _died_resumed(end: AttemptEnd) -> bool:
    return end.resumed and not end.progress and end.closed_by_server


def fresh_session_poisoned(end: AttemptEnd, outage: Outage) -> bool:
    """The fresh session started because the handle was poisoned died the same way too."""
    last = outage.last
    return (
        last is not None
        and last.failure == "poisoned_handle"
        and last.step == "fresh_start"
        and not end.resumed
        and not end.progress
        and end.same_way(last.end)
    )


def refused_model(end: AttemptEnd, outage: Outage) -> bool:
    """A setup without a handle was closed at its setup the same way as the attempt before."""
    last = outage.last
    return (
        last is not None
        and end.at_connect
        and not end.resumed
        and last.end.at_connect
        and end.same_way(last.end)
    )


def quota_exceeded(
    end: AttemptEnd, closes: int, attempts: int, elapsed: float
) -> QuotaExceededError:
    """The error once a confirming attempt was closed for quota too (``closes`` in a row)."""
    drop = end.drop
    assert drop is not None
    return QuotaExceededError(
        f"The Live API quota is spent ({drop.code}, {closes} closes in a row): check the plan"
        " and billing, or wait, then run again. The service said:"
        f" {drop.reason!r}. The free tier's lever is a per-minute input-token bucket per model"
        " family; a hook registered with adk_live_resume.on_retry() may answer a wait in"
        " seconds to wait for it instead of this error.",
        attempts=attempts,
        elapsed=elapsed,
        code=drop.code,
        reason=drop.reason,
    )


def idle_closed_again(
    first: AttemptEnd, end: AttemptEnd, attempts: int, elapsed: float
) -> IdleCloseError:
    """The error for a second idle close in a row (``first`` was the one before)."""
    drop = end.drop
    assert drop is not None
    return IdleCloseError(
        f"The service closed the idle connection twice in a row ({drop.describe()}, no"
        " goAway): send input sooner, or start a new run. The first"
        f" close came after {first.quiet_for:.0f} s without traffic; the session resumed"
        f" after it was closed the same way {end.connected_for:.1f} s after its setup,"
        " before any answer. The service closes a socket that carries nothing for about"
        " 151 s; the conversation is kept in the ADK session, so a new run_live resumes it"
        " (stored handles) or starts it fresh with the conversation so far.",
        attempts=attempts,
        elapsed=elapsed,
        code=drop.code,
        reason=drop.reason,
    )


def poisoned_session(
    end: AttemptEnd, model: str, attempts: int, elapsed: float, *, fresh_start_off: bool = False
) -> PoisonedSessionError:
    """The error for a conversation that dies the same way however it is connected (or, with
    ``fresh_start_off``, whose handle is poisoned and no fresh start is allowed)."""
    drop = end.drop
    assert drop is not None
    if fresh_start_off:
        what = (
            "two resumes in a row were each closed that way before any answer, and"
            " ResumePolicy(fresh_start_when_handle_dead=False) allows no fresh session"
        )
    else:
        what = (
            "two resumes in a row, then a fresh session started from the history, were each"
            " closed that way before any answer"
        )
    return PoisonedSessionError(
        "This conversation dies before any answer however it is connected: retry later, or"
        f" try without video or tools. Model {model!r}, close {drop.describe()!r}: {what}."
        " After a server error the service has been seen"
        " failing every resume of a session this way (with audio and video, or with"
        " googleSearch); only a fresh session broke the loop.",
        attempts=attempts,
        elapsed=elapsed,
        code=drop.code,
        reason=drop.reason,
        model=model,
    )


def model_refused(end: AttemptEnd, model: str, attempts: int, elapsed: float) -> ModelRefusedError:
    """The error for a model whose every setup is refused."""
    drop = end.drop
    assert drop is not None
    return ModelRefusedError(
        "The service refuses every setup of this model: check its name against the Live"
        f" models served now. Model {model!r}: each setup, with a handle and without, was"
        f" closed before setupComplete with {drop.describe()!r}. A retired or broken model"
        " looks like a transient error this way (gemini-live-2.5-flash-preview and"
        " gemini-2.0-flash-live-001 were shut down on 2025-12-09).",
        attempts=attempts,
        elapsed=elapsed,
        code=drop.code,
        reason=drop.reason,
        model=model,
    )


def refused_again(end: AttemptEnd) -> SessionNotResumableError:
    """The error for a handle refused after the outage already left one for a fresh start."""
    drop = end.drop
    assert drop is not None
    return SessionNotResumableError(
        "The server refused the fresh session's handle too: start a new run; if it happens"
        " again, check the model name and the API key. The resume was closed with"
        f" {drop.describe()!r} before any answer, after the outage had already left one"
        " handle behind for a fresh session.",
        code=drop.code,
    )
