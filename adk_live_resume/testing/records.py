"""What the fake server saw and did, one :class:`ConnectionRecord` per websocket connection.

A record is filled in while its connection runs and is complete once its handler has finished
(``record.finished`` is True). The server's wait helpers await that, so assertions made after
them see the whole story.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["ConnectionRecord", "EndedBy", "ToolCallRecord", "short_handle"]

EndedBy = Literal["client", "fault", "deadline", "refused", "restart", "flap", "shutdown"]


def short_handle(handle: str | None) -> str:
    """A loggable prefix of a resumption handle (handles are secrets: never log them whole)."""
    if not handle:
        return "<none>"
    return handle[:6] + "..."


@dataclass
class ToolCallRecord:
    """One function call the scripted model issued."""

    id: str
    name: str
    args: dict[str, Any]
    connection: int


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
        client_messages: every raw client message after the setup, in order.
        server_messages: every raw message the server sent, in order.
        ended_by: who ended the connection ("client", "fault", "deadline", "refused",
            "restart", "flap", or "shutdown" when the server stopped); None while open.
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
        tool_calls: function calls issued on this connection.
        tool_responses: raw function responses received on this connection.
        handles_issued: resumption handles sent on this connection, in order.
        interrupted: number of generations cut off by ``serverContent.interrupted``.
        errors: internal errors of the fake itself (a non-empty list is a bug in the fake).
        finished: True once the connection handler has returned; the record is then final.
    """

    index: int
    path: str = ""
    setup: dict[str, Any] | None = None
    resume_handle: str | None = None
    resumed: bool = False
    resumption_enabled: bool = False
    transparent: bool = False
    client_messages: list[dict[str, Any]] = field(default_factory=list)
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
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    tool_responses: list[dict[str, Any]] = field(default_factory=list)
    handles_issued: list[str] = field(default_factory=list)
    interrupted: int = 0
    errors: list[str] = field(default_factory=list)
    finished: bool = False

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
