"""A resumption handle at rest: what is stored, how it is sealed, when it is still valid.

Pure: no I/O but reading the key from the environment in :meth:`HandleSealer.from_environment`;
times are passed in or read from ``time.time()`` (wall clock, so they mean the same in every
worker process).

Rules:

* A :class:`ResumeHandle` is the handle plus the wall-clock time it was issued. It is valid
  for resuming while its age is at most ``ResumePolicy.handle_ttl`` (the Gemini API keeps a
  handle for 2 hours after the session's last connection ended; the issue time is earlier than
  that, so the rule errs on the safe side). Its ``repr`` never shows the handle whole.
* A stored handle is *sealed*: encrypted and authenticated (Fernet: AES-128-CBC + HMAC-SHA256)
  with a key only the app holds, together with the session it belongs to (app, user, session
  id), the agent whose live session it resumes, and the id of the last session event it covers
  (:mod:`adk_live_resume.resumption.handle_coverage`). A token copied into another session,
  altered, or sealed with an unknown key is refused with :class:`StoredHandleError`, never
  used; :attr:`SealedHandle.agent_name` says which agent may resume with it.
* Keys come from ``ADK_LIVE_RESUME_HANDLE_KEY``: one or more Fernet keys separated by commas.
  The first seals; every one opens, so keys can be rotated without losing stored handles.

``cryptography`` is imported by the first :class:`HandleSealer`, not with this module: the
live loop imports this module, and only runs that store handles in the session seal them.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..rules.errors import LiveResumeError
from .handles import redact

if TYPE_CHECKING:
    from cryptography.fernet import MultiFernet

#: The environment variable that holds the sealing key(s).
HANDLE_KEY_ENV = "ADK_LIVE_RESUME_HANDLE_KEY"

#: Version of the sealed payload's layout (1: without the covered event; still opened).
_FORMAT = 2
_FORMATS = (1, 2)


class HandleKeyError(LiveResumeError, ValueError):
    """The sealing key is missing or malformed; the message says how to make one."""


class StoredHandleError(LiveResumeError):
    """A stored token cannot be used: not ours, altered, for another session, or malformed."""


@dataclass(frozen=True, repr=False)
class ResumeHandle:
    """A session-resumption handle and the wall-clock time (``time.time()``) it was issued."""

    handle: str
    issued_at: float

    def __post_init__(self) -> None:
        if not isinstance(self.handle, str) or not self.handle:
            raise ValueError("ResumeHandle.handle must be a non-empty string")

    def age(self, now: float | None = None) -> float:
        """Seconds since the handle was issued (``now`` defaults to ``time.time()``)."""
        return (time.time() if now is None else now) - self.issued_at

    def is_valid(self, ttl: float, now: float | None = None) -> bool:
        """Whether the handle is young enough to resume with (``ResumePolicy.handle_ttl``)."""
        return self.age(now) <= ttl

    def __repr__(self) -> str:
        return f"ResumeHandle({redact(self.handle)}, issued_at={self.issued_at:.3f})"


@dataclass(frozen=True)
class SessionKey:
    """Which ADK session a stored handle belongs to; sealed with it and checked on opening."""

    app_name: str
    user_id: str
    session_id: str

    def as_list(self) -> list[str]:
        return [self.app_name, self.user_id, self.session_id]


@dataclass(frozen=True)
class SealedHandle:
    """What an opened token holds: the handle and the agent whose live session it resumes."""

    handle: ResumeHandle
    agent_name: str
    #: Id of the last session event the handle covers (``None``: a token of layout 1, which
    #: did not say).
    covers: str | None = None


class HandleSealer:
    """Seals handles for storage in places clients can read, and opens them again."""

    def __init__(self, keys: Sequence[bytes | str]) -> None:
        from cryptography.fernet import Fernet, MultiFernet

        if not keys:
            raise HandleKeyError(_missing_key_message())
        fernets = []
        for position, key in enumerate(keys, start=1):
            try:
                fernets.append(Fernet(key))
            except (ValueError, TypeError):
                raise HandleKeyError(
                    f"{HANDLE_KEY_ENV}: key {position} is not a Fernet key (32 bytes, URL-safe"
                    f" base64); make one. {_how_to_make_a_key()}"
                ) from None
        self._fernet: MultiFernet = MultiFernet(fernets)

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> HandleSealer:
        """The sealer for the key(s) in ``ADK_LIVE_RESUME_HANDLE_KEY``; raises if unset."""
        environ = os.environ if environ is None else environ
        keys = [key.strip() for key in environ.get(HANDLE_KEY_ENV, "").split(",") if key.strip()]
        if not keys:
            raise HandleKeyError(_missing_key_message())
        return cls(keys)

    def seal(
        self, handle: ResumeHandle, owner: SessionKey, agent_name: str, covers: str = ""
    ) -> str:
        """An opaque token holding ``handle`` of ``agent_name`` in session ``owner``, which
        covers the session's events up to the one with id ``covers`` ("": none).

        Safe to show to clients: without a key it reveals nothing and cannot be altered.
        """
        payload = {
            "v": _FORMAT,
            "handle": handle.handle,
            "issued_at": handle.issued_at,
            "owner": owner.as_list(),
            "agent": agent_name,
            "covers": covers,
        }
        return self._fernet.encrypt(json.dumps(payload).encode()).decode("ascii")

    def open(self, token: object, owner: SessionKey) -> SealedHandle:
        """What ``token`` holds, if it was sealed for session ``owner``.

        Raises :class:`StoredHandleError` for anything else.
        """
        if not isinstance(token, str) or not token:
            raise StoredHandleError(
                f"not a sealed handle but a {type(token).__name__}: leave the session state's"
                " handle key to adk-live-resume"
            )
        from cryptography.fernet import InvalidToken

        try:
            payload = json.loads(self._fernet.decrypt(token.encode("ascii")))
        except (InvalidToken, UnicodeEncodeError):
            raise StoredHandleError(
                f"the stored handle was sealed with a key not in {HANDLE_KEY_ENV}, or altered:"
                " give every worker the same keys"
            ) from None
        except ValueError:
            raise StoredHandleError(
                "the stored handle's payload is not JSON: leave the session state's handle key"
                " to adk-live-resume"
            ) from None
        if not isinstance(payload, dict) or payload.get("v") not in _FORMATS:
            raise StoredHandleError(
                "the stored handle has an unknown layout (a newer adk-live-resume wrote it?):"
                " run the same adk-live-resume in every worker"
            )
        if payload.get("owner") != owner.as_list():
            raise StoredHandleError(
                "the stored handle was sealed for another session (it was copied): do not copy"
                " a session's state into another"
            )
        handle, issued_at = payload.get("handle"), payload.get("issued_at")
        agent, covers = payload.get("agent"), payload.get("covers")
        if (
            not isinstance(handle, str)
            or not handle
            or isinstance(issued_at, bool)
            or not isinstance(issued_at, (int, float))
            or not isinstance(agent, str)
            or (payload["v"] >= 2 and not isinstance(covers, str))
        ):
            raise StoredHandleError(
                "the stored handle's payload is incomplete: run the same adk-live-resume in"
                " every worker"
            )
        return SealedHandle(
            ResumeHandle(handle, float(issued_at)), agent, covers if payload["v"] >= 2 else None
        )


def _how_to_make_a_key() -> str:
    return (
        'Make one with: python -c "from cryptography.fernet import Fernet;'
        ' print(Fernet.generate_key().decode())"'
    )


def _missing_key_message() -> str:
    return (
        f"ResumePolicy.store_handle_in_session needs a key to seal handles with: set"
        f" {HANDLE_KEY_ENV} to the same secret in every worker (several, comma-separated,"
        f" to rotate: the first seals, all open). {_how_to_make_a_key()}"
    )
