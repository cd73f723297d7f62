"""The websockets internals the patch reaches under: the frame watch and the close state.

This is the only module that knows websockets' private names. google-genai's live session
reads its socket through a websockets (asyncio implementation, websockets 13 and later)
``ClientConnection``. The frame watch (:func:`watch_frames`) wraps that one connection's
``process_event``, which every incoming frame goes through, and reads the sans-I/O
``Protocol``'s close state (``close_rcvd_then_sent``, ``close_rcvd``) to tell a close the
peer started; it tells each frame, classified once (by
:func:`adk_live_resume.rules.wire_classifier.classify_frame`), to one :class:`FrameListener`.
Whether each internal is where it is looked for is checked once per process
(:func:`probe_internals`, read by :mod:`adk_live_resume.compat.hooks`)."""

from __future__ import annotations

import collections
import logging
from collections.abc import Callable, Set
from typing import Any, Protocol

from ..rules.wire_classifier import SPLIT, Frame, classify_frame, close_frame

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


class FrameListener(Protocol):
    """What :func:`watch_frames` tells of a connection's frames: each one, classified, as it
    arrives."""

    def on_frame(self, frame: Frame) -> None:
        """``frame`` arrived (see :func:`watch_frames` for which frames, and when); it runs
        inside websockets' ``data_received``: what it raises is logged, never passed on."""
        ...


def watch_frames(websocket: Any, listener: FrameListener, *, known: Set[str]) -> bool:
    """Tell ``listener`` of the frames of ``websocket`` as they arrive; returns whether it
    could be watched (not the legacy implementation).

    ``listener.on_frame(frame)`` is told, with the :class:`~..rules.wire_classifier.Frame`:

    * every whole data message as it arrives (so a reader can tell what arrived from what
      it read), classified by :func:`~adk_live_resume.rules.wire_classifier.classify_frame`
      (``known`` holds the top-level keys google-genai parses); a message split over
      several frames as a ``"split"`` frame (not classified);
    * a close frame that starts a close (its peer's; not the peer's answer to a close we
      started) as a ``"close"`` frame (``close_code`` 1005 when the frame has no status),
      as soon as it arrives.

    A whole message of kind ``"unknown"`` (google-genai does not know it) is told but **not**
    queued for ``recv``: the SDK, which would raise on it, never reads it. A message split
    over several frames is always queued (the SDK reports it as before). Whole messages of
    unknown kinds that arrived before the watch began and are not read yet are taken out of
    websockets' queue of frames the same way; the other whole messages waiting there
    (:func:`queued_messages`, read before any frame that arrives later) are told at once, in
    order, as if they arrived now.

    google-genai reports a close only once ``recv`` raises, and websockets raises there only
    once the TCP connection is gone: after our close frame reached the server and its FIN came
    back, a round trip after the close frame arrived. And a message is read only when ADK
    asks for the next one, which may be much later (a blocking tool runs inside ADK's receive
    step). Frames are seen in websockets' ``process_event`` (its asyncio implementation,
    websockets 13 and later), wrapped on this one connection; every frame but a skipped
    unknown one is still queued for ``recv`` unchanged, in order. Each data frame is
    classified once. ``on_frame`` runs inside websockets' ``data_received``: what it raises
    is logged (WARNING), never passed on.
    """
    process_event = getattr(websocket, WEBSOCKETS_PROCESS_EVENT, None)
    protocol = getattr(websocket, "protocol", None)
    if process_event is None or protocol is None:
        return False
    from websockets.frames import Opcode

    data_opcodes = (Opcode.TEXT, Opcode.BINARY)
    tell = listener.on_frame

    def process_event_and_notice(event: Any) -> None:
        opcode = getattr(event, "opcode", None)
        whole = getattr(event, "fin", True)
        if opcode in data_opcodes and whole:
            frame = classify_frame(getattr(event, "data", b""), known)
            if frame.kind == "unknown":
                _notice(tell, frame)
                return  # never queued: the SDK never reads it
            process_event(event)
            _notice(tell, frame)
            return
        process_event(event)
        if opcode is Opcode.CONT and whole:
            _notice(tell, SPLIT)
        elif (
            opcode is Opcode.CLOSE
            and getattr(protocol, WEBSOCKETS_CLOSE_RCVD_THEN_SENT, None) is True
        ):
            close = getattr(protocol, WEBSOCKETS_CLOSE_RCVD, None)
            # (no status in the frame: 1005, as websockets reports it)
            _notice(
                tell,
                close_frame(1005, "") if close is None else close_frame(close.code, close.reason),
            )

    setattr(websocket, WEBSOCKETS_PROCESS_EVENT, process_event_and_notice)
    _skip_queued(websocket, known, tell)
    for queued in queued_messages(websocket, known):  # (they are read first: told first)
        _notice(tell, queued)
    return True


#: Where a websockets (asyncio) connection keeps the frames that arrived and were not read:
#: ``connection.recv_messages`` (an ``Assembler``), its ``frames`` queue and that queue's
#: ``deque``; ``get_in_progress`` is true while a read takes frames from it.
WEBSOCKETS_RECV_MESSAGES = "recv_messages"
WEBSOCKETS_ASSEMBLER_FRAMES = "frames"
WEBSOCKETS_QUEUE_DEQUE = "queue"
WEBSOCKETS_GET_IN_PROGRESS = "get_in_progress"


def queued_messages(websocket: Any, known: Set[str]) -> list[Frame]:
    """The whole data messages that arrived on ``websocket`` before its watch began and that
    nobody has read yet, in order, each classified as :func:`watch_frames` classifies them
    (:data:`~..rules.wire_classifier.SPLIT`: a message split over several frames). google-genai's
    connect reads the ``setupComplete`` alone; a message the server sent right after it (an empty
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

    messages: list[Frame] = []
    in_fragments = False
    for event in list(queue):
        opcode = getattr(event, "opcode", None)
        whole = getattr(event, "fin", True)
        if not in_fragments and opcode in (Opcode.TEXT, Opcode.BINARY) and whole:
            messages.append(classify_frame(getattr(event, "data", b""), known))
        elif opcode in (Opcode.TEXT, Opcode.BINARY, Opcode.CONT):
            in_fragments = not whole
            if whole:
                messages.append(SPLIT)
    return messages


def _skip_queued(websocket: Any, known: Set[str], tell: Callable[[Frame], None]) -> None:
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
            _notice(tell, frame)


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
