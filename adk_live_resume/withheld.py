"""User content that ADK's send step took and never sent to the model: kept out of history.

ADK's send step writes a typed user turn to the ADK session *before* it screens the turn
with ``before_model_callback``; a turn the callback blocks never goes to the model, but it
stays in the session. A fresh session's history is rebuilt from the ADK session (after a dead
handle, for the child of an agent transfer, for a new ``run_live`` of the same session), and
would carry the blocked turn to the model after all. The live loop notes each user turn the
send step took and came back from without sending (:class:`~.queue_guard.QueueGuard`), here,
per ADK session, and leaves it out of every history it sends (:func:`without_withheld`).

Guarantees:

* a noted turn is left out of every history this process builds for that ADK session, once
  per time it was withheld (the same words sent again and answered stay in);
* the record is per process and bounded (:data:`MAX_SESSIONS` sessions, :data:`MAX_TURNS`
  turns each, the oldest forgotten first): a fresh session started by another worker of a
  deployment still rebuilds its history from the ADK session alone.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Sequence
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


def note(session_id: str, content: Any) -> None:
    """ADK's send step took the user turn ``content`` of ``session_id`` and did not send it."""
    text = content_text(content)
    if not session_id or not text:
        return
    with _lock:
        turns = _by_session.setdefault(session_id, [])
        _by_session.move_to_end(session_id)
        turns.append(text)
        del turns[:-MAX_TURNS]
        while len(_by_session) > MAX_SESSIONS:
            _by_session.popitem(last=False)


def texts(session_id: str) -> list[str]:
    """The withheld turns of ``session_id``, oldest first."""
    with _lock:
        return list(_by_session.get(session_id, ()))


def without_withheld(contents: Sequence[Any], withheld: Sequence[str]) -> list[Any]:
    """``contents`` without the user turns in ``withheld`` (each taken out once, the earliest
    matching turn first). ``contents`` itself is not changed."""
    history = list(contents)
    for text in withheld:
        for position, content in enumerate(history):
            if getattr(content, "role", None) == "user" and content_text(content) == text:
                del history[position]
                break
    return history


def forget(session_id: str) -> None:
    """Drop the record of ``session_id`` (for tests)."""
    with _lock:
        _by_session.pop(session_id, None)
