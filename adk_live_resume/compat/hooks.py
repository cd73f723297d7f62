"""Every hook into another library's internals, checked once per process.

The live loop reaches under ADK, google-genai and websockets in a few places (their names are
in :mod:`adk_live_resume.compat.adk_compat`, :mod:`~.genai_compat` and
:mod:`~.websockets_compat`): ADK's ``GeminiLlmConnection._gemini_session`` (the
google-genai session it taps), google-genai's ``AsyncSession._ws``,
``AsyncSession.send_realtime_input`` and ``AsyncSession._receive``, its ``live.ws_connect``,
and websockets' ``process_event`` (close frames, goAway messages and messages of unknown
kinds as they arrive) and close state.
:func:`check` looks for each of them once, when the patch is installed (for the subclass entry
point, at its first live run).

Guarantees:

* ADK's ``GeminiLlmConnection._gemini_session`` is essential (without it nothing resumes): if
  it is missing, :func:`check` raises
  :class:`~adk_live_resume.rules.errors.UnsupportedAdkVersionError` naming it, every time it is
  called.
* Every other hook serves an optional feature (:data:`FEATURES`). A feature whose internal is
  missing is off for the process, and one WARNING says so, naming the feature, what it costs
  and the missing internal; features off for the same missing internals share one WARNING.
  Live runs still resume without them. The WARNINGs are logged once per process.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass

from . import adk_compat, genai_compat, websockets_compat

logger = logging.getLogger("adk_live_resume")

EARLY_DIAL = "early dial"
CLOSE_FRAME_DIAL = "close-frame dial"
GO_AWAY_FRAME = "goAway at its frame"
SKIP_UNKNOWN = "unknown messages skipped"
CHUNK_ENCODING = "chunk encoding"
MESSAGE_DECODING = "message decoding"
SOCKET_ABORT = "socket abort"


def _essential() -> str:
    return f"GeminiLlmConnection.{adk_compat.ADK_GENAI_SESSION}"


@dataclass(frozen=True)
class Feature:
    """An optional feature: what turning it off costs, and the internals it needs."""

    name: str
    cost: str
    needs: tuple[str, ...]


def _features() -> tuple[Feature, ...]:
    """The optional features, with the internals' current names (see the ``*_compat``
    modules)."""
    ws_connect = f"google.genai.live.{genai_compat.GENAI_WS_CONNECT}"
    websocket = f"google.genai.live.AsyncSession.{genai_compat.GENAI_WEBSOCKET}"
    return (
        Feature(
            EARLY_DIAL,
            "a reconnect after a goAway that lands in an answer pays the TCP, TLS and "
            "websocket handshakes after the answer instead of during it",
            (ws_connect,),
        ),
        Feature(
            CLOSE_FRAME_DIAL,
            "after a server's close the next socket is opened only when google-genai "
            "reports the close, a round trip after the close frame",
            (
                ws_connect,
                websocket,
                f"websockets.asyncio.client.ClientConnection.{websockets_compat.WEBSOCKETS_PROCESS_EVENT}",
                f"websockets.protocol.Protocol.{websockets_compat.WEBSOCKETS_CLOSE_RCVD_THEN_SENT}",
                f"websockets.protocol.Protocol.{websockets_compat.WEBSOCKETS_CLOSE_RCVD}",
            ),
        ),
        Feature(
            GO_AWAY_FRAME,
            "a goAway is noticed only when ADK reads it: while a blocking tool runs, its "
            "deadline starts late and the planned move may become a drop at the server's "
            "deadline",
            (
                websocket,
                f"websockets.asyncio.client.ClientConnection.{websockets_compat.WEBSOCKETS_PROCESS_EVENT}",
            ),
        ),
        Feature(
            SKIP_UNKNOWN,
            "a server message of a kind google-genai does not know ends the live run, as it "
            "does without the patch",
            (
                websocket,
                f"websockets.asyncio.client.ClientConnection.{websockets_compat.WEBSOCKETS_PROCESS_EVENT}",
            ),
        ),
        Feature(
            CHUNK_ENCODING,
            "every microphone chunk goes through google-genai's per-call validation and "
            "encoding (about 40 µs of CPU per chunk)",
            (
                websocket,
                f"google.genai.live.AsyncSession.{genai_compat.GENAI_SEND_REALTIME_INPUT}",
            ),
        ),
        Feature(
            MESSAGE_DECODING,
            "every server message goes through google-genai's per-message conversion and "
            "Python-side checks (about 30 to 70 µs of CPU per message)",
            (
                websocket,
                f"google.genai.live.AsyncSession.{genai_compat.GENAI_RECEIVE}",
            ),
        ),
        Feature(
            SOCKET_ABORT,
            "a dead or retired connection's socket is closed with websockets' close handshake "
            "and timeout instead of aborted at once",
            (websocket,),
        ),
    )


@dataclass(frozen=True)
class Hooks:
    """Which optional features are off, and the internals each misses."""

    off: Mapping[str, tuple[str, ...]]

    def on(self, feature: str) -> bool:
        return feature not in self.off


_lock = threading.Lock()
_checked: Hooks | None = None


def check() -> Hooks:
    """The features available in this process; the first call logs the WARNINGs.

    Raises :class:`UnsupportedAdkVersionError` if ADK's essential internal is missing."""
    global _checked
    with _lock:
        if _checked is not None:
            return _checked
        found = {
            **adk_compat.probe_internals(),
            **genai_compat.probe_internals(),
            **websockets_compat.probe_internals(),
        }
        essential = _essential()
        if not found.get(essential, False):
            raise adk_compat.unsupported(
                f"{essential} (the google-genai session under ADK's live connection), without"
                " which adk-live-resume cannot resume anything"
            )
        off = {
            feature.name: missing
            for feature in _features()
            if (missing := tuple(n for n in feature.needs if not found.get(n, False)))
        }
        _warn(off)
        _checked = Hooks(off)
        return _checked


def _warn(off: Mapping[str, tuple[str, ...]]) -> None:
    costs = {feature.name: feature.cost for feature in _features()}
    by_cause: dict[tuple[str, ...], list[str]] = {}
    for name, missing in off.items():
        by_cause.setdefault(missing, []).append(name)
    for missing, names in by_cause.items():
        logger.warning(
            "adk_live_resume: %s %s off, because %s %s not found in this release: %s. Live "
            "runs still resume; please report it, and check for a newer adk-live-resume.",
            _and(names),
            "is" if len(names) == 1 else "are",
            _and(missing),
            "is" if len(missing) == 1 else "are",
            "; ".join(costs[name] for name in names),
        )


def _and(words: list[str] | tuple[str, ...]) -> str:
    if len(words) <= 1:
        return "".join(words)
    return ", ".join(words[:-1]) + " and " + words[-1]


def forget() -> None:
    """Check again at the next :func:`check` (for tests that simulate a missing internal)."""
    global _checked
    with _lock:
        _checked = None
