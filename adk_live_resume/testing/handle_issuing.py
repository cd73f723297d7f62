"""When one fake-server connection is at a resumable point, and the handles it issues there.

A resumable point: the setup was answered and the setup asked for handles, no answer is in
progress and no function call is pending. A handle snapshots the session there (see
:mod:`~adk_live_resume.testing.handles` for what a snapshot holds and what
``lastConsumedClientMessageIndex`` counts): the last client message handled, unless audio is
held (an utterance in progress), then the message before the first one holding it. Where the
connection is not resumable it says ``{"resumable": false}``, as the service does. When handles
are issued follows the :class:`~adk_live_resume.testing.handles.HandleSchedule`.

Two parts: :class:`ConsumedLedger` (pure: the client messages received and handled, their
fingerprints, what a snapshot consumed) and :class:`HandleIssuer` (sends the updates).
"""

from __future__ import annotations

import collections
from collections.abc import Callable

from websockets.exceptions import ConnectionClosed

from . import protocol as wire
from .connection_wire import ConnectionWire, _ConnectionEnded
from .handles import HandleIssue, IssuePoint, fingerprint
from .protocol import JsonDict
from .session_state import SessionState
from .settings import ServerSettings, SharedState

__all__ = ["ConsumedLedger", "HandleIssuer"]


class ConsumedLedger:
    """The client messages of one connection, numbered from 1 (the setup is 0), and what a
    snapshot taken through message ``n`` consumed.

    Pure: no I/O. Guarantees: :meth:`consumed_through` counts the fingerprints of the
    restored snapshot plus those of messages 1..n of this connection, whatever order the
    calls come in; :meth:`receive` names a message whose fingerprint the restored snapshot
    consumed, each such consumed copy once, while the connection's replay lasts, and none
    after it.

    The replay lasts until the first message the restored snapshot did not consume (a
    message without identity, such as a silence chunk or an activity signal, included). A
    resuming client sends what it replays first, before any new input (the live loop does:
    ``serve_connection.send_restoration`` runs before the live request queue resumes), and
    a correct replay begins with something the snapshot lacks. So a consumed copy that comes
    before it is a resend; one that comes after it is the user's own repeat (the same words
    typed or said again, an identical tool result), which the service takes as new input.
    Copies of a message the session received beyond those the snapshot consumed (a repeat
    that came after the snapshot's point, on any connection of the session: :meth:`track`
    counts them) are what the snapshot lacks: the replay sends one of those first, not a
    consumed one. On the wire a repeat that is the very first message of a connection with
    nothing to replay cannot be told from a resend: it is named. Nor can a replayed silence
    chunk be told from a live one: a replay that begins with silence is not checked past it.
    Source: the replay order of ``serve_connection.serve``; docs/guarantees.md, "Nothing
    lost, nothing said twice".
    """

    def __init__(self) -> None:
        self._fingerprints: list[str | None] = [None]  # by message number; 0 is the setup
        self._received = 0
        self._handled = 0
        self._base: collections.Counter[str] = collections.Counter()
        self._consumed: collections.Counter[str] = collections.Counter()  # through _upto
        self._upto = 0
        self._restored: collections.Counter[str] = collections.Counter()
        self._lacked: collections.Counter[str] = collections.Counter()
        self._replaying = False
        self._session_received: collections.Counter[str] | None = None

    def restore(
        self,
        consumed: collections.Counter[str],
        received: collections.Counter[str] | None = None,
    ) -> None:
        """The session was resumed from a snapshot that consumed ``consumed``; ``received``:
        the fingerprints every connection of the session received so far (the copies beyond
        ``consumed`` are ones the snapshot lacks)."""
        self._base = collections.Counter(consumed)
        self._consumed = collections.Counter(consumed)
        self._restored = collections.Counter(consumed)
        self._lacked = collections.Counter(received or {}) - self._restored
        self._replaying = self._received == 0

    def track(self, received: collections.Counter[str]) -> None:
        """Count every fingerprint received from now on into ``received`` (the session's)."""
        self._session_received = received

    @property
    def received(self) -> int:
        """The number of the last client message received (0: none yet)."""
        return self._received

    @property
    def handled(self) -> int:
        """The number of the last client message handled to its end (0: none yet)."""
        return self._handled

    def receive(self, message: JsonDict | None) -> str | None:
        """Count the next client message (None: unparsed); the kind of its identity when the
        restored snapshot consumed it already (one consumed copy used up) and the replay
        lasts, else None (and the replay is over)."""
        self._received += 1
        mark = fingerprint(message) if message is not None else None
        self._fingerprints.append(mark)
        if mark is not None and self._session_received is not None:
            self._session_received[mark] += 1
        if not self._replaying or mark is None or self._restored[mark] <= 0:
            self._replaying = False
            return None
        if self._lacked[mark] > 0:  # a copy the snapshot lacks: the replay begins with it
            self._lacked[mark] -= 1
            self._replaying = False
            return None
        self._restored[mark] -= 1
        return mark.partition(":")[0]

    def mark_handled(self) -> None:
        """Every message received so far was handled."""
        self._handled = self._received

    def last_consumed(self, held_since: int | None, handled: int = 0) -> int:
        """The last client message whose content the session state includes.

        That is the last message handled (or ``handled``, for a message whose content is in
        the state already while it is being handled), unless audio is held since message
        ``held_since``: then the message before it.
        """
        done = max(self._handled, handled)
        return done if held_since is None else min(done, held_since - 1)

    def consumed_through(self, index: int) -> collections.Counter[str]:
        """Fingerprints of the session's consumed messages, through message ``index`` here."""
        while self._upto < index:
            self._upto += 1
            mark = self._fingerprints[self._upto]
            if mark is not None:
                self._consumed[mark] += 1
        if index == self._upto:
            return collections.Counter(self._consumed)
        marks = self._fingerprints[1 : index + 1]  # the index went back: count afresh
        return self._base + collections.Counter(m for m in marks if m is not None)


Issued = tuple[JsonDict, HandleIssue]


class HandleIssuer:
    """Issues the handles of one connection whose setup asked for them.

    ``busy`` says whether an answer is in progress or a call pending; ``held_since`` the first
    message whose audio the voice activity detection holds (None: none). Every issued handle
    is in ``record.handles_issued`` and ``record.handle_issues`` once its update was sent.
    """

    def __init__(
        self,
        wire_: ConnectionWire,
        session: SessionState,
        ledger: ConsumedLedger,
        *,
        enabled: bool,
        transparent: bool,
        settings: ServerSettings,
        shared: SharedState,
        busy: Callable[[], bool],
        held_since: Callable[[], int | None],
    ) -> None:
        self._wire = wire_
        self._session = session
        self._ledger = ledger
        self._enabled = enabled
        self._transparent = transparent
        self._settings = settings
        self._shared = shared
        self._busy = busy
        self._held_since = held_since
        self._audio_since_handle_ms = 0
        self._late: Issued | None = None

    def resumable(self) -> bool:
        """True at a resumable point: no answer in progress, no function call pending."""
        return self._enabled and not self._wire.ending and not self._busy()

    def _idle_point(self) -> IssuePoint:
        return "idle_silent" if self._held_since() is None else "idle_speaking"

    def _new(
        self,
        point: IssuePoint,
        handled: int = 0,
        *,
        before: int | None = None,
        cut_reply: str | None = None,
    ) -> Issued:
        """Snapshot the session now; return its update message and its issue record
        (``before``: only the client messages before that one count as consumed;
        ``cut_reply``: the reply streaming now)."""
        index = self._ledger.last_consumed(self._held_since(), handled)
        if before is not None:
            index = min(index, before - 1)
        consumed = self._ledger.consumed_through(index)
        now = self._wire.now()
        connection = self._wire.record.index
        sent_index = index if self._transparent else None
        snapshot = self._session.snapshot(
            now=now,
            connection=connection,
            last_consumed_index=sent_index,
            consumed=consumed,
            cut_reply=cut_reply,
        )
        handle = self._shared.handles.issue(snapshot, self._settings.wire_shapes.new_handle)
        issue = HandleIssue(handle, connection, point, sent_index, len(snapshot.turns), now)
        message = wire.resumption_update(
            new_handle=handle, resumable=True, last_consumed_index=sent_index
        )
        return message, issue

    def issued(self, issue: HandleIssue) -> None:
        """The update of ``issue`` went out: record it; audio counts afresh from here."""
        self._wire.record.handles_issued.append(issue.handle)
        self._wire.record.handle_issues.append(issue)
        self._audio_since_handle_ms = 0

    def at_turn_complete(self) -> Issued | None:
        """The handle that goes with a ``turnComplete`` (per the schedule), to send with it
        and then pass to :meth:`issued`; None when there is none now (none asked for, or held
        until the next client message: ``HandleSchedule.turn_handle_late``)."""
        schedule = self._settings.handle_schedule
        if not self._enabled or not schedule.on_turn_complete:
            return None
        update = self._new("turn_complete")
        if schedule.turn_handle_late:
            self._late = update
            return None
        return update

    def before_request(self, first_message: int) -> Issued | None:
        """The handle an extended-thinking model issues while it works on a request whose
        first client message is ``first_message``: the session as it is now, before that
        request becomes a turn (call it first), with no message from ``first_message`` on
        consumed. Sent with the ``IN_PROGRESS`` ``turnComplete``, then passed to
        :meth:`issued`: work in progress is kept out of handles, as an unfinished utterance
        is (see :mod:`~adk_live_resume.testing.families`). None when the setup asked for no
        handles."""
        if not self._enabled:
            return None
        return self._new("working", before=first_message)

    def before_response(self, response: int) -> Issued | None:
        """The handle a 3.x model issues right after the client's ``toolResponse`` (client
        message ``response``), before its answer starts: the session as it is now, before the
        response becomes a turn (call it first), with nothing from ``response`` on consumed.
        Sent once the response was handled (:meth:`send_issued`).

        The recording shows only where the update comes, not what its handle holds; the fake
        keeps the unanswered response out of it, as it keeps work in progress and an unfinished
        utterance out (:meth:`before_request`): a resume from it is asked the response again.
        None when the setup asked for no handles."""
        if not self._enabled:
            return None
        return self._new("after_tool_response", before=response)

    def mid_reply(self, reply: str) -> Issued | None:
        """The handle issued while the answer ``reply`` streams (after its first chunk), where
        the schedule asks for one (``HandleSchedule.mid_reply``) or the server replays cut
        replies (``resume_replays_cut_reply``, which the field reports of a service that
        issues them: Omi probes, pydantic-ai PR 7379; notes, "Field facts of 2026-11-29").
        Its snapshot holds the request and the reply in flight; send it with
        :meth:`send_issued`. None otherwise, or when the setup asked for no handles."""
        wanted = self._settings.handle_schedule.mid_reply or self._settings.resume_replays_cut_reply
        if not self._enabled or not wanted:
            return None
        return self._new("mid_reply", cut_reply=reply)

    async def send_issued(self, update: Issued) -> None:
        """Send a handle update prepared earlier and record it."""
        message, issue = update
        await self._wire.send(message)
        self.issued(issue)

    async def send_late(self) -> None:
        """Send the held turn handle (``HandleSchedule.turn_handle_late``), if any."""
        if self._late is not None:
            update, self._late = self._late, None
            await self.send_issued(update)

    async def issue(self, *, handled: int = 0, point: IssuePoint | None = None) -> HandleIssue:
        """Issue an idle handle now (the caller checked :meth:`resumable`); ``handled``: a
        message whose content is in the state already while it is being handled; ``point``:
        where (default: idle, silent or speaking)."""
        update = self._new(point or self._idle_point(), handled)
        await self.send_issued(update)
        return update[1]

    async def issue_now(self) -> HandleIssue | None:
        """Issue a handle now if this connection is at a resumable point, else None.

        When it is not (the model generates or a call is pending), ``{"resumable": false}`` is
        sent instead, as the service does. None too when the setup did not ask for handles.
        """
        if not self._enabled or self._wire.ending:
            return None
        try:
            if not self.resumable():
                await self.not_resumable()
                return None
            return await self.issue()
        except (_ConnectionEnded, ConnectionClosed):
            return None

    async def not_resumable(self) -> None:
        """Say ``{"resumable": false}`` (when the setup asked for handles)."""
        if self._enabled:
            await self._wire.send(
                wire.resumption_update(new_handle=None, resumable=False, last_consumed_index=None)
            )

    def audio_received(self, ms: int) -> bool:
        """``ms`` of audio arrived while idle: True when ``every_audio_ms`` is due."""
        every = self._settings.handle_schedule.every_audio_ms
        if every is None:
            return False
        self._audio_since_handle_ms += ms
        return self._audio_since_handle_ms >= every
