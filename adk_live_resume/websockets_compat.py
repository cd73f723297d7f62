"""The websockets internals the patch reaches under: the frame watch and the close state.

This is the only module that knows websockets' private names. google-genai's live session
reads its socket through a websockets (asyncio implementation, websockets 13 and later)
``ClientConnection``. The frame watch (:func:`watch_frames`) wraps that one connection's
``process_event``, which every incoming frame goes through, and reads the sans-I/O
``Protocol``'s close state (``close_rcvd_then_sent``, ``close_rcvd``) to tell a close the
peer started. Each frame is classified once, by
:func:`adk_live_resume.wire_classifier.classify_frame`. Whether each internal is where it is
looked for is checked once per process (:func:`probe_internals`, read by
:mod:`adk_live_resume.hooks`)."""

from __future__ import annotations

import collections
import logging
from collections.abc import Callable, Set
from typing import Any

from .wire_classifier import Frame, classify_frame

#: The method of a websockets (asyncio) connection that every incoming frame goes through.
WEBSOCKETS_PROCESS_EVENT = "process_event"
#: The attributes of websockets' sans-I/O ``Protocol`` that tell a close the peer started.
WEBSOCKETS_CLOSE_RCVD_THEN_SENT = "close_rcvd_then_sent"
WEBSOCKETS_CLOSE_RCVD = "close_rcvd"


def probe_internals() -> dict[str, bool]:
    """Whether each websockets internal the patch hooks is where it looks for it, by its
    qualified name (a sans-I/O ``Protocol`` is constructed: no I/O)."""
    from websockets.asyncio.client import ClientConnection
    from websockets.protocol import Protocol, Side

    found: dict[str, bool] = {}
    found[f"websockets.asyncio.client.ClientConnection.{WEBSOCKETS_PROCESS_EVENT}"] = callable(
        getattr(ClientConnection, WEBSOCKETS_PROCESS_EVENT, None)
    )
    protocol = Protocol(Side.CLIENT)
    for name in (WEBSOCKETS_CLOSE_RCVD_THEN_SENT, WEBSOCKETS_CLOSE_RCVD):
        found[f"websockets.protocol.Protocol.{name}"] = hasattr(protocol, name)
    return found


def watch_frames(
    websocket: Any,
    *,
    on_close: Callable[[int, str], None] | None,
    on_go_away: Callable[[object], None] | None,
    on_message: Callable[[Frame | None], None] | None = None,
    on_unknown: Callable[[Frame], None] | None = None,
    known: Set[str] = frozenset(),
    on_cancel: Callable[[tuple[str, ...]], None] | None = None,
) -> bool:
    """Watch the frames of ``websocket`` as they arrive; returns whether it could be watched
    (not the legacy implementation, and a callback other than ``on_message`` was given).

    * ``on_close(code, reason)``: as soon as a close frame arrives that starts a close (its
      peer's; not the peer's answer to a close we started);
    * ``on_go_away(time_left)``: as soon as a message carrying ``goAway`` arrives;
    * ``on_unknown(frame)``: a whole message (one frame) of a kind google-genai does not know
      arrived (``known`` holds the top-level keys it parses; see
      :mod:`adk_live_resume.wire_classifier`). That frame is **not** queued for ``recv``: the
      SDK, which would raise on it, never reads it, and ``on_message`` is not called for it.
      A message split over several frames is always queued (the SDK reports it as before).
      Whole messages of unknown kinds that arrived before the watch began and are not read
      yet are taken out of websockets' queue of frames the same way; the other whole
      messages waiting there (:func:`queued_messages`, read before any frame that arrives
      later) are told to ``on_message``, ``on_go_away`` and ``on_cancel`` at once, in order,
      as if they arrived now;
    * ``on_message(frame)``: for every other whole data message as it arrives (so a reader can
      tell what arrived from what it read), with its classification (``None``: not
      classified, or a message split over several frames);
    * ``on_cancel(ids)``: as soon as a ``toolCallCancellation`` naming ``ids`` arrives.

    google-genai reports a close only once ``recv`` raises, and websockets raises there only
    once the TCP connection is gone: after our close frame reached the server and its FIN came
    back, a round trip after the close frame arrived. And a message is read only when ADK
    asks for the next one, which may be much later (a blocking tool runs inside ADK's receive
    step). Frames are seen in websockets' ``process_event`` (its asyncio implementation,
    websockets 13 and later), wrapped on this one connection; every frame but a skipped
    unknown one is still queued for ``recv`` unchanged, in order. Each data frame is
    classified once, and only when ``on_go_away`` or ``on_unknown`` is given. A callback
    given as ``None`` is not watched for. The callbacks run inside websockets'
    ``data_received``: what they raise is logged (WARNING), never passed on.
    """
    process_event = getattr(websocket, WEBSOCKETS_PROCESS_EVENT, None)
    protocol = getattr(websocket, "protocol", None)
    if (
        process_event is None
        or protocol is None
        or (on_close is None and on_go_away is None and on_unknown is None)
    ):
        return False
    from websockets.frames import Opcode

    data_opcodes = (Opcode.TEXT, Opcode.BINARY)
    message_opcodes = (Opcode.TEXT, Opcode.BINARY, Opcode.CONT)
    classify = on_go_away is not None or on_unknown is not None or on_cancel is not None

    def process_event_and_notice(event: Any) -> None:
        opcode = getattr(event, "opcode", None)
        whole = getattr(event, "fin", True)
        frame = (
            classify_frame(getattr(event, "data", b""), known)
            if classify and opcode in data_opcodes
            else None
        )
        if on_unknown is not None and frame is not None and frame.kind == "unknown" and whole:
            _notice(on_unknown, frame)
            return  # never queued: the SDK never reads it
        process_event(event)
        try:
            if on_message is not None and opcode in message_opcodes and whole:
                on_message(frame)
            if frame is not None:
                if on_go_away is not None and frame.kind == "go_away":
                    on_go_away(frame.time_left)
                if on_cancel is not None and frame.cancelled_ids:
                    on_cancel(frame.cancelled_ids)
            elif (
                on_close is not None
                and opcode is Opcode.CLOSE
                and getattr(protocol, WEBSOCKETS_CLOSE_RCVD_THEN_SENT, None) is True
            ):
                close = getattr(protocol, WEBSOCKETS_CLOSE_RCVD, None)
                if close is None:  # no status in the frame: 1005, as websockets reports it
                    on_close(1005, "")
                else:
                    on_close(close.code, close.reason)
        except Exception:  # inside websockets' data_received: never break the socket
            _failed()

    setattr(websocket, WEBSOCKETS_PROCESS_EVENT, process_event_and_notice)
    if on_unknown is not None:
        _skip_queued(websocket, known, on_unknown)
    for queued in queued_messages(websocket, known):  # (they are read first: told first)
        try:
            if on_message is not None:
                on_message(queued if classify else None)
            if queued is not None and on_go_away is not None and queued.kind == "go_away":
                on_go_away(queued.time_left)
            if queued is not None and on_cancel is not None and queued.cancelled_ids:
                on_cancel(queued.cancelled_ids)
        except Exception:
            _failed()
    return True


#: Where a websockets (asyncio) connection keeps the frames that arrived and were not read:
#: ``connection.recv_messages`` (an ``Assembler``), its ``frames`` queue and that queue's
#: ``deque``; ``get_in_progress`` is true while a read takes frames from it.
WEBSOCKETS_RECV_MESSAGES = "recv_messages"
WEBSOCKETS_ASSEMBLER_FRAMES = "frames"
WEBSOCKETS_QUEUE_DEQUE = "queue"
WEBSOCKETS_GET_IN_PROGRESS = "get_in_progress"


def queued_messages(websocket: Any, known: Set[str]) -> list[Frame | None]:
    """The whole data messages that arrived on ``websocket`` before its watch began and that
    nobody has read yet, in order, each classified as :func:`watch_frames` classifies them
    (``None``: a message split over several frames). google-genai's connect reads the
    ``setupComplete`` alone; a message the server sent right after it (an empty
    ``sessionResumptionUpdate``) can arrive with it and wait here: a reader that counts the
    messages as they arrive counts these first. Empty while a read is taking frames, or where
    the queue is not where it is looked for."""
    assembler = getattr(websocket, WEBSOCKETS_RECV_MESSAGES, None)
    frames = getattr(assembler, WEBSOCKETS_ASSEMBLER_FRAMES, None)
    queue = getattr(frames, WEBSOCKETS_QUEUE_DEQUE, None)
    if not isinstance(queue, collections.deque) or not queue:
        return []
    if getattr(assembler, WEBSOCKETS_GET_IN_PROGRESS, True) is not False:
        return []
    from websockets.frames import Opcode

    messages: list[Frame | None] = []
    in_fragments = False
    for event in list(queue):
        opcode = getattr(event, "opcode", None)
        whole = getattr(event, "fin", True)
        if not in_fragments and opcode in (Opcode.TEXT, Opcode.BINARY) and whole:
            messages.append(classify_frame(getattr(event, "data", b""), known))
        elif opcode in (Opcode.TEXT, Opcode.BINARY, Opcode.CONT):
            in_fragments = not whole
            if whole:
                messages.append(None)
    return messages


def _skip_queued(websocket: Any, known: Set[str], on_unknown: Callable[[Frame], None]) -> None:
    """Take the whole messages of unknown kinds out of the frames that arrived before the
    watch began and nobody has read yet (a message sent right after ``setupComplete`` can
    arrive with it, before the loop watches the connection). Frames of a message split over
    several frames stay, as do the others' order. Does nothing while a read is taking frames
    or where the queue is not where it is looked for."""
    assembler = getattr(websocket, WEBSOCKETS_RECV_MESSAGES, None)
    frames = getattr(assembler, WEBSOCKETS_ASSEMBLER_FRAMES, None)
    queue = getattr(frames, WEBSOCKETS_QUEUE_DEQUE, None)
    if not isinstance(queue, collections.deque) or not queue:
        return
    if getattr(assembler, WEBSOCKETS_GET_IN_PROGRESS, True) is not False:
        return
    from websockets.frames import Opcode

    kept: list[Any] = []
    skipped: list[Frame] = []
    in_fragments = False
    for event in queue:
        opcode = getattr(event, "opcode", None)
        whole = getattr(event, "fin", True)
        if not in_fragments and opcode in (Opcode.TEXT, Opcode.BINARY) and whole:
            frame = classify_frame(getattr(event, "data", b""), known)
            if frame.kind == "unknown":
                skipped.append(frame)
                continue
        elif opcode in (Opcode.TEXT, Opcode.BINARY, Opcode.CONT):
            in_fragments = not whole
        kept.append(event)
    if skipped:
        queue.clear()
        queue.extend(kept)
        for frame in skipped:
            _notice(on_unknown, frame)


def _notice(callback: Callable[[Frame], None], frame: Frame) -> None:
    try:
        callback(frame)
    except Exception:  # inside websockets' data_received: never break the socket
        _failed()


def _failed() -> None:
    logging.getLogger("adk_live_resume.loop").warning(
        "acting on a frame as it arrived failed; the message is handled when"
        " google-genai reports it",
        exc_info=True,
    )
