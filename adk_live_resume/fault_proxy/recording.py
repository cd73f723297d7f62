"""Recordings of Live sessions as JSON lines, every frame both ways, secrets and audio redacted.

The fault proxy writes one when asked (``FaultProxy(record=PATH)``, ``python -m
adk_live_resume.testing proxy --record PATH``): a user with a key records a session against
the real service once, then compares it offline with what the fake says for the same client
messages (:func:`~adk_live_resume.testing.recording_check.compare_with_fake`).

Format: one JSON object a line. The first says what the file is (``{"recording":
"adk-live-resume", "version": 1}``); then, in the order the proxy relayed them:

* ``{"t": 1.25, "connection": 1, "open": "/ws/...BidiGenerateContent"}``: a websocket opened
  (the path without its query, which may carry a key);
* ``{"t": ..., "connection": 1, "from": "client" | "server", "message": {...}}``: one frame,
  parsed as JSON (a frame that is not JSON: ``"text"`` with its length only);
* ``{"t": ..., "connection": 1, "end": "upstream", "code": 1008}``: how it ended (the
  proxy's ``ended_by``; ``code`` None for an abort).

Guarantees: no resumption handle, API key or token, and no audio, image or video byte is ever
written. A handle becomes ``"<handle N>"``, N counting distinct handles from 1 in the order
they first appear, so a recording still shows which handle a setup resumed; a value under a
key that names a credential becomes ``"<redacted>"``; inline data (``data`` beside a
``mimeType``, in any casing) becomes ``"<N bytes>"`` with its decoded length. ``t`` is seconds
since the recorder started (monotonic).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .wire_json import b64decode_any

__all__ = ["RecordedLine", "Recorder", "read_recording"]

HEADER = {"recording": "adk-live-resume", "version": 1}

_HANDLE_KEYS = frozenset({"newHandle", "new_handle", "handle"})
_SECRET_KEYS = frozenset(
    {"key", "apiKey", "api_key", "accessToken", "access_token", "token", "authorization"}
)
_MIME_KEYS = ("mimeType", "mime_type")


class _Redactor:
    """Rewrites one session's messages; numbers the handles it has seen."""

    def __init__(self) -> None:
        self._handles: dict[str, str] = {}

    def handle(self, value: str) -> str:
        if value not in self._handles:
            self._handles[value] = f"<handle {len(self._handles) + 1}>"
        return self._handles[value]

    def __call__(self, value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            blob = any(k in value for k in _MIME_KEYS) and isinstance(value.get("data"), str)
            out: dict[str, Any] = {}
            for k, v in value.items():
                if blob and k == "data":
                    out[k] = f"<{len(b64decode_any(v))} bytes>"
                elif k in _HANDLE_KEYS and isinstance(v, str) and v:
                    out[k] = self.handle(v)
                elif k in _SECRET_KEYS and isinstance(v, str):
                    out[k] = "<redacted>"
                else:
                    out[k] = self(v, k)
            return out
        if isinstance(value, list):
            return [self(v, key) for v in value]
        return value


def redact_frame(frame: str | bytes, redactor: _Redactor | None = None) -> dict[str, Any]:
    """The ``message`` (or ``text``) fields of one frame's line, redacted (pure but for the
    handle numbering ``redactor`` keeps)."""
    try:
        parsed = json.loads(frame)
    except ValueError:
        return {"text": f"<{len(frame)} {'bytes' if isinstance(frame, bytes) else 'chars'}>"}
    return {"message": (redactor or _Redactor())(parsed)}


class Recorder:
    """Writes one recording file (see the module docstring); safe to call from any task."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._file = self.path.open("w", encoding="utf-8")
        self._lock = threading.Lock()
        self._started = time.monotonic()
        self._redact = _Redactor()
        self._write(dict(HEADER))

    def _write(self, line: dict[str, Any]) -> None:
        with self._lock:
            if self._file.closed:
                return
            self._file.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")
            self._file.flush()

    def _now(self) -> float:
        return round(time.monotonic() - self._started, 3)

    def opened(self, connection: int, path: str) -> None:
        """Connection ``connection`` opened on ``path`` (its query is dropped here)."""
        self._write({"t": self._now(), "connection": connection, "open": path.split("?")[0]})

    def frame(self, connection: int, *, from_client: bool, frame: str | bytes) -> None:
        """One frame relayed on ``connection``."""
        line: dict[str, Any] = {
            "t": self._now(),
            "connection": connection,
            "from": "client" if from_client else "server",
        }
        line.update(redact_frame(frame, self._redact))
        self._write(line)

    def ended(self, connection: int, ended_by: str, code: int | None) -> None:
        """Connection ``connection`` ended (``ended_by`` as the proxy says it)."""
        self._write({"t": self._now(), "connection": connection, "end": ended_by, "code": code})

    def close(self) -> None:
        with self._lock:
            self._file.close()


@dataclass(frozen=True)
class RecordedLine:
    """One line of a recording after its header."""

    t: float
    connection: int
    kind: str  # "open", "client", "server" or "end"
    message: Any = None
    path: str = ""
    ended_by: str = ""
    code: int | None = None


def read_recording(path: str | Path) -> list[RecordedLine]:
    """The lines of a recording, in order; ``ValueError`` if it is not one."""
    return list(_lines(Path(path)))


def _lines(path: Path) -> Iterator[RecordedLine]:
    with path.open(encoding="utf-8") as file:
        header = json.loads(file.readline() or "{}")
        if header.get("recording") != HEADER["recording"]:
            raise ValueError(f"{path} is not an adk-live-resume recording")
        for raw in file:
            if not raw.strip():
                continue
            line = json.loads(raw)
            t, connection = float(line["t"]), int(line["connection"])
            if "open" in line:
                yield RecordedLine(t, connection, "open", path=str(line["open"]))
            elif "end" in line:
                yield RecordedLine(t, connection, "end", ended_by=line["end"], code=line["code"])
            else:
                yield RecordedLine(t, connection, line["from"], message=line.get("message"))
