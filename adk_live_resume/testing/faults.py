"""Scriptable faults for the fake server.

Build faults with the :class:`Fault` constructors and hand them to
:meth:`FakeLiveServer.script <adk_live_resume.testing.FakeLiveServer.script>`::

    server.script(Fault.close(1011, "boom", mid_turn=True), connection=1)
    server.script(Fault.abort(after_client_messages=2))      # the next unscripted connection
    server.script(Fault.refuse_resume(), connection=3)
    server.script(Fault.setup_delay(2.0), Fault.no_setup_complete(), connection=4)
    server.script(Fault.hold_pongs(10.0), connection=5)     # pings answered 10 s late
    server.script(Fault.server_message({"someFutureMessage": {}}, mid_turn=True))
    server.script(Fault.refuse_handshake(429, retry_after=2), connection=6)   # HTTP 429

A ``close`` or ``abort`` fault takes exactly one trigger:

* ``after_setup``: right after ``setupComplete`` was sent (or would have been);
* ``after_client_messages=N``: right after the N-th client message after the setup has been
  received and handled;
* ``after_seconds=T``: T service seconds (scaled by ``time_scale``) after the setup;
* ``mid_turn``: right after the first model chunk of the next answer is sent;
* ``mid_tool_call``: right after a ``toolCall`` is sent, before its response arrives.

A ``server_message`` fault sends one raw message (any JSON object, such as
``{"someFutureMessage": {...}}``) at its trigger, which is ``after_setup``,
``after_client_messages=N`` or ``mid_turn``; the connection goes on. The service adds message
kinds over time (``voiceActivity`` came after the SDK releases that raise on it), and a client
must survive a kind its SDK does not know: this scripts one. To send one between turns, use
:meth:`FakeLiveServer.send_message_now
<adk_live_resume.testing.FakeLiveServer.send_message_now>`.

``issue_handle`` issues a handle right after ``setupComplete``, before the connection reads
any client message: a real one (the fake knows it, a later setup resumes it) that snapshots
the session there (a resumed session's restored turns; nothing yet for a fresh one, whose
history comes later). The service says ``resumable: false`` only while the model generates or
runs function calls (notes, "sessionResumptionUpdate"), and sends resumable handles at other
points: after a turn, mid-reply (notes, "Field facts of 2026-11-29", "A handle taken mid-reply
replays the reply"), right after a ``toolResponse`` before the answer (the recorded 3.1 wire
shapes, notes, "Field facts that contradict or extend the above"). Which points get one is the
service's choice (the :class:`~adk_live_resume.testing.handles.HandleSchedule` plays it), and
a session just set up is at such a point. The fault picks that point, so that a test puts a
handle update in the client's socket ahead of anything the client does on the connection (its
replay, a move it decides at the start), whatever the timing.

``close`` sends a real close frame with ``code`` and ``reason`` (``close(1006)``, which no
frame may carry, acts as ``abort``). ``abort`` drops the TCP connection without a close frame
(the client sees 1006). Each fault fires at most once.

``stall`` makes the model stop answering while the connection stays healthy (the socket open,
pings answered, handles still valid), in one of four shapes, the ones reported from the
service in 2026 (protocol notes, "Silent open sessions are the most repeated complaint of
2026": python-genai issue 2117, cookbook issue 1225, gemini-live-api-examples issues 40 and
54): ``silent`` (no server message at all answers the user's turn), ``empty``
(``turnComplete`` with no content), ``rejected`` (``turnComplete`` with
``turnCompleteReason: RESPONSE_REJECTED``, no content) and ``quiet_audio`` (an answer whose
audio is near silence, then ``turnComplete``); and two the field reports of late 2026 (notes,
"Field facts of 2026-11-29"), played by the fake server only: ``after_barge_in`` (the model
answers until a generation is cut off, ``interrupted``, then no server message answers any
user turn: cookbook issue 1228, whose client nudged after 4 s and gave the call up after
10 s) and ``canned`` (every user turn answered with the same :data:`CANNED_ANSWER`: the same
canned refusal seven turns in a row after a network handoff, forum 142056). From the moment
it is armed every answer to a user turn on that connection stalls (``after_barge_in``: from
its first cut off); with ``session=True`` every later connection that
resumes the same live session stalls too (only a fresh session answers again). Stalled turns
are listed in ``record.stalled_turns``; they are never in ``answered_user_turns``.

``quota_close`` closes the connection as the service does when a quota is spent: 1011 with
the service's reason cut at a close frame's 123 bytes (:data:`QUOTA_REASON`), by default
0.8 service seconds after the setup: a session opened with the quota spent still gets
``setupComplete``, then that close (kazunori279/interpretab README and issue 13, measured
with its harness ``tests/quota-close.mjs``; notes, "Field facts of 2026-11-29"). With
another trigger it closes a session whose quota runs out mid-conversation.

``poison_session`` is a server error that poisons the live session: at its trigger it closes
the connection with ``code`` and ``reason`` (1011 "Internal error encountered." by default),
and from then on every connection that resumes the session dies the same way, right after
its ``setupComplete`` or, with ``at_first_input=True``, at its first client message; a fresh
session works (forum threads 175234: 1011 with audio and 1 fps video; 178035: 1007 with
``googleSearch``; "only a fresh session breaks the loop"). Such connections end with
``ended_by="poisoned"``.

``refuse_handshake`` answers the websocket upgrade with an HTTP error instead of ``101``, with
a ``Retry-After`` header when asked: the HTTP convention for "busy, come back later" (RFC
6585, section 4, for 429; RFC 9110, section 10.2.3, for ``Retry-After``), which websockets'
client raises as ``InvalidStatus``. It is not a recording of the Gemini service (no such
refusal has been recorded there). The refused attempt gets its own connection number and a
record (``ended_by="handshake_refused"``); other faults scripted for it never fire.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ..fault_proxy.stall_filter import STALL_SHAPES, StallShape

__all__ = [
    "CANNED_ANSWER",
    "FAKE_STALL_SHAPES",
    "INTERNAL_ERROR_REASON",
    "QUOTA_REASON",
    "STALL_SHAPES",
    "Fault",
    "FaultKind",
    "Flap",
    "StallShape",
]

FaultKind = Literal[
    "close",
    "abort",
    "refuse_resume",
    "setup_delay",
    "no_setup_complete",
    "hold_pongs",
    "server_message",
    "issue_handle",
    "refuse_handshake",
    "stall",
    "poison",
]

QUOTA_REASON = (
    "You exceeded your current quota, please check your plan and billing details. For more"
    " information on this error, head to: h"
)
"""The reason of the service's 1011 close for a spent quota, as measured: the service's
message cut at the 123 bytes a close frame's reason may hold (kazunori279/interpretab README
and issue 13; notes, "Field facts of 2026-11-29")."""
#: Service seconds from the setup to the quota close of a session opened with the quota
#: spent ("about 0.8 s later", the same source).
QUOTA_CLOSE_AFTER = 0.8
INTERNAL_ERROR_REASON = "Internal error encountered."
"""The reason of the service's 1011 for a server error (and for a resume while the session's
old socket is open); a model refusing every setup closes with it too (a report of 2026-08-24;
notes, "Field facts of 2026-11-29")."""

#: The shapes only the fake server plays (the fault proxy does not): a model that never
#: answers after a barge-in, and the same canned answer to every turn.
FAKE_STALL_SHAPES: tuple[StallShape, ...] = (*STALL_SHAPES, "after_barge_in", "canned")
#: The canned answer of a ``canned`` stall.
CANNED_ANSWER = "I'm sorry, I can't help with that right now."


@dataclass(frozen=True)
class Fault:
    """One scripted misbehaviour of one connection. Build it with the class methods."""

    kind: FaultKind
    code: int | None = None
    reason: str = ""
    after_client_messages: int | None = None
    after_seconds: float | None = None
    mid_turn: bool = False
    mid_tool_call: bool = False
    after_setup: bool = False
    seconds: float = 0.0
    # (out of the repr: the pinned soak plans record faults by their repr)
    status: int = field(default=0, repr=False)
    retry_after: str | None = field(default=None, repr=False)
    #: The raw message a ``server_message`` fault sends (JSON text). Out of the repr, which
    #: stays as it was for every other kind (pinned soak plans record it).
    message: str = field(default="", repr=False)
    #: A ``stall`` fault's shape, and whether it lasts for the live session (out of the repr
    #: for the same reason; :meth:`describe` names them).
    shape: str = field(default="", repr=False)
    whole_session: bool = field(default=False, repr=False)
    #: A ``poison`` fault: later resumes die at their first client message, not at setup.
    at_first_input: bool = field(default=False, repr=False)

    @classmethod
    def close(
        cls,
        code: int,
        reason: str = "",
        *,
        after_client_messages: int | None = None,
        after_seconds: float | None = None,
        mid_turn: bool = False,
        mid_tool_call: bool = False,
        after_setup: bool = False,
    ) -> Fault:
        """Close the websocket with a close frame carrying ``code`` and ``reason``."""
        fault = cls(
            "close",
            code=code,
            reason=reason,
            after_client_messages=after_client_messages,
            after_seconds=after_seconds,
            mid_turn=mid_turn,
            mid_tool_call=mid_tool_call,
            after_setup=after_setup,
        )
        fault._check_trigger()
        return fault

    @classmethod
    def abort(
        cls,
        *,
        after_client_messages: int | None = None,
        after_seconds: float | None = None,
        mid_turn: bool = False,
        mid_tool_call: bool = False,
        after_setup: bool = False,
    ) -> Fault:
        """Drop the TCP connection without a close frame (the client sees code 1006)."""
        fault = cls(
            "abort",
            after_client_messages=after_client_messages,
            after_seconds=after_seconds,
            mid_turn=mid_turn,
            mid_tool_call=mid_tool_call,
            after_setup=after_setup,
        )
        fault._check_trigger()
        return fault

    @classmethod
    def quota_close(
        cls,
        *,
        after_seconds: float | None = None,
        after_client_messages: int | None = None,
        mid_turn: bool = False,
    ) -> Fault:
        """Close with 1011 and :data:`QUOTA_REASON`, as the service does when a quota is
        spent (see the module docstring); by default :data:`QUOTA_CLOSE_AFTER` service
        seconds after the setup (or after it is armed on an open connection)."""
        if after_seconds is None and after_client_messages is None and not mid_turn:
            after_seconds = QUOTA_CLOSE_AFTER
        return cls.close(
            1011,
            QUOTA_REASON,
            after_seconds=after_seconds,
            after_client_messages=after_client_messages,
            mid_turn=mid_turn,
        )

    @classmethod
    def poison_session(
        cls,
        code: int = 1011,
        reason: str = INTERNAL_ERROR_REASON,
        *,
        at_first_input: bool = False,
        after_client_messages: int | None = None,
        after_seconds: float | None = None,
        mid_turn: bool = False,
        after_setup: bool = False,
    ) -> Fault:
        """At the trigger (default: at once, ``after_setup``), close with ``code`` and
        ``reason`` and poison the live session: every later resume of it dies the same way
        (see the module docstring), at its setup or, with ``at_first_input``, at its first
        client message."""
        if not (after_client_messages is not None or after_seconds is not None or mid_turn):
            after_setup = True
        fault = cls(
            "poison",
            code=code,
            reason=reason,
            after_client_messages=after_client_messages,
            after_seconds=after_seconds,
            mid_turn=mid_turn,
            after_setup=after_setup,
            at_first_input=at_first_input,
        )
        fault._check_trigger()
        return fault

    @classmethod
    def refuse_resume(cls, code: int | None = None, reason: str = "") -> Fault:
        """Refuse this connection's resumption handle, valid or not, as if it had expired.

        ``code`` defaults to the server's ``refuse_close_code``. A setup without a handle is
        not affected.
        """
        return cls("refuse_resume", code=code, reason=reason)

    @classmethod
    def setup_delay(cls, seconds: float) -> Fault:
        """Wait ``seconds`` service seconds before answering the setup."""
        if seconds < 0:
            raise ValueError("seconds must be >= 0")
        return cls("setup_delay", seconds=seconds)

    @classmethod
    def no_setup_complete(cls) -> Fault:
        """Never send ``setupComplete`` (the session otherwise works; ``connect()`` hangs)."""
        return cls("no_setup_complete")

    @classmethod
    def hold_pongs(cls, seconds: float) -> Fault:
        """Answer every websocket ping ``seconds`` service seconds late (the service has been
        seen taking 8-30 s), from the setup on or, armed on an open connection, from then on.
        """
        if seconds < 0:
            raise ValueError("seconds must be >= 0")
        return cls("hold_pongs", seconds=seconds)

    @classmethod
    def refuse_handshake(
        cls, status: int = 429, *, retry_after: float | str | None = None
    ) -> Fault:
        """Refuse this connection's websocket upgrade with HTTP ``status`` (no websocket, no
        setup), with ``Retry-After: retry_after`` when given: seconds (sent as given, real
        seconds: not scaled by ``time_scale``) or an HTTP-date string."""
        if not 400 <= status <= 599:
            raise ValueError("status must be an HTTP error status (400-599)")
        header: str | None = None
        if isinstance(retry_after, str):
            header = retry_after
        elif retry_after is not None:
            if retry_after < 0:
                raise ValueError("retry_after must be >= 0")
            header = f"{retry_after:g}"
        return cls("refuse_handshake", status=status, retry_after=header)

    @classmethod
    def server_message(
        cls,
        message: Mapping[str, Any],
        *,
        after_client_messages: int | None = None,
        mid_turn: bool = False,
        after_setup: bool = False,
    ) -> Fault:
        """Send ``message`` (a JSON object, sent as given: top-level keys as on the wire) at
        the trigger; the connection goes on. For a kind of message the service may add
        later, e.g. ``{"someFutureMessage": {"detail": 1}}``."""
        fault = cls(
            "server_message",
            message=json.dumps(dict(message)),
            after_client_messages=after_client_messages,
            mid_turn=mid_turn,
            after_setup=after_setup,
        )
        fault._check_trigger()
        return fault

    @classmethod
    def issue_handle(cls) -> Fault:
        """Issue a handle right after ``setupComplete`` (see the module docstring); the
        connection goes on. Only where the setup asked for handles."""
        return cls("issue_handle", after_setup=True)

    @classmethod
    def stall(cls, shape: StallShape = "silent", *, session: bool = False) -> Fault:
        """Stop answering user turns with the connection left healthy, in ``shape`` (see the
        module docstring); ``session``: for the live session (a resume stalls again), not
        only for this connection."""
        if shape not in FAKE_STALL_SHAPES:
            raise ValueError(f"shape must be one of {', '.join(FAKE_STALL_SHAPES)}, not {shape!r}")
        return cls("stall", shape=shape, whole_session=session)

    def describe(self) -> str:
        """The fault in one line (a stall's shape included, which the repr leaves out)."""
        if self.kind == "stall":
            lasting = "session" if self.whole_session else "connection"
            return f"stall({self.shape}, for the {lasting})"
        if self.kind == "poison":
            where = "first input" if self.at_first_input else "setup"
            return f"{self!r}, later resumes die at their {where}"
        return repr(self)

    @property
    def sends_message(self) -> bool:
        """True for a ``server_message`` fault."""
        return self.kind == "server_message"

    @property
    def issues_handle(self) -> bool:
        """True for an ``issue_handle`` fault."""
        return self.kind == "issue_handle"

    @property
    def is_drop(self) -> bool:
        """True for faults that end the connection (``close``, ``abort`` and ``poison``)."""
        return self.kind in ("close", "abort", "poison")

    def _check_trigger(self) -> None:
        triggers = [
            self.after_client_messages is not None,
            self.after_seconds is not None,
            self.mid_turn,
            self.mid_tool_call,
            self.after_setup,
        ]
        if sum(triggers) != 1:
            raise ValueError(
                "give exactly one trigger: after_client_messages, after_seconds, mid_turn, "
                "mid_tool_call or after_setup"
            )
        if self.after_client_messages is not None and self.after_client_messages < 1:
            raise ValueError("after_client_messages must be >= 1")
        if self.after_seconds is not None and self.after_seconds < 0:
            raise ValueError("after_seconds must be >= 0")


@dataclass(frozen=True)
class Flap:
    """The flapping mode set by :meth:`FakeLiveServer.flap`."""

    code: int
    reason: str = ""
    after_setup: bool = True
    resuming_only: bool = True
