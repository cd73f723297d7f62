"""A stall made out of a healthy upstream's messages: what the fault proxy lets through.

:class:`StallFilter` is one proxied connection's ``stall`` fault (the shapes of
:meth:`Fault.stall <adk_live_resume.testing.Fault.stall>`, their sources there). Once armed,
the next user turn the client sends (``clientContent`` with ``turnComplete``,
``realtimeInput`` text or ``activityEnd``, a ``toolResponse``) starts the stall, and from
then on every server message is rewritten as :meth:`StallFilter.down` says:

* ``silent``: no answer (``serverContent``, tool calls and their cancellations) goes
  through; ``setupComplete``, ``goAway`` and the rest do (the socket stays open and pings
  are answered: the proxy's websocket answers them itself);
* ``empty``: only ``turnComplete``, stripped of everything else;
* ``rejected``: the same with ``turnCompleteReason: RESPONSE_REJECTED``;
* ``quiet_audio``: answer audio replaced by near silence of the same length, text, tool
  calls and transcriptions dropped, ``turnComplete`` kept.

Handles (``sessionResumptionUpdate``) are withheld once the stall began: a resume goes back
to the last handle from before it, as it would from a service that stopped mid-session. For
a stall of the session (``session=True``) the proxy keeps the handles its connection saw,
and stalls a connection that resumes one of them from its setup on.

Pure: no I/O.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from .protocol import pick, pick_dict

__all__ = ["StallFilter"]

#: What a stall withholds or empties (either spelling): answers and handles.
_ANSWERS = frozenset(
    {
        "serverContent",
        "server_content",
        "toolCall",
        "tool_call",
        "toolCallCancellation",
        "tool_call_cancellation",
        "sessionResumptionUpdate",
        "session_resumption_update",
    }
)


def _json(message: str | bytes) -> Any:
    try:
        return json.loads(message)
    except (ValueError, UnicodeDecodeError):
        return None


def _quiet(data: str) -> str:
    """Base64 PCM of the same length as ``data``'s, near silence (16-bit samples of +-20)."""
    size = len(base64.b64decode(data))
    samples = b"\x14\x00\xec\xff" * (size // 4) + b"\x00" * (size % 4)
    return base64.b64encode(samples).decode()


class StallFilter:
    """One connection's stall in ``shape``; ``armed``: it begins at the next user turn
    (``False``: at once, for a connection resuming a stalled session)."""

    def __init__(self, shape: str, *, session: bool, armed: bool = True) -> None:
        self.shape = shape
        self.session = session
        self.stalling = not armed

    def up(self, message: str | bytes) -> None:
        """A client message went up: a user turn begins the stall."""
        if self.stalling:
            return
        value = _json(message)
        content = pick_dict(value, "clientContent")
        realtime = pick_dict(value, "realtimeInput")
        if (
            (content is not None and pick(content, "turnComplete"))
            or (realtime is not None and (pick(realtime, "text") or pick(realtime, "activityEnd")))
            or pick_dict(value, "toolResponse") is not None
        ):
            self.stalling = True

    def down(self, message: str | bytes) -> str | bytes | dict[str, Any] | None:
        """What goes to the client for the upstream's ``message`` (``None``: nothing; a dict:
        this message instead, sent as JSON)."""
        if not self.stalling:
            return message
        value = _json(message)
        if not isinstance(value, dict) or not _ANSWERS.intersection(value):
            return message  # setupComplete, goAway, usage: the session is healthy
        content = pick_dict(value, "serverContent")
        if content is None or self.shape == "silent":
            return None
        if self.shape == "quiet_audio":
            parts = []
            for part in pick(pick_dict(content, "modelTurn"), "parts") or []:
                blob = pick_dict(part, "inlineData")
                if blob is not None and str(pick(blob, "mimeType") or "").startswith("audio"):
                    data = str(pick(blob, "data") or "")
                    quiet = {"mimeType": pick(blob, "mimeType"), "data": _quiet(data)}
                    parts.append({"inlineData": quiet})
            kept: dict[str, Any] = {"modelTurn": {"parts": parts}} if parts else {}
            if pick(content, "turnComplete"):
                kept["turnComplete"] = True
            return {"serverContent": kept} if kept else None
        if not pick(content, "turnComplete"):
            return None
        ending: dict[str, Any] = {"turnComplete": True}
        if self.shape == "rejected":
            ending["turnCompleteReason"] = "RESPONSE_REJECTED"
        return {"serverContent": ending}
