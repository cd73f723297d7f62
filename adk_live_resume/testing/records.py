"""What the fake server saw and did, one :class:`ConnectionRecord` per websocket connection.

A record is filled in while its connection runs and is complete once its handler has finished
(``record.finished`` is True). The server's wait helpers await that, so assertions made after
them see the whole story.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from .handles import HandleIssue

__all__ = [
    "ConnectionRecord",
    "EndedBy",
    "HandleIssue",
    "HeardTurn",
    "ResentMessage",
    "ToolCallRecord",
    "short_handle",
]

EndedBy = Literal[
    "handshake_refused",
    "client",
    "fault",
    "deadline",
    "refused",
    "restart",
    "flap",
    "shutdown",
    "rejected",
    "session_limit",
    "setup_timeout",
    "idle",
    "poisoned",
]
HeardHow = Literal["typed", "spoken", "history"]


def short_handle(handle: str | None) -> str:
    """A loggable prefix of a resumption handle (handles are secrets: never log them whole)."""
    if not handle:
        return "<none>"
    return handle[:6] + "..."


@dataclass
class ToolCallRecord:
    """One function call the scripted model issued.

    ``message`` numbers the ``toolCall`` messages of the server (1-based, server-wide): calls
    with the same number were issued together (parallel). ``responses`` holds every response
    received for this id, on any connection, in order (more than one means it was answered
    again). ``cancelled`` is True once a ``toolCallCancellation`` named it. ``non_blocking``:
    the function was declared NON_BLOCKING (the model did not wait for the response).
    """

    id: str
    name: str
    args: dict[str, Any]
    connection: int
    message: int = 0
    non_blocking: bool = False
    responses: list[Any] = field(default_factory=list)
    cancelled: bool = False

    def cancel(self) -> None:
        """A ``toolCallCancellation`` named this call."""
        self.cancelled = True


@dataclass(frozen=True)
class HeardTurn:
    """A user turn the model received, and how.

    ``how``: "typed" (text: ``clientContent`` turn or ``realtimeInput.text``), "spoken" (an
    utterance found in the audio) or "history" (user turns delivered in a history send).
    ``first_message`` / ``last_message``: the client messages that carried it. For spoken
    turns, ``ended_by`` is how the utterance ended ("silence", "activity_end", "stream_end",
    "cut" when other input arrived mid-utterance) and ``cut_start`` is True when its first
    character was heard without its start (the head of the clip was lost).
    """

    text: str
    how: HeardHow
    connection: int
    first_message: int
    last_message: int
    ended_by: str | None = None
    cut_start: bool = False


@dataclass(frozen=True)
class ResentMessage:
    """A client message sent again on a resumed connection although the snapshot of the
    handle it resumed already included it (its index said it was consumed), within the
    connection's replay: before the first message the snapshot did not consume. The same
    content sent after that is the user's own repeat, not recorded (see
    :class:`~adk_live_resume.testing.handle_issuing.ConsumedLedger`).

    ``index`` is its number on the resumed connection, ``kind`` its fingerprint kind
    ("text", "audio", "clientContent", "toolResponse").
    """

    connection: int
    index: int
    kind: str


@dataclass
class ConnectionRecord:
    """Everything observable about one connection.

    Attributes:
        index: 1-based connection number, in order of arrival.
        path: request path, e.g.
            ``/ws/google.ai.generativelanguage.v1alpha.GenerativeService.BidiGenerateContent``.
        setup: the raw ``setup`` object the client sent (None until it arrives).
        resume_handle: the handle the setup asked to resume, if any.
        resumed: True when that handle was accepted and its snapshot restored.
        resumption_enabled: True when the setup carried ``sessionResumption``.
        transparent: True when ``sessionResumption.transparent`` was set.
        client_messages: every raw client message after the setup, in order (appended when
            it arrives, before it is handled).
        handled_messages: how many of them the server has finished handling.
        server_messages: every raw message the server handed to the socket, in order.
        ended_by: who ended the connection ("handshake_refused": a ``Fault.refuse_handshake``
            answered the upgrade with an HTTP error, ``close_reason`` says which; "client",
            "fault", "deadline", "refused",
            "restart", "flap", "rejected" (Gemini 3.x ``clientContent``), "session_limit",
            "setup_timeout", "idle" (no client message for ``idle_close_after``), "poisoned"
            (a resume of a session a ``Fault.poison_session`` poisoned), or "shutdown" when
            the server stopped); None while open.
        close_code / close_reason: the close frame sent or received; 1006 when the TCP
            connection was dropped without one.
        go_away_sent: True once a ``goAway`` was sent.
        history_sends: ``client_content`` messages treated as history (see the model docs).
        duplicate_history_sends: history sends whose turns were already in memory.
        unknown_tool_response_ids: function response ids this server never issued.
        stale_tool_response_ids: ids it issued, but not pending on this connection.
        user_turns: texts of the user turns the model received (answered or not).
        answers: texts of the answers completed with ``turnComplete``.
        answered_user_turns: the user turn each of ``answers`` answered, in the same order.
        stalled_turns: the user turns a ``stall`` fault left unanswered on this connection
            (:meth:`Fault.stall <adk_live_resume.testing.Fault.stall>`), in order.
        tool_calls: function calls issued on this connection.
        tool_responses: raw function responses received on this connection.
        accepted_tool_response_ids: the ids of the responses the session took as the answer
            to a call it had open (pending on this connection, or an open NON_BLOCKING call
            of the session), in order of arrival.
        handles_issued: resumption handles sent on this connection, in order.
        handle_issues: the same handles with the point at which each was issued.
        heard: every user turn received, with how it arrived (:class:`HeardTurn`).
        resent_consumed: messages the replay sent again that the resumed snapshot held.
        rejected_client_content: ``clientContent`` bodies the Gemini 3.x Live dialect does
            not accept (the connection was closed with 1007 unless the server is lenient).
        ignored_audio_ms: audio received outside any activity (manual activity detection).
        cancelled_tool_ids: call ids named in ``toolCallCancellation`` messages.
        context_updates: the bodies of the ``contextUpdate`` messages received, in order.
        setup_refused: the rule of its model family the setup broke, in words, when the
            connection was closed with 1007 for it (``None``: none).
        session_id: the session this connection belongs to (kept across resumption).
        interrupted: number of generations cut off by ``serverContent.interrupted``.
        errors: internal errors of the fake itself (a non-empty list is a bug in the fake).
        finished: True once the connection handler has returned; the record is then final.
        accepted_at: event loop time (``loop.time()``, real seconds) at which the fake's
            connection handler started: after the TCP, TLS and websocket handshakes, before
            the setup message is read; the ``goAway`` and deadline timers count from it.
        first_sent_at / last_sent_at: event loop time at which the first / the latest server
            message was handed to the socket (None before any). On the client's clock when
            the client runs in the same process: benchmarks time gaps with them.
        sent_times: event loop time at which each of ``server_messages`` was handed to the
            socket, in the same order (the last one's sending may have been cut short when
            the connection's handler was cancelled: ``last_sent_at`` counts only messages
            whose sending completed).
        ended_at: event loop time at which the connection was ended: the fault, deadline,
            refusal... was acted on, or the client's close was seen (None while open).
    """

    index: int
    path: str = ""
    setup: dict[str, Any] | None = None
    resume_handle: str | None = None
    resumed: bool = False
    resumption_enabled: bool = False
    transparent: bool = False
    client_messages: list[dict[str, Any]] = field(default_factory=list)
    handled_messages: int = 0
    server_messages: list[dict[str, Any]] = field(default_factory=list)
    ended_by: EndedBy | None = None
    close_code: int | None = None
    close_reason: str | None = None
    go_away_sent: bool = False
    history_sends: int = 0
    duplicate_history_sends: int = 0
    unknown_tool_response_ids: list[str] = field(default_factory=list)
    stale_tool_response_ids: list[str] = field(default_factory=list)
    user_turns: list[str] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)
    answered_user_turns: list[str] = field(default_factory=list)
    stalled_turns: list[str] = field(default_factory=list)
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    tool_responses: list[dict[str, Any]] = field(default_factory=list)
    accepted_tool_response_ids: list[str] = field(default_factory=list)
    handles_issued: list[str] = field(default_factory=list)
    handle_issues: list[HandleIssue] = field(default_factory=list)
    heard: list[HeardTurn] = field(default_factory=list)
    resent_consumed: list[ResentMessage] = field(default_factory=list)
    rejected_client_content: list[dict[str, Any]] = field(default_factory=list)
    ignored_audio_ms: int = 0
    cancelled_tool_ids: list[str] = field(default_factory=list)
    context_updates: list[dict[str, Any]] = field(default_factory=list)
    setup_refused: str | None = None
    session_id: str = ""
    interrupted: int = 0
    errors: list[str] = field(default_factory=list)
    finished: bool = False
    accepted_at: float = 0.0
    first_sent_at: float | None = None
    last_sent_at: float | None = None
    sent_times: list[float] = field(default_factory=list)
    ended_at: float | None = None

    # -- filled in by the connection's parts, each through one of these ---------------------

    def accepted(self, path: str, at: float) -> None:
        """The handler started for a request to ``path`` at ``at`` (``loop.time()``)."""
        self.path = path
        self.accepted_at = at

    def set_up(self, setup: dict[str, Any]) -> None:
        """The client's ``setup`` message arrived."""
        self.setup = setup

    def refused_setup(self, rule: str) -> None:
        """The setup broke ``rule`` of its model family (the connection closes with 1007)."""
        self.setup_refused = rule

    def resumption_asked(self, handle: str | None, *, transparent: bool) -> None:
        """The setup carried ``sessionResumption``, asking to resume ``handle`` (if any)."""
        self.resumption_enabled = True
        self.resume_handle = handle
        self.transparent = transparent

    def restored(self) -> None:
        """The handle asked for was accepted and its snapshot restored."""
        self.resumed = True

    def joined(self, session_id: str) -> None:
        """The connection serves session ``session_id`` (new, or kept across resumption)."""
        self.session_id = session_id

    def handled(self, count: int) -> None:
        """The server has finished handling ``count`` client messages."""
        self.handled_messages = count

    def go_away_went(self) -> None:
        """A ``goAway`` was sent."""
        self.go_away_sent = True

    def sending(self, message: dict[str, Any], at: float) -> None:
        """The server hands ``message`` to the socket at ``at`` (``loop.time()``)."""
        self.server_messages.append(message)
        self.sent_times.append(at)

    def not_sent(self) -> None:
        """The message being handed over was not sent (the connection had closed)."""
        self.server_messages.pop()
        self.sent_times.pop()

    def sent_at(self, at: float) -> None:
        """The message handed to the socket at ``at`` is sent."""
        if self.first_sent_at is None:
            self.first_sent_at = at
        self.last_sent_at = at

    def history_sent(self, *, duplicate: bool) -> None:
        """A ``client_content`` message was taken as history (``duplicate``: its turns were
        already in memory)."""
        self.history_sends += 1
        if duplicate:
            self.duplicate_history_sends += 1

    def audio_ignored(self, total_ms: int) -> None:
        """``total_ms`` of audio, in all, arrived outside any activity so far."""
        self.ignored_audio_ms = total_ms

    def generation_interrupted(self) -> None:
        """A generation was cut off by ``serverContent.interrupted``."""
        self.interrupted += 1

    def ended(self, by: EndedBy, at: float, *, code: int, reason: str) -> None:
        """The connection was ended by ``by`` at ``at`` (``loop.time()``) with close ``code``
        and ``reason`` (1006 and ``""`` for a TCP drop without a close frame)."""
        self.ended_by = by
        self.ended_at = at
        self.close_code = code
        self.close_reason = reason

    def finish(self) -> None:
        """The handler returned: the record is final from now on."""
        self.finished = True

    def server_keys(self) -> list[str]:
        """The top-level key of every server message, in order (handy for sequence asserts)."""
        return [next(iter(message), "") for message in self.server_messages]

    def __repr__(self) -> str:  # handles stay out of reprs and assertion diffs
        return (
            f"ConnectionRecord(index={self.index}, resumed={self.resumed}, "
            f"resume_handle={short_handle(self.resume_handle)!r}, ended_by={self.ended_by!r}, "
            f"close_code={self.close_code}, user_turns={self.user_turns!r}, "
            f"answers={self.answers!r}, history_sends={self.history_sends}, "
            f"duplicate_history_sends={self.duplicate_history_sends}, "
            f"client_messages={len(self.client_messages)}, "
            f"server_messages={len(self.server_messages)}, finished={self.finished})"
        )
