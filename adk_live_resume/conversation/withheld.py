"""User content that ADK's send step took and never sent to the model: kept out of history.

ADK's send step writes a typed user turn to the ADK session *before* it screens the turn
with ``before_model_callback``; a turn the callback blocks never goes to the model, but it
stays in the session. Whatever this process gives the model from the ADK session would carry
the blocked turn to the model after all: a fresh session's history (after a dead handle, for
the child of an agent transfer, for a new ``run_live`` of the same session) and the catch-up
that goes with a handle stored in the session (:mod:`adk_live_resume.resumption.handle_coverage`).
The live loop notes the session event of each user turn the send step took and came back from
without sending (:class:`~..shell.queue_guard.QueueGuard`, :func:`source_event`), here, per ADK
session; :func:`of_session` is the one filter every history and catch-up goes through.

Guarantees:

* a withheld turn is known by the session event it came from (its id), never by its words:
  the same words said before it, or sent again after it and answered, stay in;
* :meth:`Withheld.events` leaves the withheld events out of a list of session events (the
  catch-up); :meth:`Withheld.history` leaves the turns built from them out of the history ADK
  rebuilt from those events;
* the record is per process and bounded (:data:`MAX_SESSIONS` sessions, :data:`MAX_TURNS`
  turns each, the oldest forgotten first): a fresh session started by another worker of a
  deployment still rebuilds its history from the ADK session alone.

What the callback answered instead (its refusal, written by ADK as the agent's turn) is left
in: it is what the user was shown.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: ADK sessions whose withheld turns this process remembers.
MAX_SESSIONS = 4096
#: Withheld turns remembered per ADK session.
MAX_TURNS = 64

_lock = threading.Lock()
_by_session: collections.OrderedDict[str, list[str]] = collections.OrderedDict()


def content_text(content: Any) -> str:
    """The text parts of a ``Content``, joined ("" for none)."""
    return "".join(
        getattr(part, "text", None) or "" for part in getattr(content, "parts", None) or []
    )


def source_event(events: Sequence[Any], content: Any) -> Any | None:
    """The session event ADK's send step wrote for the user turn ``content`` it took: the
    newest user event holding ``content`` itself, else (ADK stored a copy) the newest user
    event with its text; ``None`` when there is none (a partial turn is not written)."""
    text = content_text(content)
    by_text = None
    for event in reversed(events):
        if getattr(event, "author", None) != "user" or getattr(event, "content", None) is None:
            continue
        if event.content is content:
            return event
        if by_text is None and text and content_text(event.content) == text:
            by_text = event
    return by_text


def note(session_id: str, event_id: str) -> None:
    """ADK's send step took the user turn written as event ``event_id`` of ``session_id`` and
    did not send it."""
    if not session_id or not event_id:
        return
    with _lock:
        turns = _by_session.setdefault(session_id, [])
        _by_session.move_to_end(session_id)
        if event_id not in turns:
            turns.append(event_id)
        del turns[:-MAX_TURNS]
        while len(_by_session) > MAX_SESSIONS:
            _by_session.popitem(last=False)


def of_session(session_id: str) -> Withheld:
    """The filter for what this process gives the model of ``session_id``."""
    with _lock:
        return Withheld(frozenset(_by_session.get(session_id, ())))


def forget(session_id: str) -> None:
    """Drop the record of ``session_id`` (for tests)."""
    with _lock:
        _by_session.pop(session_id, None)


@dataclass(frozen=True)
class Withheld:
    """The user turns of one ADK session that were withheld from the model, by event id."""

    event_ids: frozenset[str] = frozenset()

    def keeps(self, event: Any) -> bool:
        """Whether session event ``event`` may be given to the model."""
        return str(getattr(event, "id", "")) not in self.event_ids

    def events(self, events: Sequence[Any]) -> list[Any]:
        """``events`` without the withheld ones (a new list)."""
        return [event for event in events if self.keeps(event)]

    def history(self, contents: Sequence[Any], events: Sequence[Any]) -> list[Any]:
        """``contents``, the history ADK rebuilt from the session events ``events``, without the
        user turns built from withheld events (a new list; ``contents`` is not changed).

        ADK's history carries no event ids, and it leaves some events out; the user turns it
        keeps are in the events' order: each typed turn with its event's text, each run of
        input transcriptions joined into one turn (:func:`_user_turns`). So a withheld
        event is matched to the user turn of the history with its words at the same place
        among the turns with those words, counted from the end: the third "yes" from the end
        of the session is the third "yes" from the end of the history."""
        if not self.event_ids:
            return list(contents)
        places: dict[str, set[int]] = {}
        seen: collections.Counter[str] = collections.Counter()
        for text, event in reversed(_user_turns(events)):
            if event is not None and not self.keeps(event):
                places.setdefault(text, set()).add(seen[text])
            seen[text] += 1
        kept: list[Any] = []
        counted: collections.Counter[str] = collections.Counter()
        for content in reversed(contents):
            text = content_text(content) if getattr(content, "role", None) == "user" else ""
            if text in places:
                place = counted[text]
                counted[text] += 1
                if place in places[text]:
                    continue
            kept.append(content)
        kept.reverse()
        return kept


def _user_turns(events: Sequence[Any]) -> list[tuple[str, Any | None]]:
    """The user turns of the history ADK builds from ``events``, in order: ``(text, event)``
    for a typed turn, ``(text, None)`` for a run of input transcriptions (ADK joins them into
    one user turn). As ADK does, a newest event that answers a call of an earlier event
    (a background call's late result) is moved next to that call, and the events between
    them are left out: a turn among them is not in the history, so it takes no place."""
    events = _without_skipped(events)
    turns: list[tuple[str, Any | None]] = []
    spoken = ""
    for position, event in enumerate(events):
        if getattr(event, "content", None) is None:
            piece = _transcribed(event)
            if piece:
                spoken += piece
                following = events[position + 1] if position + 1 < len(events) else None
                if spoken and not (following is not None and _transcribed(following)):
                    turns.append((spoken, None))
                    spoken = ""
            continue
        text = _typed_user_text(event)
        if text:
            turns.append((text, event))
    return turns


def _transcribed(event: Any) -> str:
    """The text of an input transcription ADK keeps outside ``content`` ("" for none)."""
    transcription = getattr(event, "input_transcription", None)
    return str(getattr(transcription, "text", None) or "")


def _without_skipped(events: Sequence[Any]) -> Sequence[Any]:
    """``events`` as ADK's history takes them: a newest event carrying function responses
    whose call is in an earlier event than the one before it comes right after that call,
    and what was between them is left out."""
    if len(events) < 3:
        return events
    answered = {
        part.function_response.id
        for part in _parts(events[-1])
        if getattr(part, "function_response", None) is not None
    }
    if not answered:
        return events
    for at in range(len(events) - 2, -1, -1):
        if any(
            getattr(part, "function_call", None) is not None and part.function_call.id in answered
            for part in _parts(events[at])
        ):
            return [*events[: at + 1], events[-1]]
    return events


def _parts(event: Any) -> list[Any]:
    content = getattr(event, "content", None)
    return list(getattr(content, "parts", None) or [])


def _typed_user_text(event: Any) -> str:
    """The text of a user turn ADK's history holds as it was written ("" for other events)."""
    if getattr(event, "author", None) != "user" or getattr(event, "partial", None):
        return ""
    return content_text(getattr(event, "content", None))
