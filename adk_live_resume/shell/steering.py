"""Moves an app asks for: the live run of a request queue moved, or started fresh, on demand.

An app that knows its live session is unhealthy (a language switch gone wrong, a model stuck
repeating a refusal) asks through the ``LiveRequestQueue`` it gave ``Runner.run_live``:
:func:`request_move` moves the session to a resumed connection at the next safe point,
:func:`request_fresh_start` starts a fresh session with the conversation rebuilt from the
ADK session, at the next safe point too. ``on_reconnect`` then reports the reconnect with
``reason="requested"`` and the app's reason as its ``cause``; ``on_before_move`` hooks hear
of it as it begins. The loop registers each run with its queue while it runs
(:func:`serving`).

Guarantees:

* A request is never dropped in silence: a queue no patched run serves raises
  :class:`~adk_live_resume.NoLiveRunError`, a reason that is not a non-empty string raises
  :class:`TypeError` or :class:`ValueError`, each saying what to do.
* Safe from any thread: from another thread than the run's event loop, the request is
  handed to that loop (``call_soon_threadsafe``).
* A request that comes while the run is between connections (an outage, a move under way)
  is carried out on the next connection, at its first safe point.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from typing import Any, Protocol

from ..rules.errors import NoLiveRunError
from ..rules.lifecycle_events import Asked

logger = logging.getLogger("adk_live_resume")


class Steered(Protocol):
    """A live run, as an asked move reaches it (the loop's ``LiveRun``)."""

    def ask(self, asked: Asked) -> None:
        """Carry out ``asked`` at the next safe point (on the next connection, if none is
        serving now)."""
        ...


_lock = threading.Lock()
#: The runs serving each queue now, by the queue's identity (the newest last: an agent
#: transfer's run serves the queue its parent served).
_serving: dict[int, list[tuple[Any, Steered, asyncio.AbstractEventLoop]]] = {}


def serving(queue: Any, run: Steered) -> Callable[[], None]:
    """``run`` serves ``queue`` from now on (call on its event loop); return the function that
    ends that."""
    entry = (queue, run, asyncio.get_running_loop())
    with _lock:
        _serving.setdefault(id(queue), []).append(entry)

    def done() -> None:
        with _lock:
            runs = _serving.get(id(queue), [])
            if entry in runs:
                runs.remove(entry)
            if not runs:
                _serving.pop(id(queue), None)

    return done


def request_move(queue: Any, reason: str) -> None:
    """Move the live session served with ``queue`` to a new connection that resumes it, at
    the next safe point (no answer or turn in flight, the user not speaking).

    ``queue`` is the ``LiveRequestQueue`` given to ``Runner.run_live``; ``reason`` says why,
    in words (``on_reconnect``'s ``cause`` carries it). Raises
    :class:`~adk_live_resume.NoLiveRunError` when no patched live run serves ``queue`` now,
    :class:`TypeError` or :class:`ValueError` for a reason that is not a non-empty string.
    """
    _request(queue, reason, fresh=False, name="request_move")


def request_fresh_start(queue: Any, reason: str) -> None:
    """Start a fresh live session for the run served with ``queue``, with the conversation
    rebuilt from the ADK session, at the next safe point; the old session's handle is left
    behind.

    As :func:`request_move` for ``queue``, ``reason`` and the errors; ``on_reconnect``
    reports it with ``state_restored`` false.
    """
    _request(queue, reason, fresh=True, name="request_fresh_start")


def _request(queue: Any, reason: str, *, fresh: bool, name: str) -> None:
    if not isinstance(reason, str):
        raise TypeError(
            f"{name}() needs the reason as a string, not {type(reason).__name__}: say why in"
            " words, e.g. 'the model keeps refusing'"
        )
    why = reason.strip()
    if not why:
        raise ValueError(
            f"{name}() needs a reason: say why in words, e.g. 'the model keeps refusing';"
            " it becomes the reconnect's cause"
        )
    with _lock:
        runs = _serving.get(id(queue), [])
        found = runs[-1] if runs and runs[-1][0] is queue else None
    if found is None:
        raise NoLiveRunError(
            f"{name}(): no live run serves this LiveRequestQueue now; pass the queue given"
            " to Runner.run_live while that run is live, with adk_live_resume installed or a"
            f" ResumableLlmAgent (the queue: {type(queue).__name__})"
        )
    _, run, loop = found
    asked = Asked(why, "requested", fresh=fresh)
    logger.info("the app asked for a %s: %s", "fresh start" if fresh else "move", why)
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        run.ask(asked)
    else:
        loop.call_soon_threadsafe(run.ask, asked)
