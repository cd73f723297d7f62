"""Resumption handles: each one names an immutable snapshot of a session's memory.

Guarantees:

* every handle is fresh and unguessable (``secrets.token_urlsafe(24)``, 32 characters);
* a handle restores exactly the memory it was issued with, however often it is used, until it
  expires ``ttl`` real seconds after it was issued (the server passes its ``handle_ttl`` already
  scaled by ``time_scale``);
* an unknown or expired handle is refused.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from .model import Turn

__all__ = ["HandleStore", "Snapshot"]


@dataclass(frozen=True)
class Snapshot:
    """Session memory at a resumable point."""

    turns: tuple[Turn, ...]
    issued_at: float
    connection: int


class HandleStore:
    """Maps handles to snapshots. Times are event-loop times in real seconds."""

    def __init__(self, ttl: float) -> None:
        self.ttl = ttl
        self._snapshots: dict[str, Snapshot] = {}

    def issue(self, turns: tuple[Turn, ...], *, now: float, connection: int) -> str:
        """Store a snapshot of ``turns`` and return its new handle."""
        handle = secrets.token_urlsafe(24)
        self._snapshots[handle] = Snapshot(turns, now, connection)
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
