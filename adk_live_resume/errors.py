"""Our exceptions, and the one place that tells a lost connection from any other error.

:func:`classify` looks at what google-genai and websockets raise when a live connection ends
(``APIError`` with a close code from ``receive``, raw ``ConnectionClosed`` from ``send``,
``OSError``/``TimeoutError``/handshake errors from ``connect``) and returns a :class:`Drop`,
or ``None`` for everything that is not about the connection (a tool bug, a bad request...),
which the live loop must re-raise untouched.
"""

from __future__ import annotations

import asyncio
import ssl
from dataclasses import dataclass
from typing import Literal

from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus

DropKind = Literal["closed", "connect_failed", "rejected"]


class LiveResumeError(RuntimeError):
    """Base class of the errors this package raises."""


class ReconnectFailedError(LiveResumeError):
    """The connection could not be restored within the policy's attempts or time.

    ``__cause__`` is the last error seen; :attr:`attempts` and :attr:`elapsed` say how hard
    we tried.
    """

    def __init__(self, message: str, *, attempts: int, elapsed: float) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.elapsed = elapsed


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


class InstallConflictError(LiveResumeError):
    """Kept for compatibility; no longer raised.

    A second ``install()`` with a different policy now keeps the first and logs a WARNING
    (the first install wins, as with OpenTelemetry instrumentors).
    """


@dataclass(frozen=True)
class Drop:
    """A lost connection: how it ended and the close code, when there is one."""

    kind: DropKind
    code: int | None
    reason: str

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
    call (:meth:`adk_live_resume.policy.ResumePolicy.is_retryable_code`).
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
        if status == 429 or status >= 500:
            return Drop("connect_failed", None, f"HTTP {status} during the websocket handshake")
        return Drop("rejected", None, f"HTTP {status} during the websocket handshake")
    if isinstance(exc, InvalidHandshake):
        return Drop("connect_failed", None, f"websocket handshake failed: {exc}")
    if isinstance(exc, ssl.SSLCertVerificationError):
        return Drop("rejected", None, f"TLS certificate rejected: {exc}")
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return Drop("connect_failed", None, "timed out")
    if isinstance(exc, OSError):
        return Drop("connect_failed", None, f"{type(exc).__name__}: {exc}")
    return None
