"""Lines a user must see where ADK's own log lines go, even when logged before logging is set up.

``install()`` often runs before anything configured logging: the launcher installs at
interpreter start, before ADK's CLI (``adk web``, ``adk api_server``) sets the root logger up,
and an INFO record logged then is dropped (Python's last-resort handler shows WARNINGs only).

Guarantees:

* :func:`announce` logs its line at once if a handler would show it (an INFO record on its
  logger reaches a handler). Otherwise the line is held and logged once, on the same logger,
  right after ADK's CLI sets logging up, or else at the next :func:`flush` (the first live
  run) that finds it shown. A line that is never shown is never forced onto a console: where
  nothing shows INFO, ADK's lines do not show either.
* One line is held per ``key``: a newer one replaces it; :func:`withdraw` drops it
  (``uninstall()``).
* The subclass entry point says once per process, at its first live run, that its live runs
  resume (:func:`announce_subclass`).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from ..compat import adk_compat

_lock = threading.Lock()
_held: dict[str, tuple[logging.Logger, str, tuple[Any, ...]]] = {}
_subclass_announced = False


def shown(logger: logging.Logger) -> bool:
    """Whether an INFO record on ``logger`` reaches a handler now."""
    return logger.isEnabledFor(logging.INFO) and logger.hasHandlers()


def announce(key: str, logger: logging.Logger, message: str, *args: Any) -> None:
    """Log ``message % args`` at INFO on ``logger`` now if shown, else once it is shown."""
    if shown(logger):
        withdraw(key)
        logger.info(message, *args)
        return
    with _lock:
        _held[key] = (logger, message, args)
    adk_compat.after_adk_cli_logging_setup(flush)


def flush() -> None:
    """Log the held lines that a handler now shows. Never raises."""
    with _lock:
        ready = [key for key, (logger, _, _) in _held.items() if shown(logger)]
        lines = [_held.pop(key) for key in ready]
    for logger, message, args in lines:
        logger.info(message, *args)


def withdraw(key: str) -> None:
    """Forget a held line (what it announced is no longer true)."""
    with _lock:
        _held.pop(key, None)


def announce_subclass(logger: logging.Logger, message: str, *args: Any) -> None:
    """:func:`announce`, the first time it is called in this process only."""
    global _subclass_announced
    with _lock:
        if _subclass_announced:
            return
        _subclass_announced = True
    announce("subclass", logger, message, *args)
