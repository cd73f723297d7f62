"""The video and image frames a live session may need again: the newest few, the rest counted.

A camera or a screen share sends one frame a call (:func:`~.client_sends.
is_frame`); the outbox keeps each until a handle covers it, and on the Gemini API a handle
covers nothing while the model says nothing, so a silent model would leave every frame held.
:class:`FrameWindow` bounds them: the newest ``limit`` are kept, an older one leaves the
outbox counted (:attr:`FrameWindow.dropped_total`, and since the last replay), never
silently. The outbox's records are trimmed back to ``limit`` once they hold a quarter more
(:meth:`FrameWindow.bound`: a stream costs one pass per quarter window, not one per frame),
and to ``limit`` exactly before a replay.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

__all__ = ["FrameWindow"]

Item = TypeVar("Item")


class FrameWindow:
    """How many frames an outbox holds, the most it held, and those it let go."""

    def __init__(self, limit: int) -> None:
        #: The newest frames kept for replay.
        self.limit = limit
        #: Frames held now.
        self.held = 0
        #: The most frames held at once: at most :meth:`bound`.
        self.peak = 0
        #: Frames that left uncovered, over the run.
        self.dropped_total = 0
        self._dropped_since_replay = 0

    def bound(self) -> int:
        """The most frames ever held at once: ``limit`` and a quarter of it (at least one
        more), when the records are trimmed back to ``limit``."""
        return self.limit + max(1, self.limit // 4)

    def added(self) -> bool:
        """One more frame was recorded; return whether the records are to be trimmed now."""
        self.held += 1
        if self.held > self.peak:
            self.peak = self.held
        return self.held >= self.bound()

    def recount(self, items: list[Item], is_frame: Callable[[Item], bool]) -> None:
        """The records are now ``items`` (a handle covered some)."""
        self.held = sum(1 for item in items if is_frame(item))

    def trim(self, items: list[Item], is_frame: Callable[[Item], bool]) -> list[Item]:
        """``items`` without their oldest frames beyond the newest ``limit``; count those."""
        extra = self.held - self.limit
        if extra <= 0:
            return items
        kept: list[Item] = []
        for item in items:
            if extra and is_frame(item):
                extra -= 1
                continue
            kept.append(item)
        dropped = self.held - self.limit
        self.held = self.limit
        self.dropped_total += dropped
        self._dropped_since_replay += dropped
        return kept

    def left_out(self, frames: int) -> None:
        """``frames`` taken for a replay are not sent (a finished exchange's, or any for a
        fresh session): counted as left uncovered."""
        self.dropped_total += frames

    def replayed(self) -> int:
        """The records were taken for a replay: none is held; return the frames that left
        uncovered since the previous replay."""
        self.held = 0
        dropped, self._dropped_since_replay = self._dropped_since_replay, 0
        return dropped
