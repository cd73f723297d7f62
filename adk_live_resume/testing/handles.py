"""Resumption handles: when they are issued, and the immutable snapshot each one names.

When (:class:`HandleSchedule`): a handle is issued only at a *resumable point*: no answer is
being generated and no function call is pending. Then, per the schedule:

* ``on_turn_complete`` (default True): right after each ``turnComplete`` that ends an answer;
* ``every_audio_ms``: each time that many milliseconds of audio (silence or speech) have been
  received while the model was idle, counted since the last handle of the connection;
* ``idle_interval``: every that many *service* seconds (scaled by ``time_scale``) while idle;
* on demand: :meth:`FakeLiveServer.issue_handles_now
  <adk_live_resume.testing.FakeLiveServer.issue_handles_now>`.

While the model generates or a function call is pending, the server sends
``{"resumable": false}`` without a handle instead.

What (:class:`Snapshot`): a handle restores the session as it was when issued:

* ``turns``: the completed turns only (user turns heard, the model's finished answers). Input
  not yet turned into a turn is NOT in the snapshot: an utterance still in progress, audio the
  voice activity detection still holds. A client that resumes must replay the unfinished
  utterance (and only it);
* ``last_consumed_index`` (Vertex ``transparent`` only, else None): the number of the last
  client message of the issuing connection whose content the snapshot includes (setup is 0,
  client messages count from 1, per connection). Every message up to it is included; no
  message after it is (input that arrives while an utterance is in progress ends the
  utterance first, so the consumed messages are always a prefix);
* ``consumed``: a fingerprint count of every message with an identity that the snapshot
  includes over the whole session (see :func:`fingerprint`), to find messages sent again;
* ``session``: the session's id, start time (event loop, real seconds) and whether it carried
  audio, for the session length limit.

Guarantees of :class:`HandleStore`:

* every handle is fresh and unguessable (a random UUID, as recorded from the service, or
  ``secrets.token_urlsafe(24)``: see :mod:`~adk_live_resume.testing.wire_shapes`);
* a handle restores exactly its snapshot, however often it is used, until it expires ``ttl``
  real seconds after it was issued (the server passes ``handle_ttl`` already scaled);
* an unknown or expired handle is refused.
"""

from __future__ import annotations

import collections
import hashlib
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from .context_update import NO_UPDATE, SessionContext
from .model import Turn
from .protocol import JsonDict, b64decode_any, camel, compact_json, pick, pick_dict, pick_list
from .speech import has_loud, samples_of

__all__ = [
    "HandleIssue",
    "HandleSchedule",
    "HandleStore",
    "IssuePoint",
    "SessionInfo",
    "Snapshot",
    "fingerprint",
]

IssuePoint = Literal[
    "turn_complete", "idle_silent", "idle_speaking", "working", "after_tool_response", "mid_reply"
]


@dataclass(frozen=True)
class HandleSchedule:
    """When the server issues handles at resumable points (see the module docstring).

    ``every_audio_ms`` is milliseconds of received audio; ``idle_interval`` service seconds.

    ``turn_handle_late``: the handle of a completed turn (snapshot taken at ``turnComplete``)
    is sent only when the next client message arrives, just before that message is handled.
    It crosses the client's next turn, as a handle update can on a real network: the client
    receives it after sending a turn the handle does not hold (with no index on the Gemini
    API to say so).
    """

    on_turn_complete: bool = True
    every_audio_ms: int | None = None
    idle_interval: float | None = None
    turn_handle_late: bool = False
    #: A resumable handle goes out after the first chunk of every answer, while the reply
    #: streams (a session resumed from it holds the request, not the reply: the reply is not
    #: continued; with the server's ``resume_replays_cut_reply`` it is said again).
    mid_reply: bool = False

    def __post_init__(self) -> None:
        if self.every_audio_ms is not None and self.every_audio_ms <= 0:
            raise ValueError("every_audio_ms must be > 0 (or None)")
        if self.idle_interval is not None and self.idle_interval <= 0:
            raise ValueError("idle_interval must be > 0 (or None)")


@dataclass(frozen=True)
class SessionInfo:
    """What a session keeps across its connections."""

    id: str
    started_at: float
    audio: bool


@dataclass(frozen=True)
class Snapshot:
    """Session state at a resumable point (see the module docstring)."""

    turns: tuple[Turn, ...]
    issued_at: float
    connection: int
    session: SessionInfo
    last_consumed_index: int | None = None
    consumed: collections.Counter[str] = field(default_factory=collections.Counter)
    #: Open NON_BLOCKING calls ``(id, name)``: a session resumed from here accepts their
    #: responses.
    background: tuple[tuple[str, str], ...] = ()
    #: What ``contextUpdate`` messages set in the session before this point.
    context: SessionContext = NO_UPDATE
    #: The reply that streamed when the handle was issued (``None``: none).
    cut_reply: str | None = None


@dataclass(frozen=True)
class HandleIssue:
    """One handle the server issued: where, at which point, and what it holds.

    ``at`` is the event loop time (real seconds); ``turns`` the number of turns in its
    snapshot; ``last_consumed_index`` as sent (None outside Vertex ``transparent``).
    """

    handle: str
    connection: int
    point: IssuePoint
    last_consumed_index: int | None
    turns: int
    at: float

    def __repr__(self) -> str:  # handles are secrets: keep them out of reprs
        return (
            f"HandleIssue(handle={self.handle[:6]}..., connection={self.connection}, "
            f"point={self.point!r}, last_consumed_index={self.last_consumed_index}, "
            f"turns={self.turns})"
        )


def fingerprint(message: JsonDict) -> str | None:
    """The identity of a client message for "sent again" checks, or None if it has none.

    Text input is identified by its text, a ``clientContent`` by its turns and
    ``turnComplete``, a ``toolResponse`` by its call ids and responses, an audio chunk by its
    bytes, but only when it carries speech (a loud sample): silence chunks are all alike and
    have no identity. Activity signals and ``audioStreamEnd`` have none either.
    """
    realtime = pick_dict(message, "realtimeInput")
    if realtime is not None:
        text = pick(realtime, "text")
        if isinstance(text, str) and text:
            return "text:" + text
        blobs = [pick_dict(realtime, "audio"), pick_dict(realtime, "media")]
        blobs += [b for b in pick_list(realtime, "mediaChunks") if isinstance(b, dict)]
        for blob in blobs:
            data = pick(blob, "data")
            if isinstance(data, str) and data:
                pcm = b64decode_any(data)
                if has_loud(samples_of(pcm)):
                    return "audio:" + hashlib.sha256(pcm).hexdigest()
        return None
    for key in ("clientContent", "toolResponse"):
        body = pick_dict(message, key)
        if body is not None:
            return key + ":" + hashlib.sha256(compact_json(_canonical(body)).encode()).hexdigest()
    return None


def _canonical(value: Any) -> Any:
    """Key casing made uniform (the SDK mixes camelCase and snake_case between releases)."""
    if isinstance(value, dict):
        return {camel(str(k)): _canonical(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    return value


def _token() -> str:
    return secrets.token_urlsafe(24)


class HandleStore:
    """Maps handles to snapshots. Times are event-loop times in real seconds."""

    def __init__(self, ttl: float) -> None:
        self.ttl = ttl
        self._snapshots: dict[str, Snapshot] = {}

    def issue(self, snapshot: Snapshot, new_handle: Callable[[], str] | None = None) -> str:
        """Store ``snapshot`` and return its new handle (made by ``new_handle``)."""
        handle = (new_handle or _token)()
        while handle in self._snapshots:
            handle = (new_handle or _token)()
        self._snapshots[handle] = snapshot
        return handle

    def lookup(self, handle: str, *, now: float) -> Snapshot | None:
        """Return the snapshot of a known, unexpired handle, else None."""
        snapshot = self._snapshots.get(handle)
        if snapshot is None or now - snapshot.issued_at > self.ttl:
            return None
        return snapshot

    def expire_all(self) -> None:
        """Forget every handle (they all become refused)."""
        self._snapshots.clear()

    def __len__(self) -> int:
        return len(self._snapshots)
