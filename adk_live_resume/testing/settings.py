"""The fake server's configuration and the state its connections share."""

from __future__ import annotations

import collections
import itertools
from dataclasses import dataclass, field

from ..fault_proxy.inject_spec import DEFAULT_DEADLINE_REASON, GO_AWAY_DEADLINE_REASON
from .faults import INTERNAL_ERROR_REASON, Fault, Flap
from .handles import HandleSchedule, HandleStore
from .records import ToolCallRecord
from .wire_shapes import WireShapes

__all__ = [
    "AUDIO_SESSION_LIMIT",
    "DEFAULT_DEADLINE_REASON",
    "GO_AWAY_DEADLINE_REASON",
    "IDLE_CLOSE_AFTER",
    "IDLE_CLOSE_CODE",
    "INTERNAL_ERROR_REASON",
    "INVALID_ARGUMENT_REASON",
    "ServerSettings",
    "SharedState",
]

INVALID_ARGUMENT_REASON = "Request contains an invalid argument."
IDLE_CLOSE_AFTER = 151.0
"""Real seconds without a client message after which the service closes a connection with
1008 and no goAway; the session behind it is still there (Omi fork, probe
``lane5-goaway.py``, 2026-08-24, gemini-2.5-flash-native-audio-latest, measured; notes,
"Field facts of 2026-11-29"). The probe's reason text is not given: the fake sends none."""
IDLE_CLOSE_CODE = 1008
AUDIO_SESSION_LIMIT = 900.0
"""Service seconds an audio session without context window compression may last (the Live
API's documented 15 minutes); the fake then closes it and refuses its resume with 1007."""


@dataclass(frozen=True)
class ServerSettings:
    """Timing and close-code settings. Durations are in service seconds unless noted.

    ``time_scale`` is real seconds per service second: with 0.01 a 600 s connection lasts 6 s.
    ``chunk_delay`` is in real seconds. ``thought_summaries``: a family whose models may think
    (native audio) opens every answer with a ``thought: true`` text part. ``pong_delay``:
    websocket pings are answered that many service seconds late (None: at once).
    ``work_delay`` is real seconds of background work an extended-thinking model does between
    its first utterance and its answer. ``requires_action``: while a call the model issued is
    open, an extended-thinking model's ``turnComplete`` says ``REQUIRES_ACTION`` instead of
    ``IN_PROGRESS`` (off by default: the API reference documents ``REQUIRES_ACTION`` as a
    deprecated ``IDLE``, "the server has completed all processing and background reasoning";
    the switch keeps the older reading, "the model waits for the client", which no source
    supports). ``done_status``: the ``interactionStatus`` a family that reports it sends
    when the task is done: ``IDLE`` (default), or ``REQUIRES_ACTION`` (that documented alias,
    as a model that ends its answers with it; notes, "Field facts of 2026-11-29").
    """

    time_scale: float = 1.0
    connection_lifetime: float = 600.0
    go_away_lead: float = 60.0
    handle_ttl: float = 7200.0
    refuse_close_code: int = 1008
    refuse_reason: str = "Invalid resumption handle"
    deadline_close_code: int = 1008
    deadline_reason: str | None = None
    chunk_delay: float = 0.02
    handle_schedule: HandleSchedule = field(default_factory=HandleSchedule)
    session_limit: float | None = AUDIO_SESSION_LIMIT
    lenient_client_content: bool = False
    setup_timeout: float | None = None
    thought_summaries: bool = False
    pong_delay: float | None = None
    refuse_resume_while_open: bool = False
    tool_ids_outlive_connection: bool = False
    #: The recorded shapes of the service's messages the fake sends (each a switch).
    wire_shapes: WireShapes = field(default_factory=WireShapes)
    work_delay: float = 0.5
    requires_action: bool = False
    #: Real seconds without a client message before the idle close (None: never).
    idle_close_after: float | None = IDLE_CLOSE_AFTER
    #: Model names whose every setup is closed with 1011 "Internal error encountered.".
    refused_models: frozenset[str] = frozenset()
    done_status: str = "IDLE"
    #: A session resumed from a handle issued while a reply streamed says that reply again,
    #: glued before its next answer (and such handles are issued).
    resume_replays_cut_reply: bool = False
    #: Setups that break their family's rules are closed with 1007
    #: (:mod:`~adk_live_resume.testing.setup_rules`).
    setup_rules: bool = True
    #: A resumed session comes back without its turns (see ``FakeLiveServer``).
    forget_context_on_resume: bool = False

    def __post_init__(self) -> None:
        if self.time_scale <= 0:
            raise ValueError("time_scale must be > 0")
        if self.connection_lifetime <= 0:
            raise ValueError("connection_lifetime must be > 0")
        if self.go_away_lead < 0 or self.handle_ttl < 0 or self.chunk_delay < 0:
            raise ValueError("go_away_lead, handle_ttl and chunk_delay must be >= 0")
        if self.work_delay < 0:
            raise ValueError("work_delay must be >= 0")
        if not self.done_status or not self.done_status.replace("_", "").isalpha():
            raise ValueError(
                "done_status must be an interactionStatus name such as 'IDLE' or"
                f" 'REQUIRES_ACTION', not {self.done_status!r}"
            )
        if self.pong_delay is not None and self.pong_delay < 0:
            raise ValueError("pong_delay must be >= 0 (or None to answer pings at once)")
        if self.session_limit is not None and self.session_limit <= 0:
            raise ValueError("session_limit must be > 0 (or None for no limit)")
        if self.idle_close_after is not None and self.idle_close_after <= 0:
            raise ValueError("idle_close_after must be > 0 real seconds (or None: never)")

    def deadline_close(self, *, go_away_sent: bool) -> tuple[int, str]:
        """The code and reason of the close at a connection's deadline: ``deadline_close_code``
        with ``deadline_reason``, or the service's words for the code (1008:
        :data:`GO_AWAY_DEADLINE_REASON`, otherwise :data:`DEFAULT_DEADLINE_REASON`). The
        recorded 1008 says the client failed to leave "after receiving a GoAway signal": a
        connection that was sent no goAway (its setup came too late for one) is closed with
        1011 "Deadline expired" instead, the close seen at the connection cap."""
        code = self.deadline_close_code
        if code == 1008 and not go_away_sent and self.deadline_reason is None:
            return 1011, DEFAULT_DEADLINE_REASON
        if self.deadline_reason is not None:
            return code, self.deadline_reason
        return code, GO_AWAY_DEADLINE_REASON if code == 1008 else DEFAULT_DEADLINE_REASON

    def real(self, service_seconds: float) -> float:
        """Convert service seconds to real (event loop) seconds."""
        return service_seconds * self.time_scale


@dataclass
class SharedState:
    """What outlives a connection: handles, tool calls, answers, ended sessions, flapping."""

    handles: HandleStore
    flap: Flap | None = None
    issued_tool_ids: set[str] = field(default_factory=set)
    tool_calls: dict[str, ToolCallRecord] = field(default_factory=dict)
    answered_user_turns: list[str] = field(default_factory=list)
    ended_sessions: set[str] = field(default_factory=set)
    #: Live sessions a ``stall`` fault with ``session=True`` stalled, and its shape.
    stalled_sessions: dict[str, str] = field(default_factory=dict)
    #: Live sessions a ``poison_session`` fault poisoned: how their resumes die.
    poisoned_sessions: dict[str, Fault] = field(default_factory=dict)
    #: Connections whose socket is still open, per session id.
    open_sessions: collections.Counter[str] = field(default_factory=collections.Counter)
    #: Fingerprints of the client messages received, per session id, on all its connections.
    _received: dict[str, collections.Counter[str]] = field(default_factory=dict)
    _tool_counter: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _tool_messages: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def received_by(self, session_id: str) -> collections.Counter[str]:
        """The fingerprints (``handles.fingerprint``) of the client messages every connection
        of session ``session_id`` received so far: the live counter, which they add to."""
        return self._received.setdefault(session_id, collections.Counter())

    def flapping(self, flap: Flap | None) -> None:
        """New connections fail as ``flap`` says from now on (``None``: they no longer do)."""
        self.flap = flap

    def next_tool_message(self) -> int:
        """The number of the next ``toolCall`` message (server-wide, from 1)."""
        return next(self._tool_messages)

    def new_tool_call_id(self, shapes: WireShapes | None = None) -> str:
        """A function call id unique on this server (and unlikely anywhere else), in the
        shape ``shapes`` chooses (default: the recorded ``fc_<digits>``)."""
        shapes = shapes or WireShapes()
        call_id = shapes.new_call_id(next(self._tool_counter), self.issued_tool_ids)
        self.issued_tool_ids.add(call_id)
        return call_id
