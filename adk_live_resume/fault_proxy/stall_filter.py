"""A stall made out of a healthy upstream's messages: what the fault proxy lets through.

:class:`StallFilter` is one proxied connection's ``stall`` fault (the shapes of
:meth:`Fault.stall <adk_live_resume.testing.Fault.stall>`, their sources there). Once armed,
the next user turn starts the stall: one the client sends (``clientContent`` with
``turnComplete``, ``realtimeInput`` text or ``activityEnd``, a ``toolResponse``), or one the
server says it hears, as a call with the server's voice detection sends none of those: an
``inputTranscription``, a ``speechState`` (Vertex AI's; protocol notes, "speechState"), or
the start of an answer (model output or a tool call after a turn ended: an answer streaming
when the stall was armed ends first). From then on
every server message is rewritten as :meth:`StallFilter.down` says:

* ``silent``: no answer (``serverContent``, tool calls and their cancellations) goes
  through; ``setupComplete``, ``goAway`` and the rest do (the socket stays open and pings
  are answered: the proxy's websocket answers them itself);
* ``empty``: only ``turnComplete``, stripped of everything else;
* ``rejected``: the same with ``turnCompleteReason: RESPONSE_REJECTED``;
* ``quiet_audio``: answer audio replaced by near silence of the same length, text, tool
  calls and output transcriptions dropped, ``turnComplete`` kept.

In every shape what the server says of the user's speech (``inputTranscription``,
``speechState``) still goes through: a stalled session that still transcribes its user is
one of the shapes reported (the stall rule's "no answer after an utterance the server
transcribed"), and a client needs them to see the utterance waiting.

Handles (``sessionResumptionUpdate``) are withheld once the stall began: a resume goes back
to the last handle from before it, as it would from a service that stopped mid-session. For
a stall of the session (``session=True``) the proxy keeps the handles its connection saw,
and stalls a connection that resumes one of them from its setup on.

Pure: no I/O.
"""

from __future__ import annotations

import base64
import json
from typing import Any, Literal

from .wire_json import pick, pick_dict

__all__ = ["STALL_SHAPES", "StallFilter", "StallShape"]

#: The shapes of a ``stall`` fault (see :mod:`adk_live_resume.testing.faults`).
StallShape = Literal["silent", "empty", "rejected", "quiet_audio", "after_barge_in", "canned"]
#: The shapes both the fault proxy and the fake server play.
STALL_SHAPES: tuple[StallShape, ...] = ("silent", "empty", "rejected", "quiet_audio")

#: What the server says of the user's speech: never an answer, kept through a stall.
_HEARD = ("inputTranscription", "speechState")
#: Server content that is (part of) an answer.
_ANSWER_PARTS = ("modelTurn", "outputTranscription")

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
        #: An answer may stream (model output or a tool call since the last turn ended; one
        #: may be under way when the stall is armed).
        self._answering = True

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
        value = _json(message)
        if not self.stalling:
            self._begin_on_the_servers_word(value)
            if not self.stalling:
                return message
        if not isinstance(value, dict) or not _ANSWERS.intersection(value):
            return message  # setupComplete, goAway, usage: the session is healthy
        content = pick_dict(value, "serverContent")
        heard = {key: content[key] for key in _HEARD if content is not None and key in content}
        answer = self._shaped(content)
        if answer is None:
            return {"serverContent": heard} if heard else None
        if heard:
            answer["serverContent"] = {**heard, **answer["serverContent"]}
        return answer

    def _begin_on_the_servers_word(self, value: Any) -> None:
        """Begin the stall if the server says it hears the user, or an answer begins."""
        if not isinstance(value, dict):
            return
        content = pick_dict(value, "serverContent")
        answer_part = content is not None and any(pick(content, k) for k in _ANSWER_PARTS)
        starts_answer = (answer_part or pick_dict(value, "toolCall") is not None) and not (
            self._answering
        )
        heard = content is not None and any(pick(content, key) for key in _HEARD)
        if heard or starts_answer:
            self.stalling = True
            return
        if answer_part or pick_dict(value, "toolCall") is not None:
            self._answering = True
        if content is not None and (pick(content, "turnComplete") or pick(content, "interrupted")):
            self._answering = False

    def _shaped(self, content: dict[str, Any] | None) -> dict[str, Any] | None:
        """The stall's shape of the answer part of ``content`` (``None``: nothing)."""
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
