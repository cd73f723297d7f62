"""Tool calls by id across connections: each call runs its tool once, each answer goes once.

A resumed session knows the calls its handle's state holds, not the ones issued after it.
So, per run, :class:`ToolCallBook` keeps:

* every call id issued, with its *key* (tool name and canonical JSON arguments);
* the ids issued since the newest handle: a session resumed from that handle never saw
  them, so a response for one of them must not be sent to it (the model would get an answer
  to a question it never asked) but is kept;
* *repeatable* calls: after a resume, the model answers the replayed input again and may
  issue the same call anew, under a new id. The first new call with the same key is then
  answered with the earlier result instead of running the tool twice. If the earlier call
  has no result (ADK 1.28+ holds calls until ``turnComplete`` and never ran it, or it was
  cut off), the tool runs for the new call: ADK runs tools inside its receive step, so a
  call that ran to the end always has its result before the loop can reconnect;
* everything else is a new call and runs its tool, even with the same name and arguments
  as an earlier one (a balance looked up again must be looked up again).

Guarantees:

* a repeat is recognised only on a connection resumed from a handle older than the earlier
  call, only until the resumed session finished answering (its first turn with model output
  completes), and each earlier call answers at most one repeat;
* after a fresh session (the handle was dead) nothing is repeatable: the rebuilt history
  holds the calls and results the ADK session has;
* a response is never sent for an id the current session does not know.

Pure: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any


def call_key(name: str | None, args: Any) -> str:
    """A stable key for "the same call": tool name and canonical JSON of its arguments."""
    return f"{name}:{json.dumps(args or {}, sort_keys=True, default=str)}"


@dataclass(frozen=True)
class Decision:
    """What to do with the calls of one ``toolCall`` message."""

    #: Ids whose tool must run (ADK runs them).
    run: tuple[str, ...]
    #: ``(new id, result)`` to answer at once with a result known from before the resume.
    answer: tuple[tuple[str, dict[str, Any]], ...]


@dataclass
class ToolCallBook:
    """The run's tool calls; see the module docstring for the rules."""

    max_results: int = 256
    _keys: dict[str, str] = field(default_factory=dict)
    _since_handle: set[str] = field(default_factory=set)
    _unknown: set[str] = field(default_factory=set)
    _repeatable: dict[str, str] = field(default_factory=dict)
    _results: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Calls answered with an earlier result instead of running the tool again.
    reused: int = 0

    # -- facts ----------------------------------------------------------------------------

    def on_handle(self) -> None:
        """A resumable handle arrived: its state holds every call issued so far."""
        self._since_handle.clear()

    def on_calls(self, calls: Iterable[tuple[str, str | None, Any]]) -> Decision:
        """The model issued ``(id, name, args)`` calls in one message; decide for each."""
        run: list[str] = []
        answer: list[tuple[str, dict[str, Any]]] = []
        for call_id, name, args in calls:
            key = call_key(name, args)
            self._keys[call_id] = key
            self._since_handle.add(call_id)
            earlier = next((e for e, k in self._repeatable.items() if k == key), None)
            if earlier is not None:
                del self._repeatable[earlier]
            if earlier is None or earlier not in self._results:
                run.append(call_id)
                continue
            self.reused += 1
            result = self._results[earlier]
            self._results[call_id] = result
            answer.append((call_id, result))
        return Decision(tuple(run), tuple(answer))

    def on_result(self, call_id: str, result: dict[str, Any]) -> None:
        """The tool of ``call_id`` finished with ``result`` (its response is being sent)."""
        self._results[call_id] = result
        while len(self._results) > self.max_results:
            del self._results[next(iter(self._results))]

    def on_answered(self) -> None:
        """The session finished a turn with model output: later calls are new calls."""
        self._repeatable.clear()

    # -- connection changes ---------------------------------------------------------------

    def on_resumed(self) -> None:
        """A new connection resumed from the newest handle."""
        missed = set(self._since_handle)
        self._unknown |= missed
        # Accumulated: a connection that drops again before the model repeated the call
        # must not make the call forgettable.
        self._repeatable.update({i: self._keys[i] for i in missed if i in self._keys})
        self._since_handle.clear()

    def on_fresh_session(self) -> None:
        """A new session started without a handle: it knows no call id at all."""
        self._unknown |= set(self._keys)
        self._repeatable.clear()
        self._since_handle.clear()

    # -- questions ------------------------------------------------------------------------

    def unknown_ids(self) -> set[str]:
        """Ids the current session never saw: responses to them must not be sent."""
        return set(self._unknown)

    def is_unknown(self, call_id: str) -> bool:
        return call_id in self._unknown
