"""When one fake-server connection is at a resumable point, and the handles it issues there.

A resumable point: the setup was answered and the setup asked for handles, no answer is in
progress and no function call is pending. A handle snapshots the session there (see
:mod:`~adk_live_resume.testing.handles` for what a snapshot holds and what
``lastConsumedClientMessageIndex`` counts): the last client message handled, unless audio is
held (an utterance in progress), then the message before the first one holding it. Where the
connection is not resumable it says ``{"resumable": false}``, as the service does. When handles
are issued follows the :class:`~adk_live_resume.testing.handles.HandleSchedule`.
"""

from __future__ import annotations

import collections

from websockets.exceptions import ConnectionClosed

from . import protocol as wire
from .connection_core import ConnectionCore, _Ended
from .handles import HandleIssue, IssuePoint, SessionInfo, Snapshot
from .protocol import JsonDict

__all__ = ["HandleIssuing"]


class HandleIssuing(ConnectionCore):
    """Resumable points and handle issuing of one connection (a layer of ``LiveConnection``)."""

    def _resumable(self) -> bool:
        """True at a resumable point: no answer in progress, no function call pending."""
        generation = self._generation
        return (
            self.record.resumption_enabled
            and self._setup_answered
            and not self.ending
            and not self._finishing
            and (generation is None or generation.done())
            and not self._pending_tools
        )

    def _idle_point(self) -> IssuePoint:
        return "idle_silent" if self._tracker.held_since is None else "idle_speaking"

    def _last_consumed(self, handled: int = 0) -> int:
        """The last client message whose content the session state includes.

        That is the last message handled (or ``handled``, for a message whose content is in
        the state already while it is being handled), unless audio is held: then the message
        before the first one holding it.
        """
        done = max(self._handled_index, handled)
        held = self._tracker.held_since
        return done if held is None else min(done, held - 1)

    def _new_handle(self, point: IssuePoint, handled: int = 0) -> tuple[JsonDict, HandleIssue]:
        """Snapshot the session now; return its update message and its issue record."""
        index = self._last_consumed(handled)
        consumed = self._consumed_through(index)
        now = self._loop.time()
        session = SessionInfo(self._session.id, self._session.started_at, self._session_audio)
        sent_index = index if self.record.transparent else None
        snapshot = Snapshot(
            tuple(self._memory),
            now,
            self.record.index,
            session,
            sent_index,
            consumed,
            tuple({**self._background, **self._telling}.items()),
        )
        handle = self._shared.handles.issue(snapshot)
        issue = HandleIssue(handle, self.record.index, point, sent_index, len(self._memory), now)
        message = wire.resumption_update(
            new_handle=handle, resumable=True, last_consumed_index=sent_index
        )
        return message, issue

    def _consumed_through(self, index: int) -> collections.Counter[str]:
        """Fingerprints of the session's consumed messages, through message ``index`` here."""
        while self._consumed_upto < index:
            self._consumed_upto += 1
            mark = self._fingerprints[self._consumed_upto]
            if mark is not None:
                self._consumed[mark] += 1
        if index == self._consumed_upto:
            return collections.Counter(self._consumed)
        marks = self._fingerprints[1 : index + 1]  # the index went back: count afresh
        return self._base_consumed + collections.Counter(m for m in marks if m is not None)

    def _issued(self, issue: HandleIssue) -> None:
        self.record.handles_issued.append(issue.handle)
        self.record.handle_issues.append(issue)
        self._audio_since_handle_ms = 0

    async def _send_late_handle(self) -> None:
        """Send the held turn handle (``HandleSchedule.turn_handle_late``), if any."""
        if self._late_handle is not None:
            (update, issue), self._late_handle = self._late_handle, None
            await self._send(update)
            self._issued(issue)

    async def _issue_handle(self, point: IssuePoint, handled: int = 0) -> HandleIssue:
        message, issue = self._new_handle(point, handled)
        await self._send(message)
        self._issued(issue)
        return issue

    async def issue_handle_now(self) -> HandleIssue | None:
        """Issue a handle now if this connection is at a resumable point, else None.

        When it is not (the model generates or a call is pending), ``{"resumable": false}`` is
        sent instead, as the service does. None too when the setup did not ask for handles.
        """
        if not self.record.resumption_enabled or not self._setup_answered or self.ending:
            return None
        try:
            if not self._resumable():
                await self._not_resumable()
                return None
            return await self._issue_handle(self._idle_point())
        except (_Ended, ConnectionClosed):
            return None

    async def _not_resumable(self) -> None:
        if self.record.resumption_enabled:
            await self._send(
                wire.resumption_update(new_handle=None, resumable=False, last_consumed_index=None)
            )
