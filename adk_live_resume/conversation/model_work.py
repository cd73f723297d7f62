"""Is the model still working on the request, by what the server says of it?

Models that work in the background (Gemini 3.8 Live with extended thinking) may speak
several times for one request: each utterance ends with ``turnComplete`` while
``serverContent.interactionStatus`` stays ``IN_PROGRESS``; ``IDLE`` comes with the
``turnComplete`` of the utterance that ends the task (the Live API thinking guide, in
``gemini-live-protocol.md``, "Field facts that contradict or extend the above";
google-genai 2.x documents the field as "always sent alongside ``turn_complete``").
So on such a model a ``turnComplete`` alone does not finish the model's turn.
:class:`ModelWork` reads each ``turnComplete`` with the status it came with and says whether
the model's turn is finished; the rules that wait for it (the safe point of a move, the
unanswered-turn rule, what a handle covers, whether an utterance was answered) count a
``turnComplete`` only when it does.

Statuses: ``IDLE``, ``INTERACTION_STATUS_UNSPECIFIED`` and ``REQUIRES_ACTION`` finish the
turn; ``IN_PROGRESS`` does not. ``REQUIRES_ACTION`` is documented by the API reference and
google-genai 3.6.1 as "Deprecated: Use IDLE instead. The server has completed all processing
and background reasoning" (``gemini-live-protocol.md``, "Field facts of 2026-11-29"; an
integration that read it as "still working" hung until its watchdog fired). google-genai's own
``receive`` still ends an interaction at ``IDLE`` only: the SDK disagrees with its docs, and
this module follows the docs. A ``turnComplete`` without a status finishes the turn: a model
that never sends one behaves as before, and a server that stops sending it cannot leave a turn
open for ever. A status of a kind not listed here finishes the turn too (what the model said
is answered, and a handle issued with it holds the request), but the work may go on: it holds
a move (:attr:`ModelWork.holds_move`) for one answer's time at most, until
:meth:`ModelWork.unknown_expired` (the watch calls it after ``stall_timeout``, the time a
turn may wait for an answer), never until the move's deadline.

**One door.** The connection's watch hands each server message to :meth:`ModelWork.read`
once, with its status; every rule that needs the model's turn reads it here: the safe point of
a move, the stall rule's excuse, whether a handle issued now is taken, what a finished turn
answered. The step methods (:meth:`~ModelWork.output`, :meth:`~ModelWork.turn_complete`, ...)
are what :meth:`~ModelWork.read` does with one message, kept public for the tests of the rules.

Three readings of the work, for three kinds of reader:

* :attr:`ModelWork.in_progress`: the model's turn is not finished (the last status did not
  finish it): the safe point and the answer rules wait;
* :attr:`ModelWork.working`: the model owes output of its own accord, "the model is
  working": its output streams (text, audio, a transcription; not a tool call, after which
  it waits for the client), or its last status is ``IN_PROGRESS`` (with a ``turnComplete``,
  or on a message of the turn in progress). What a stall detector
  reads; a turn the model has not begun to answer is :mod:`adk_live_resume.conversation.answers`' to
  tell;
* :attr:`ModelWork.holds_move`: the turn is not finished, or an unknown status
  (:attr:`ModelWork.unknown`, its name) arrived less than one answer's time ago: the safe
  point of a move waits.

And three readings of the turn: :attr:`ModelWork.turn_open` (output seen, no ``turnComplete``
or ``interrupted`` since: the connection ended mid-turn), :attr:`ModelWork.reply_streams`
(output seen, no ``generationComplete``, ``turnComplete``, ``interrupted`` or tool call since:
a handle issued now is not taken) and :attr:`ModelWork.output_in_turn` (output since the last
finishing ``turnComplete``: what :class:`TurnEnd` reports of the turn it finishes).

google-genai 2.x parses the status (``LiveServerContent.interaction_status``); 1.x drops the
field while parsing, so it is read from the raw frame as it arrives
(:mod:`adk_live_resume.rules.wire_classifier`) and :class:`FrameStatuses` gives it back when the
message it came in is read: one websocket message is one server message, read in order.

Guarantees:

* :meth:`ModelWork.turn_complete` returns True exactly when the ``turnComplete`` carried no
  status or one other than ``IN_PROGRESS``; :attr:`ModelWork.in_progress` is then false,
  and stays so until a ``turnComplete`` with another status.
* An unknown status finishes the turn and holds :attr:`ModelWork.holds_move` only until
  :meth:`ModelWork.unknown_expired` or the next ``turnComplete``; ``IN_PROGRESS`` holds it
  until a finishing status.
* :attr:`ModelWork.working` is true from model output until the next finishing
  ``turnComplete``, an ``interrupted`` or a tool call, and while the last status is
  ``IN_PROGRESS``; never otherwise.
* :meth:`ModelWork.read` returns a :class:`TurnEnd` exactly for a message with
  ``turnComplete``, and gives the same readings as the step methods called in the message's
  order (its output parts, an ``interrupted``, then its ``turnComplete``).
* One :class:`ModelWork` serves one connection: a new connection starts with no status (a
  resumed session does not continue a generation in flight; its request is asked again).
* :meth:`FrameStatuses.read` returns the status of the frame read now (counted from
  :meth:`FrameStatuses.start`), never that of a frame after it; an earlier one not read
  yet (none, where reading keeps up) is given with it.

**Working utterances in the ADK session.** ADK stores a working utterance (the model's
words ended by a ``turnComplete`` whose status says the work goes on) as a model turn like
any answer, and google-adk 1.x keeps no status with it. So the live loop labels each event
ADK builds from such a ``turnComplete`` (:func:`label_working`: ``custom_metadata`` under
:data:`WORK_KEY`, written with the event, so every worker reads it), and what is built from
the ADK session asks :func:`is_working` and :func:`unfinished_work`: a working utterance is
no answer, and the request it was said for stays unanswered until a turn that ends the work.

Pure: no I/O, no clock.
"""

from __future__ import annotations

import collections
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "FINISHED_STATUSES",
    "GOING_ON_STATUSES",
    "WORK_KEY",
    "FrameStatuses",
    "ModelWork",
    "TurnEnd",
    "WorkingLabels",
    "is_working",
    "label_working",
    "status_name",
    "unfinished_work",
]

#: ``interactionStatus`` values that finish the model's turn.
FINISHED_STATUSES = frozenset({"IDLE", "INTERACTION_STATUS_UNSPECIFIED", "REQUIRES_ACTION"})
#: ``interactionStatus`` values that say the model's work goes on.
GOING_ON_STATUSES = frozenset({"IN_PROGRESS"})


def status_name(status: object) -> str | None:
    """The status as its wire name (``"IN_PROGRESS"``), from a string or an enum member
    (google-genai's ``InteractionStatus``); ``None`` when absent or empty."""
    if status is None:
        return None
    name = getattr(status, "value", status)
    text = str(name).strip().upper()
    return text or None


@dataclass(frozen=True)
class TurnEnd:
    """What a ``turnComplete`` ended (:meth:`ModelWork.read`)."""

    #: The model's turn is finished (``False``: an utterance ended while its work goes on).
    finished: bool
    #: Model output came in the turn it finished (always ``False`` when not finished).
    had_output: bool = False


@dataclass
class ModelWork:
    """Whether the model works on the request of one connection, and where its turn is
    (see the module)."""

    #: The last ``interactionStatus`` read with a ``turnComplete`` that left the turn open
    #: (``IN_PROGRESS``; ``None``: none, or one that finished the turn).
    status: str | None = None
    #: An unknown status that finished the turn and holds a move for now (``None``: none).
    unknown: str | None = None
    #: Output seen and no ``turnComplete`` or ``interrupted`` since (the model is mid-turn).
    turn_open: bool = False
    #: Output seen since the last finishing ``turnComplete``.
    output_in_turn: bool = False
    #: Output seen and no ``generationComplete``, ``turnComplete``, ``interrupted`` or tool
    #: call since: the model's reply streams.
    reply_streams: bool = False
    #: Model output seen and no finishing ``turnComplete``, ``interrupted`` or tool call since.
    _output: bool = False
    #: The last status read on a message without ``turnComplete`` was ``IN_PROGRESS``, and
    #: no ``turnComplete`` came since.
    _announced: bool = False

    def read(self, message: Any, status: object = None) -> TurnEnd | None:
        """Read one server message (google-genai's ``LiveServerMessage``) with ``status``, its
        ``interactionStatus`` (as parsed, or from its raw frame); return what its
        ``turnComplete`` ended (``None``: it carried none)."""
        tool_call = getattr(message, "tool_call", None)
        if tool_call is not None:
            self.reply_streams = False
            if getattr(tool_call, "function_calls", None):
                self.tool_call()
        content = getattr(message, "server_content", None)
        if content is None:
            return None
        model_turn = content.model_turn
        transcription = content.output_transcription
        if (model_turn is not None and model_turn.parts) or (
            transcription is not None and transcription.text
        ):
            self.output()
        if content.interrupted:
            self.interrupted()
        if content.generation_complete:
            self.reply_streams = False
        if not content.turn_complete:
            name = status_name(status)
            if name is not None:
                self._announced = name in GOING_ON_STATUSES
            return None
        had_output = self.output_in_turn
        if self.turn_complete(status):
            return TurnEnd(True, had_output)
        return TurnEnd(False)

    @property
    def in_progress(self) -> bool:
        """The model's turn is not finished: the last status said its work goes on."""
        return self.status is not None

    @property
    def holds_move(self) -> bool:
        """A move waits: the turn is not finished, or an unknown status holds it."""
        return self.status is not None or self.unknown is not None

    @property
    def working(self) -> bool:
        """The model is working: its output streams, or it said the task goes on
        (``IN_PROGRESS``)."""
        return self._output or self.status == "IN_PROGRESS" or self._announced

    def unknown_expired(self) -> bool:
        """One answer's time passed since an unknown status arrived: it no longer holds a
        move. Return whether it held one until now."""
        held, self.unknown = self.unknown is not None, None
        return held

    def output(self) -> None:
        """Model output arrived (text, audio, a thought, a transcription piece)."""
        self._output = self.turn_open = self.output_in_turn = self.reply_streams = True

    def tool_call(self) -> None:
        """The model asked for tools: it waits for their responses."""
        self._output = self.reply_streams = False

    def turn_complete(self, status: object = None) -> bool:
        """A ``turnComplete`` arrived with ``status`` (its ``interactionStatus``, as sent or
        parsed; ``None``: none came); return whether the model's turn is finished."""
        name = status_name(status)
        known = name is None or name in FINISHED_STATUSES or name in GOING_ON_STATUSES
        self.unknown = None if known else name
        self.status = name if name in GOING_ON_STATUSES else None
        self.turn_open = self.reply_streams = self._announced = False
        if self.status is None:
            self._output = self.output_in_turn = False
        return self.status is None

    def interrupted(self) -> None:
        """The server cut the generation off: its output ended (the status stays until the
        server says otherwise)."""
        self._output = self.turn_open = self.reply_streams = False


@dataclass
class FrameStatuses:
    """``interactionStatus`` values read from raw frames as they arrive, given back when the
    message each came in is read (see the module)."""

    _arrived: int | None = None
    _read: int = 0
    _waiting: collections.deque[tuple[int, str]] = field(default_factory=collections.deque)

    def start(self) -> None:
        """Frames are counted from now on: the next frame to arrive is the next to be read."""
        self._arrived = self._read

    def arrived(self, status: str | None) -> None:
        """A frame arrived carrying ``status`` (``None``: none)."""
        if self._arrived is None:
            return
        self._arrived += 1
        if status is not None:
            self._waiting.append((self._arrived, status))

    def read(self) -> str | None:
        """A message was read: the status its frame carried (``None``: none, or frames are
        not counted)."""
        self._read += 1
        status = None
        while self._waiting and self._waiting[0][0] <= self._read:
            status = self._waiting.popleft()[1]
        return status


#: The key of ``Event.custom_metadata`` that labels a working utterance in the ADK session;
#: its value is the ``interactionStatus`` its ``turnComplete`` came with.
WORK_KEY = "adk_live_resume.interaction_status"


def label_working(event: object, status: str) -> None:
    """Label ``event`` (an ADK ``Event`` built from a ``turnComplete`` whose ``status`` did
    not finish the model's turn) as a working utterance; other metadata it carries stays."""
    metadata = dict(getattr(event, "custom_metadata", None) or {})
    metadata[WORK_KEY] = status
    event.custom_metadata = metadata  # type: ignore[attr-defined]


@dataclass
class WorkingLabels:
    """Labels the events ADK builds from the message read last when that message ended a
    working utterance (:func:`label_working`), on their way to the ADK session."""

    #: The status of the message read last, if it ended a working utterance.
    _status: str | None = None

    def message_read(self) -> None:
        """A server message was read (what ADK builds next comes from it)."""
        self._status = None

    def work_goes_on(self, status: str | None) -> None:
        """The message read last ended an utterance while the work goes on (``status``)."""
        self._status = status

    def label(self, event: object) -> None:
        """``event`` is one ADK built from the message read last: labelled when that message
        ended a working utterance (the model's, whole: a partial event is not stored)."""
        status = self._status
        if status is None or getattr(event, "author", "user") == "user":
            return
        if not getattr(event, "partial", None):
            label_working(event, status)


def is_working(event: object) -> bool:
    """Whether ``event`` of an ADK session is a working utterance (:func:`label_working`)."""
    metadata = getattr(event, "custom_metadata", None)
    return isinstance(metadata, dict) and isinstance(metadata.get(WORK_KEY), str)


def unfinished_work(events: Sequence[object]) -> list[str]:
    """The texts of the working utterances among ``events`` (an ADK session's) that no
    finished model turn followed: what the model said for a request it has not answered yet,
    oldest first. They end at the newest model turn that is no working utterance (an
    answer, a tool call); a spoken one is its output transcription."""
    texts: list[str] = []
    for event in reversed(events):
        if getattr(event, "author", "user") == "user":
            continue
        parts = getattr(getattr(event, "content", None), "parts", None) or []
        if any(getattr(part, "function_response", None) is not None for part in parts):
            continue  # (a function response ADK writes as the agent's: input, no answer)
        if parts:
            text = "".join(
                getattr(part, "text", None) or ""
                for part in parts
                if not getattr(part, "thought", None)
            )
        else:
            text = str(getattr(getattr(event, "output_transcription", None), "text", "") or "")
            if not text:
                continue  # (a turn's end, a state change: no turn)
        if not is_working(event):
            break
        texts.append(text)
    texts.reverse()
    return texts
