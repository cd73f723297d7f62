"""Our exceptions, and the one place that tells a lost connection from any other error.

:func:`classify` looks at what google-genai and websockets raise when a live connection ends
(``APIError`` with a close code from ``receive``, raw ``ConnectionClosed`` from ``send``,
``OSError``/``TimeoutError``/handshake errors from ``connect``) and returns a :class:`Drop`,
or ``None`` for everything that is not about the connection (a tool bug, a bad request...),
which the live loop must re-raise untouched.

A websocket handshake the server refuses reaches us unwrapped: google-genai opens its socket
with websockets' ``connect``, which raises ``InvalidStatus`` carrying the HTTP response
(status and headers). A 429 or 5xx refusal is a ``connect_failed`` drop that keeps its status
and, when the response has one, its ``Retry-After`` in seconds (RFC 9110, section 10.2.3:
delay-seconds or an HTTP-date; RFC 6585, section 4, for 429), so the retry decision can
honour it (:mod:`adk_live_resume.rules.retry_decision`).
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import math
import ssl
import time
from dataclasses import dataclass
from typing import Any, Literal

from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus

DropKind = Literal["closed", "connect_failed", "rejected"]


class LiveResumeError(RuntimeError):
    """Base class of the errors this package raises."""


class ReconnectFailedError(LiveResumeError):
    """The connection could not be restored within the policy's attempts or time.

    ``__cause__`` is the last error seen; :attr:`attempts` and :attr:`elapsed` say how hard
    we tried; :attr:`code` and :attr:`reason` are the last close's (``None`` and ``""`` when
    the last attempt did not end with a close frame).
    """

    def __init__(
        self,
        message: str,
        *,
        attempts: int,
        elapsed: float,
        code: int | None = None,
        reason: str = "",
    ) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.elapsed = elapsed
        self.code = code
        self.reason = reason


class QuotaExceededError(ReconnectFailedError):
    """The service closed the session because a quota is spent, and one more connection was
    closed the same way.

    The service says so in the close's reason (:attr:`reason`, quoted in the message): 1011
    "You exceeded your current quota, please check your plan and billing details..." or
    "RESOURCE_EXHAUSTED: Maximum concurrent sessions". A session opened with the quota spent
    is still set up, then closed about a second later. A hook registered with
    :func:`~adk_live_resume.on_retry` may choose to wait instead of this error.
    """


class IdleCloseError(ReconnectFailedError):
    """The service closed an idle connection (1008, no ``goAway``, no traffic either way)
    twice in a row: the session resumed after the first close was closed the same way before
    it answered anything, or within a minute."""


class PoisonedSessionError(ReconnectFailedError):
    """The conversation dies the same way before any answer however it is connected: two
    resumes in a row, then a fresh session started from the history, were each closed with
    the same code and reason (:attr:`code`, :attr:`reason`) on model :attr:`model`."""

    def __init__(
        self,
        message: str,
        *,
        attempts: int,
        elapsed: float,
        code: int | None = None,
        reason: str = "",
        model: str = "",
    ) -> None:
        super().__init__(message, attempts=attempts, elapsed=elapsed, code=code, reason=reason)
        self.model = model


class ModelRefusedError(ReconnectFailedError):
    """The service refuses every setup of model :attr:`model`, with a handle and without
    (each closed at its setup with the same code and reason, e.g. 1011 "Internal error
    encountered."): the model is retired or broken, not the conversation."""

    def __init__(
        self,
        message: str,
        *,
        attempts: int,
        elapsed: float,
        code: int | None = None,
        reason: str = "",
        model: str = "",
    ) -> None:
        super().__init__(message, attempts=attempts, elapsed=elapsed, code=code, reason=reason)
        self.model = model


class SessionStalledError(ReconnectFailedError):
    """The live session stalled (the socket open, no answer) and neither a resume nor a fresh
    start brought it back; the message says what was seen each time and what to check.

    A :class:`ReconnectFailedError`, so code that handles a failed reconnect handles it too.
    """


class SessionNotResumableError(LiveResumeError):
    """The server ended the session with a close code that resuming cannot fix.

    Typical codes: 1007 (invalid argument, e.g. context exhausted) and 1008 (policy
    violation, e.g. a refused or expired handle, a wrong model name).
    """

    def __init__(self, message: str, *, code: int | None) -> None:
        super().__init__(message)
        self.code = code


class UnsupportedAdkVersionError(LiveResumeError):
    """The installed google-adk lacks a feature the patch needs (the message names it), or is
    older than the supported minimum."""


class SessionLimitError(SessionNotResumableError):
    """The service ended a session that reached its length limit; it cannot be resumed.

    Audio sessions without context window compression end after 15 minutes (2 minutes with
    video). Set ``RunConfig.context_window_compression`` (or
    ``ResumePolicy(sliding_window=True)``) for longer conversations.
    """


class NoLiveRunError(LiveResumeError, LookupError):
    """A move or a fresh start was asked (:func:`~adk_live_resume.request_move`,
    :func:`~adk_live_resume.request_fresh_start`) with a ``LiveRequestQueue`` no patched live
    run serves now: the run has not started yet, has ended, or runs without the patch."""


class InstallConflictError(LiveResumeError):
    """Kept for compatibility; no longer raised.

    A second ``install()`` with a different policy now keeps the first and logs a WARNING
    (the first install wins, as with OpenTelemetry instrumentors).
    """


@dataclass(frozen=True)
class Drop:
    """A lost connection: how it ended and the close code, when there is one.

    ``kind`` is ``"closed"`` (the socket closed, ``code`` says how; 1006 without a close
    frame), ``"connect_failed"`` (a connect that may work next time: refused with HTTP 429 or
    5xx, a timeout, a network error) or ``"rejected"`` (a connect that will fail the same way:
    HTTP 401/403/404, a TLS certificate refused). For a refused websocket handshake,
    ``status`` is the HTTP status and ``retry_after`` the seconds its ``Retry-After`` header
    asked to wait (``None`` without one). ``after_go_away``: the connection had received a
    ``goAway`` before it was lost. Never holds a resumption handle.
    """

    kind: DropKind
    code: int | None
    reason: str
    status: int | None = None
    retry_after: float | None = None
    after_go_away: bool = False

    def describe(self) -> str:
        if self.code is not None:
            return f"{self.code} {self.reason}".strip()
        return self.reason or self.kind


def _close_code(exc: ConnectionClosed) -> tuple[int, str]:
    frame = exc.rcvd if exc.rcvd is not None else None
    if frame is None:
        return 1006, "abnormal closure (no close frame)"
    return frame.code, frame.reason


def classify(exc: BaseException) -> Drop | None:
    """Return the :class:`Drop` that ``exc`` reports, or ``None`` if it is not a lost connection.

    Close codes are returned as received; whether a code is worth retrying is the policy's
    call (:meth:`adk_live_resume.rules.policy.ResumePolicy.is_retryable_code`).
    """
    if isinstance(exc, ConnectionClosed):
        code, reason = _close_code(exc)
        return Drop("closed", code, reason)
    # google-genai >= 1.62 wraps every close of ``receive`` in APIError. Imported here, not
    # at the top: `import adk_live_resume` (and the pytest plugin) must not load google-genai.
    from google.genai.errors import APIError

    if isinstance(exc, APIError):
        code = exc.code if isinstance(exc.code, int) else None
        if code is not None and 1000 <= code <= 4999:
            details = exc.details if isinstance(exc.details, str) else ""
            return Drop("closed", code, str(exc.message or details or exc.status or ""))
        # An HTTP-style error in a server message (401, 403, 429, 503...): not a close.
        return None
    if isinstance(exc, InvalidStatus):
        status = exc.response.status_code
        headers = exc.response.headers
        retry_after = retry_after_seconds(headers.get("Retry-After"), headers.get("Date"))
        reason = f"HTTP {status} during the websocket handshake"
        if retry_after is not None:
            reason += f" (Retry-After: {retry_after:g} s)"
        kind: DropKind = "connect_failed" if status == 429 or status >= 500 else "rejected"
        return Drop(kind, None, reason, status=status, retry_after=retry_after)
    if isinstance(exc, InvalidHandshake):
        return Drop("connect_failed", None, f"websocket handshake failed: {exc}")
    if isinstance(exc, ssl.SSLCertVerificationError):
        return Drop("rejected", None, f"TLS certificate rejected: {exc}")
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return Drop("connect_failed", None, "timed out")
    if isinstance(exc, OSError):
        return Drop("connect_failed", None, f"{type(exc).__name__}: {exc}")
    return None


def retry_after_seconds(value: Any, date: Any = None, *, now: float | None = None) -> float | None:
    """The seconds a ``Retry-After`` header ``value`` asks to wait, or ``None`` if there is no
    usable value.

    Takes delay-seconds (``"120"``) or an HTTP-date (``"Wed, 21 Oct 2015 07:28:00 GMT"``),
    counted from the response's ``Date`` header when it has one, else from ``now`` (default:
    the wall clock). A date in the past is 0 s; garbage, negative or non-finite values are
    ``None`` (the policy's own backoff applies then).
    """
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    if text.isdigit():
        return float(int(text))
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if math.isfinite(seconds):
        return seconds if seconds >= 0 else None
    try:
        when = email.utils.parsedate_to_datetime(text).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    start = now if now is not None else time.time()
    if isinstance(date, str):
        with contextlib.suppress(TypeError, ValueError, IndexError, OverflowError):
            start = email.utils.parsedate_to_datetime(date).timestamp()
    return max(0.0, when - start)
