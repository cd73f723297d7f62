"""The lifecycle of one live connection as a state machine that does no I/O.

:class:`ConnectionState` is the protocol core of a connection, in the manner of websockets'
and h11's: the watch (:mod:`.connection_watch`) feeds it events (a server message read, a
frame arrived, a goAway, a handle update, a send that failed, the server's close frame, the
goAway timer, the connection opened ahead ready or failed, the client's close) and carries
out the actions each event returns, in order (:data:`Action`). The machine reads no clock
(times come with the events), starts no task and touches no socket.

Its :class:`State` is the whole lifecycle; the way a connection ended is read from the state
it ended in (:func:`~adk_live_resume.connection_end.classify_end`):

* ``OPENING``: connected, no server message read yet; ``OPEN``: one was read (the connection
  proved healthy).
* ``MOVING``: a goAway move began and the next connection is being opened ahead (or opening
  it failed and this socket closes); ``CLOSING``: a move that could not open ahead, so this
  socket closes first and the loop opens the next after it; ``DRAINING``: the next connection
  is ready and this one is read to its end; ``RETIRED``: the next connection took over.
* ``LOST``: the connection was lost while open (not by a close of ours).
* ``STALLED``: the session stalled on the open connection (:mod:`.stall_rule`): this socket
  closes, and the loop recovers (resume, then a fresh start, then an error).
* ``CLIENT_CLOSED``: the client closed the request queue.

Pure: no I/O.

Guarantees:

* Once the next connection is being opened ahead (an :class:`OpenAhead` that started), the
  connection takes no client send again (:attr:`ConnectionState.holds_sends`); nor once
  :meth:`ConnectionState.stop_sends` was called.
* At most one goAway timer is ever started, at most one :class:`NoteGoAway` is returned,
  one :class:`Retire` and one :class:`CloseSocket`; one :class:`OpenAhead` at a time (another
  only after a :class:`ServeOn`); :meth:`ConnectionState.finish` cancels a running timer and
  no timer starts after it.
* ``RETIRED`` and ``CLIENT_CLOSED`` are final: no event leaves them; a move, once begun,
  never leaves the moving states but for ``CLIENT_CLOSED``, and for ``OPEN`` when opening
  the next connection ahead failed in a way a later try may not (HTTP 429 or 5xx, a
  timeout, a network error) while the socket was open and not closing: it serves on
  (:class:`ServeOn`) and the move is tried again (:meth:`ConnectionState.retry_move`).
* Only a server that refused the resume beside the open socket (it closed the connection
  opened ahead) makes the run stop opening ahead (:class:`StopOpeningAhead`).
* A loss noticed while moving (or after the client's close) changes no state: the
  connection still ends as moved (or closed by the client); its time is kept (``lost_at``).
* A stall is acted on only on a connection that is open (``OPENING``: connected, its
  setup answered; or ``OPEN``) and not moving: at most one
  :class:`CloseSocket` for it, and a stalled connection never begins a move.
* A move asked for (:meth:`ConnectionState.move_asked`: by the app, or by the run for a
  fresh session) begins at a safe point: at once if it is one, else at the next the watch
  reports (:meth:`ConnectionState.safe_point`); a move that begins while one is asked (a
  goAway's) carries the asked one out. Each asked move that begins returns one
  :class:`NoteMove` before its :class:`OpenAhead`; one not begun when the connection ends is
  :attr:`ConnectionState.asked` (the next connection carries it out).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Literal

#: Who began a move: the server's ``goAway`` (or ADK's own reconnect request after it), the
#: app (:func:`~adk_live_resume.request_move`), or the run itself (a fresh session it needs).
MoveOrigin = Literal["go_away", "requested", "run"]


class State(enum.Enum):
    """Where one connection is in its life (see the module's docstring)."""

    OPENING = "opening"
    OPEN = "open"
    MOVING = "moving"
    CLOSING = "closing"
    DRAINING = "draining"
    RETIRED = "retired"
    LOST = "lost"
    STALLED = "stalled"
    CLIENT_CLOSED = "closed by the client"


#: The states of a goAway move: a connection that ends in one of them ended as moved.
MOVED = frozenset({State.MOVING, State.CLOSING, State.DRAINING, State.RETIRED})
#: The states no event leaves.
FINAL = frozenset({State.RETIRED, State.CLIENT_CLOSED})


@dataclass(frozen=True)
class ProveHealthy:
    """The first server message was read: the run's outage (if any) is over."""


@dataclass(frozen=True)
class NoteGoAway:
    """A goAway arrived: count it, store the handle now; the move is due in ``delay`` s."""

    time_left: float | None
    delay: float


@dataclass(frozen=True)
class Asked:
    """A move asked for: why (in words), by whom, and whether to a fresh session."""

    why: str
    origin: MoveOrigin
    fresh: bool = False


@dataclass(frozen=True)
class NoteMove:
    """An asked move begins (before its :class:`OpenAhead`): tell the app; a fresh one makes
    the next connection start a fresh session."""

    asked: Asked


@dataclass(frozen=True)
class StartTimer:
    """Call :meth:`ConnectionState.timer_fired` in ``delay`` seconds."""

    delay: float


@dataclass(frozen=True)
class CancelTimer:
    """The timer started is not wanted any more."""


@dataclass(frozen=True)
class DialAhead:
    """Open the next connection's socket ahead (a move waits for its safe point)."""

    latest: float | None


@dataclass(frozen=True)
class OpenAhead:
    """Start opening the next connection while this one is open; report whether it started
    with :meth:`ConnectionState.ahead_started` at once."""


@dataclass(frozen=True)
class CloseSocket:
    """Close this connection's socket (``abort``: at once, without a close frame)."""

    abort: bool


@dataclass(frozen=True)
class Retire:
    """The next connection takes over: nothing more of this one reaches ADK; close it in
    the background."""


@dataclass(frozen=True)
class OpenAfterDrop:
    """Reading failed: the loop may open the next connection at once."""


@dataclass(frozen=True)
class DialAfterClose:
    """The server's close frame (``code``, ``reason``) arrived: the loop may dial the next
    socket now."""

    code: int
    reason: str = ""


@dataclass(frozen=True)
class StopOpeningAhead:
    """The server refused the resume of the connection opened ahead beside this open one:
    the run closes the old socket first from now on."""


@dataclass(frozen=True)
class ServeOn:
    """Opening the next connection ahead failed in a way a later try may not: this connection
    serves on (it takes client sends again, those held meanwhile first), and the move is
    tried again in ``wait`` seconds (:meth:`ConnectionState.retry_move`)."""

    wait: float


Action = (
    ProveHealthy
    | NoteGoAway
    | NoteMove
    | StartTimer
    | CancelTimer
    | DialAhead
    | OpenAhead
    | CloseSocket
    | Retire
    | OpenAfterDrop
    | DialAfterClose
    | StopOpeningAhead
    | ServeOn
)


class ConnectionState:
    """The lifecycle of one connection: events in, actions out (see the module)."""

    def __init__(self) -> None:
        self.state = State.OPENING
        #: Why the session is being moved off this connection (``None``: no move began),
        #: and who began the move.
        self.why_moved: str | None = None
        self.move_origin: MoveOrigin = "go_away"
        #: A move asked for and not begun yet (see the module's guarantees).
        self.asked: Asked | None = None
        #: ``now + delay`` of the goAway timer (``None``: no goAway yet).
        self.deadline: float | None = None
        #: The time the connection was first seen lost.
        self.lost_at: float | None = None
        #: The send step's error, if sending failed.
        self.send_error: BaseException | None = None
        #: A server message was read.
        self.proved = False
        self.timer_running = False
        self._finished = False
        self._go_away_read = False
        self._move_on_handle = False
        #: A failed opening ahead left this connection serving; the move is to be tried again.
        self._retry_pending = False
        self._ahead = False
        self._sends_stopped = False
        self._closing = False
        self._turn_open = False
        self._read = 0
        #: Messages that arrived on the socket (``None``: not counted).
        self._arrived: int | None = None

    # -- what the state says ----------------------------------------------------------------

    @property
    def holds_sends(self) -> bool:
        """Client sends go to the outbox only, not this socket: the next connection is being
        opened ahead (or took over), or the connection is being taken down."""
        return self._ahead or self._sends_stopped

    @property
    def opening_ahead(self) -> bool:
        """The next connection is being opened ahead to take over (sends are held for it)."""
        return self._ahead and self.state is not State.RETIRED

    @property
    def closed_by_us(self) -> bool:
        """The socket goes because we close it (a move, or the client's close): no loss."""
        return self.why_moved is not None or self.state in (State.CLIENT_CLOSED, State.STALLED)

    @property
    def move_pending(self) -> bool:
        """A move waits for a safe point: a goAway was read (it waits for a new handle), or a
        move was asked for."""
        return (self._move_on_handle or self.asked is not None) and self.why_moved is None

    @property
    def takes_asks(self) -> bool:
        """A move asked for now can still begin on this connection (none began, none is
        asked, and the connection is not closed by the client, stalled or over)."""
        return (
            self.why_moved is None
            and self.asked is None
            and not self._finished
            and self.state not in (State.CLIENT_CLOSED, State.STALLED, State.LOST)
        )

    @property
    def unread_frames(self) -> bool:
        """Messages arrived on the socket that ADK's reading has not reached yet (known only
        while frames are counted)."""
        return self._arrived is not None and self._arrived > self._read

    def _all_read(self) -> bool:
        """No answer is in flight, and every message that arrived has been read."""
        arrived = self._arrived
        return not self._turn_open and (arrived is None or self._read >= arrived)

    # -- the server's side ---------------------------------------------------------------

    def count_frames(self) -> None:
        """Frames are counted from now on, as they arrive (:meth:`frame_arrived`)."""
        self._arrived = self._read

    def frame_arrived(self) -> None:
        if self._arrived is not None:
            self._arrived += 1

    def message_read(self, *, turn_open: bool) -> list[Action]:
        """A server message was read (``turn_open``: the model's answer is still going)."""
        self._read += 1
        self._turn_open = turn_open
        actions: list[Action] = []
        if not self.proved:
            self.proved = True
            actions.append(ProveHealthy())
            if self.state is State.OPENING:
                self.state = State.OPEN
        if self.state is State.DRAINING and self._all_read():
            actions.extend(self._retire())
        return actions

    def go_away_frame(
        self, time_left: float | None, *, now: float, margin: float, safe: bool
    ) -> list[Action]:
        """A goAway frame arrived on the socket (ADK may read it later): the deadline runs
        from now; the next socket is dialed ahead unless the move can happen at once."""
        actions = self._start_deadline(time_left, now=now, margin=margin)
        if not safe:
            actions.extend(self._dial_ahead())
        return actions

    def go_away_read(
        self, time_left: float | None, *, now: float, margin: float, safe: bool
    ) -> list[Action]:
        """The goAway reached ADK's reading: everything before it was handled, so ``safe``
        (the newest handle holds everything) decides whether the move happens now or at the
        next handle (:meth:`handle_changed`)."""
        if self._go_away_read:
            return []
        self._go_away_read = True
        actions = self._start_deadline(time_left, now=now, margin=margin)
        if safe:
            return actions + self.move("goAway at a safe point")
        self._move_on_handle = True
        return actions + self._dial_ahead()

    def handle_changed(self, *, safe: bool) -> list[Action]:
        """A new handle arrived, or what held the safe point let go (an unknown
        ``interactionStatus`` timed out); a goAway that waits for its safe point may move
        now."""
        if self._move_on_handle and safe:
            return self.move("goAway at a safe point")
        return self.safe_point() if safe else []

    def move_asked(self, asked: Asked, *, safe: bool) -> list[Action]:
        """A move is asked for (see :attr:`takes_asks`; else nothing happens): it begins now
        if ``safe``, else at the next :meth:`safe_point`."""
        if not self.takes_asks:
            return []
        self.asked = asked
        return self.safe_point() if safe else []

    def safe_point(self) -> list[Action]:
        """The connection is at a safe point: an asked move begins."""
        if self.asked is None or self.why_moved is not None:
            return []
        return self.move(self.asked.why, self.asked.origin)

    def timer_fired(self) -> list[Action]:
        """``timeLeft - go_away_margin`` has come: move now; a move whose next connection is
        not ready yet closes this socket now (the margin is for the server's deadline)."""
        self.timer_running = False
        if self.why_moved is None:
            return self.move("goAway deadline")
        if self.state is State.RETIRED:
            return []
        return self._close(abort=False)

    def _start_deadline(
        self, time_left: float | None, *, now: float, margin: float
    ) -> list[Action]:
        if self.deadline is not None or self._finished:
            return []
        delay = 0.0 if time_left is None else max(0.0, time_left - margin)
        self.deadline = now + delay
        self.timer_running = True
        return [NoteGoAway(time_left, delay), StartTimer(delay)]

    def _dial_ahead(self) -> list[Action]:
        """The move waits for a safe point: the next socket's handshakes overlap the rest of
        the turn (a move at once connects at once: dialing ahead would gain nothing)."""
        return [] if self.why_moved is not None else [DialAhead(self.deadline)]

    # -- the move ------------------------------------------------------------------------

    def move(self, why: str, origin: MoveOrigin = "go_away") -> list[Action]:
        """Move the session to a new connection on purpose: open it ahead while this one is
        still open, or else close this socket so the loop resumes. A move asked for and not
        begun yet is carried out by this one (its reason and origin are the asked move's)."""
        if self.why_moved is not None or self.state in (State.CLIENT_CLOSED, State.STALLED):
            return []
        asked, self.asked = self.asked, None
        if asked is not None:
            why, origin = asked.why, asked.origin
        self.why_moved = why
        self.move_origin = origin
        self.state = State.MOVING
        actions: list[Action] = [NoteMove(asked)] if asked is not None else []
        actions.append(OpenAhead())
        return actions

    def ahead_started(self, started: bool) -> list[Action]:
        """Whether the :class:`OpenAhead` just returned started opening the next connection."""
        if started:
            self._ahead = True
            return []
        self.state = State.CLOSING
        return self._close(abort=False)

    def next_opened(
        self, *, ok: bool, refused: bool = False, retry_in: float | None = None
    ) -> list[Action]:
        """The connection opened ahead is ready (``ok``: retire this one) or not. Not ready:
        the server refused the resume beside this open socket (``refused``: close this one,
        the loop then retries as after a drop, and closes first from now on); it failed in a
        way a later try may not (``retry_in``, the seconds to wait before it: this one serves
        on, if it is open, not lost or closing already, and before its goAway's deadline,
        else it closes); or it failed otherwise (close this one)."""
        if not ok:
            if (
                retry_in is not None
                and not refused
                and self.state is State.MOVING
                and self._ahead
                and not self._closing
                and self.lost_at is None
                and (self.deadline is None or self.timer_running)  # (its deadline to come)
            ):
                self.state = State.OPEN if self.proved else State.OPENING
                self.why_moved = None
                self._ahead = False
                self._move_on_handle = False  # (not before the wait: retry_move)
                self._retry_pending = True
                return [ServeOn(retry_in)]
            return ([StopOpeningAhead()] if refused else []) + self._close(abort=False)
        if self._closing or self.state is not State.MOVING:
            return []  # closing already (the deadline came first), or the client closed
        if not self._all_read():
            # What the server already sent, and the answer in flight, are read to their end
            # here instead of being asked again on the new connection.
            self.state = State.DRAINING
            return []
        return self._retire()

    def retry_move(self, *, safe: bool) -> list[Action]:
        """The wait after a failed opening ahead is over (:class:`ServeOn`): the move happens
        at the next safe point (now, if ``safe``), the goAway's deadline still the latest."""
        if not self._retry_pending or self._finished or self.why_moved is not None:
            return []
        self._retry_pending = False
        if self.state not in (State.OPENING, State.OPEN):
            return []
        self._move_on_handle = True
        return self.move("goAway at a safe point") if safe else []

    def _retire(self) -> list[Action]:
        self.state = State.RETIRED
        return [Retire()]

    # -- the ends ------------------------------------------------------------------------

    def _lost(self, now: float) -> None:
        if self.lost_at is None:
            self.lost_at = now
        if self.state in (State.OPENING, State.OPEN):
            self.state = State.LOST

    def receive_failed(self, *, now: float) -> list[Action]:
        """Reading the socket failed."""
        self._lost(now)
        return [OpenAfterDrop()]

    def close_frame(self, code: int, reason: str = "", *, now: float) -> list[Action]:
        """The server's close frame arrived (google-genai reports it a round trip later)."""
        if self.closed_by_us:
            return []
        self._lost(now)
        return [DialAfterClose(code, reason)]

    def socket_closed(self, *, now: float) -> None:
        """The websocket closed."""
        if not self.closed_by_us:
            self._lost(now)

    def send_failed(self, error: BaseException, *, abort: bool, now: float) -> list[Action]:
        """The send step failed: unblock the receive side (its socket may never answer)."""
        self.send_error = error
        self._lost(now)
        return self._close(abort=abort)

    def client_closed(self) -> None:
        """The client closed the request queue (ADK closed the session)."""
        if self.state is not State.RETIRED:
            self.state = State.CLIENT_CLOSED

    def stalled(self, *, now: float) -> list[Action]:
        """The session stalled on this connection: close its socket; the loop recovers (the
        outage counts from ``now``, kept as ``lost_at``)."""
        if self.state not in (State.OPENING, State.OPEN) or self.why_moved is not None:
            return []
        self.state = State.STALLED
        if self.lost_at is None:
            self.lost_at = now
        self._sends_stopped = True
        return self._close(abort=False)

    def stop_sends(self) -> None:
        """The connection is being taken down: what is still sent goes to the outbox."""
        self._sends_stopped = True

    def _close(self, *, abort: bool) -> list[Action]:
        if self._closing:
            return []
        self._closing = True
        return [CloseSocket(abort)]

    def finish(self, *, graceful: bool) -> list[Action]:
        """The connection is over: no timer runs after this, and none starts. ``graceful``:
        the socket closes with a close frame (unless retired: closed in the background);
        otherwise the caller aborts it."""
        self._finished = True
        actions: list[Action] = []
        if self.timer_running:
            self.timer_running = False
            actions.append(CancelTimer())
        if graceful and self.state is not State.RETIRED:
            actions.extend(self._close(abort=False))
        return actions
