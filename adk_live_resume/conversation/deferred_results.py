"""Deferred results: background results held back until the user is quiet.

A turn given mid-utterance would split the utterance.

After a fresh start, the result of a NON_BLOCKING call the session's history lacks goes to
the session as a user turn carrying it (:meth:`ToolCallBook.goes_as_turn
<adk_live_resume.conversation.tool_calls.ToolCallBook.goes_as_turn>`). Client content sent while the
user speaks ends the utterance there: the model would answer its two halves apart. So such a turn
waits in :class:`DeferredResults` while the user speaks or has an utterance the model has not
answered yet, and goes with the next client send after that.

Guarantees:

* a turn held here is sent once, in the order held, on the session it was meant for or on a
  session resumed from it (a handle does not cover what was never sent);
* a fresh session whose history (rebuilt by ADK from the session) already holds every
  response of a turn drops that turn; a turn it lacks is kept for it;
* a turn never waits longer than :data:`MAX_WAIT_SECONDS`: a user who keeps talking, or an
  utterance the model never answers, does not keep a result from the model for ever.

Pure: no I/O; the caller gives the time.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .fresh_history import response_ids

#: The longest a held turn waits for the user to be quiet (seconds, event-loop time).
MAX_WAIT_SECONDS = 15.0

#: A client send: the session method's name and its keyword arguments.
Send = tuple[str, dict[str, Any]]


@dataclass
class DeferredResults:
    """Deferred results: turns carrying background results, held back until the user is
    quiet (see the module docstring)."""

    max_wait: float = MAX_WAIT_SECONDS
    _turns: list[tuple[Send, float]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self._turns)

    def hold(self, turn: Send, now: float) -> None:
        """Keep ``turn`` until :meth:`due` gives it."""
        self._turns.append((turn, now))

    def due(self, *, user_busy: bool, now: float) -> list[Send]:
        """The turns to send now, in the order held: all of them once the user is not busy
        (speaking, or an utterance not answered yet), or once the oldest waited
        :attr:`max_wait`."""
        if not self._turns:
            return []
        if user_busy and now - self._turns[0][1] < self.max_wait:
            return []
        turns = [turn for turn, _ in self._turns]
        self._turns.clear()
        return turns

    def on_fresh_session(self, responses_in_history: Iterable[str]) -> None:
        """A fresh session started with a history holding ``responses_in_history``: drop the
        turns it holds already."""
        known = set(responses_in_history)
        self._turns = [
            (turn, at)
            for turn, at in self._turns
            if not response_ids(turn[1].get("turns") or ()) <= known
        ]
