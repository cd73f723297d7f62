"""The fake server's configuration and the state its connections share."""

from __future__ import annotations

import collections
import itertools
import secrets
from dataclasses import dataclass, field

from .faults import Flap
from .handles import HandleSchedule, HandleStore
from .records import ToolCallRecord

__all__ = [
    "AUDIO_SESSION_LIMIT",
    "DEFAULT_DEADLINE_REASON",
    "INVALID_ARGUMENT_REASON",
    "ServerSettings",
    "SharedState",
]

DEFAULT_DEADLINE_REASON = "Deadline expired before operation could complete."
"""The reason of the 1011 close at a connection's deadline (the real service's words)."""
INVALID_ARGUMENT_REASON = "Request contains an invalid argument."
#: The reason of the 1011 close on a resume while the session's old socket is open.
INTERNAL_ERROR_REASON = "Internal error encountered."
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
    its first utterance and its answer.
    """

    time_scale: float = 1.0
    connection_lifetime: float = 600.0
    go_away_lead: float = 60.0
    handle_ttl: float = 7200.0
    refuse_close_code: int = 1008
    refuse_reason: str = "Invalid resumption handle"
    deadline_close_code: int = 1011
    deadline_reason: str = DEFAULT_DEADLINE_REASON
    chunk_delay: float = 0.02
    handle_schedule: HandleSchedule = field(default_factory=HandleSchedule)
    session_limit: float | None = AUDIO_SESSION_LIMIT
    lenient_client_content: bool = False
    setup_timeout: float | None = None
    thought_summaries: bool = False
    pong_delay: float | None = None
    refuse_resume_while_open: bool = False
    work_delay: float = 0.5

    def __post_init__(self) -> None:
        if self.time_scale <= 0:
            raise ValueError("time_scale must be > 0")
        if self.connection_lifetime <= 0:
            raise ValueError("connection_lifetime must be > 0")
        if self.go_away_lead < 0 or self.handle_ttl < 0 or self.chunk_delay < 0:
            raise ValueError("go_away_lead, handle_ttl and chunk_delay must be >= 0")
        if self.work_delay < 0:
            raise ValueError("work_delay must be >= 0")
        if self.pong_delay is not None and self.pong_delay < 0:
            raise ValueError("pong_delay must be >= 0 (or None to answer pings at once)")
        if self.session_limit is not None and self.session_limit <= 0:
            raise ValueError("session_limit must be > 0 (or None for no limit)")

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
    #: Connections whose socket is still open, per session id.
    open_sessions: collections.Counter[str] = field(default_factory=collections.Counter)
    _tool_counter: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _tool_messages: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def flapping(self, flap: Flap | None) -> None:
        """New connections fail as ``flap`` says from now on (``None``: they no longer do)."""
        self.flap = flap

    def next_tool_message(self) -> int:
        """The number of the next ``toolCall`` message (server-wide, from 1)."""
        return next(self._tool_messages)

    def new_tool_call_id(self) -> str:
        """A function call id unique on this server (and unlikely anywhere else)."""
        call_id = f"fc-{next(self._tool_counter)}-{secrets.token_hex(4)}"
        self.issued_tool_ids.add(call_id)
        return call_id
