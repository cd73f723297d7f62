"""The fake server's configuration and the state its connections share."""

from __future__ import annotations

import itertools
import secrets
from dataclasses import dataclass, field

from .faults import Flap
from .handles import HandleStore

__all__ = ["DEFAULT_DEADLINE_REASON", "ServerSettings", "SharedState"]

DEFAULT_DEADLINE_REASON = "Deadline expired before operation could complete."


@dataclass(frozen=True)
class ServerSettings:
    """Timing and close-code settings. Durations are in service seconds unless noted.

    ``time_scale`` is real seconds per service second: with 0.01 a 600 s connection lasts 6 s.
    ``chunk_delay`` is in real seconds.
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

    def __post_init__(self) -> None:
        if self.time_scale <= 0:
            raise ValueError("time_scale must be > 0")
        if self.connection_lifetime <= 0:
            raise ValueError("connection_lifetime must be > 0")
        if self.go_away_lead < 0 or self.handle_ttl < 0 or self.chunk_delay < 0:
            raise ValueError("go_away_lead, handle_ttl and chunk_delay must be >= 0")

    def real(self, service_seconds: float) -> float:
        """Convert service seconds to real (event loop) seconds."""
        return service_seconds * self.time_scale


@dataclass
class SharedState:
    """What outlives a connection: handles, issued tool call ids, answers, flapping."""

    handles: HandleStore
    flap: Flap | None = None
    issued_tool_ids: set[str] = field(default_factory=set)
    answered_user_turns: list[str] = field(default_factory=list)
    _tool_counter: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def new_tool_call_id(self) -> str:
        """A function call id unique on this server (and unlikely anywhere else)."""
        call_id = f"fc-{next(self._tool_counter)}-{secrets.token_hex(4)}"
        self.issued_tool_ids.add(call_id)
        return call_id
