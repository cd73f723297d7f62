"""The user's say in the retry decision: :func:`on_retry` registers a hook for every live run.

A hook is registered process-wide, like :func:`~adk_live_resume.on_reconnect`, and not as a
:class:`~adk_live_resume.ResumePolicy` field: the policy travels through environment variables
and the launcher's JSON hand-off to child processes, where a function cannot go. The
decision itself (and what a hook's answer means) is :mod:`adk_live_resume.rules.retry_decision`.

Guarantees: registering and removing are thread-safe; a run asks the hooks registered when it
decides (a hook registered mid-run counts from the next drop on); something not callable is
refused at once with :class:`TypeError`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from .retry_decision import RetryHook

_lock = threading.Lock()
_hooks: list[RetryHook] = []


def on_retry(hook: RetryHook) -> Callable[[], None]:
    """Let ``hook(drop, attempt)`` decide about every retry; return a function that removes it.

    Asked for each drop the policy would retry within its caps (``max_attempts``,
    ``outage_timeout``, ``max_reconnects_per_minute``), with the drop (``kind``, close
    ``code``, ``reason``; ``status`` and ``retry_after`` for a refused handshake) and the
    attempt about to be made (1-based within the outage). It answers:

    * ``None``: the policy decides (backoff with full jitter, ``Retry-After`` honoured);
    * ``False``: give up: the run ends with :class:`~adk_live_resume.ReconnectFailedError`;
    * ``True``: retry, with the policy's wait;
    * a number: retry after that many seconds (``0`` at once; never less than the server's
      ``Retry-After``; past the outage's deadline the run gives up at once).

    Several hooks are asked in registration order; the first answer that is not ``None``
    counts. A hook that raises or answers anything else ends the run with
    :class:`~adk_live_resume.ReconnectFailedError` naming the hook, chained to its error. The
    hook runs on the event loop, possibly as a close frame arrives: keep it quick, and do not
    block. It is asked once per attempt: the answer it gives as the server's close frame
    arrives (when the next socket may be opened early) is the one the loop acts on.
    """
    if not callable(hook):
        raise TypeError(
            "on_retry() needs a function taking (drop, attempt) and returning None, a bool or"
            f" seconds, not {type(hook).__name__} {hook!r}"
        )
    with _lock:
        _hooks.append(hook)

    def remove() -> None:
        with _lock:
            if hook in _hooks:
                _hooks.remove(hook)

    return remove


def registered() -> tuple[RetryHook, ...]:
    """The hooks registered now, in registration order."""
    with _lock:
        return tuple(_hooks)
