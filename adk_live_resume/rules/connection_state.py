"""The lifecycle of one live connection as a state machine that does no I/O, its rules a table.

:class:`ConnectionState` is the protocol core of a connection, in the manner of websockets'
and h11's: the watch (:mod:`..shell.connection_watch`) feeds it events (a server message read, a
frame arrived, a goAway, a handle update, a send that failed, the server's close frame, the
goAway timer, the connection opened ahead ready or failed, the client's close) and carries
out the actions each event returns, in order (:data:`Action`). The machine reads no clock
(times come with the events), starts no task and touches no socket.

Its :class:`State` is the whole lifecycle; the way a connection ended is read from the state
it ended in (:func:`~adk_live_resume.observe.connection_end.classify_end`):

* ``CONNECTED``: connected (dial and setup done), no server message read yet; ``HEALTHY``:
  one was read (the connection proved healthy).
* ``MOVING``: a goAway move began and the next connection is being opened ahead (or opening
  it failed and this socket closes); ``CLOSE_FIRST``: a move that could not open ahead, so
  this socket closes first and the loop opens the next after it; ``DRAINING``: the next
  connection is ready and this one is read to its end; ``RETIRED``: the next connection took
  over.
* ``LOST``: the connection was lost while serving (not by a close of ours).
* ``STALLED``: the session stalled on the serving connection (:mod:`.stall_rule`): this
  socket closes, and the loop recovers (resume, then a fresh start, then an error).
* ``CLIENT_CLOSED``: the client closed the request queue.

The rules are one table, :data:`TABLE`: for each (state, event) pair a :class:`Rule` (the
step that gives the next :class:`Lifecycle` value and the actions, and the states it may go
to), an :class:`Ignored` pair (named, with why: the event changes nothing there) or a
:class:`Misfit` (the shell fed an event that cannot come in that state: a bug,
:class:`LifecycleError`). Every pair is in it (``tests/unit/rules/test_connection_state_table.py``
checks the table against the steps), and the diagram in ``docs/development.md`` is drawn
from it (``scripts/state_diagram.py``). What would make the states explode (each of these
holds in several states at once, independently: a state per combination would multiply the
nine by up to 2^10) is a named field of the frozen :class:`Lifecycle` value instead: whether
a goAway was read, a goAway move waits for the next handle, a move is to be tried again
after a failed opening ahead, the next connection is being opened ahead, sends are stopped,
the socket's close was asked for, the model's turn is open, the connection is finished, and
the frames read and arrived.

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
  never leaves the moving states but for ``CLIENT_CLOSED``, and for ``HEALTHY`` (or
  ``CONNECTED``) when opening the next connection ahead failed in a way a later try may not
  (HTTP 429 or 5xx, a timeout, a network error) while the socket was serving and its close
  not asked for: it serves on (:class:`ServeOn`) and the move is tried again
  (:meth:`ConnectionState.retry_move`).
* Only a server that refused the resume beside the open socket (it closed the connection
  opened ahead) makes the run stop opening ahead (:class:`StopOpeningAhead`).
* A loss noticed while moving (or after the client's close) changes no state: the
  connection still ends as moved (or closed by the client); its time is kept (``lost_at``).
* A stall is acted on only on a serving connection (``CONNECTED``: its setup answered; or
  ``HEALTHY``) that is not moving: at most one :class:`CloseSocket` for it, and a stalled
  connection never begins a move.
* A move asked for (:meth:`ConnectionState.move_asked`: by the app, or by the run for a
  fresh session) begins at a safe point: at once if it is one, else at the next the watch
  reports (:meth:`ConnectionState.safe_point`); a move that begins while one is asked (a
  goAway's) carries the asked one out. Each asked move that begins returns one
  :class:`NoteMove` before its :class:`OpenAhead`; one not begun when the connection ends is
  :attr:`ConnectionState.asked` (the next connection carries it out).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from .lifecycle_events import (
    Action,
    AheadStarted,
    Asked,
    CancelTimer,
    ClientClosed,
    CloseFrame,
    CloseSocket,
    DialAfterClose,
    DialAhead,
    Event,
    Finished,
    FrameArrived,
    FramesCounted,
    GoAwayFrame,
    GoAwayRead,
    HandleChanged,
    MessageRead,
    MoveAsked,
    MoveNow,
    MoveOrigin,
    NextOpened,
    NoteGoAway,
    NoteMove,
    OpenAfterDrop,
    OpenAhead,
    ProveHealthy,
    ReceiveFailed,
    Retire,
    RetryDue,
    SafePoint,
    SendFailed,
    SendsStopped,
    ServeOn,
    SocketClosed,
    Stalled,
    StartTimer,
    StopOpeningAhead,
    TimerFired,
)


class State(enum.Enum):
    """Where one connection is in its life (see the module's docstring)."""

    CONNECTED = "connected"
    HEALTHY = "healthy"
    MOVING = "moving"
    CLOSE_FIRST = "close first"
    DRAINING = "draining"
    RETIRED = "retired"
    LOST = "lost"
    STALLED = "stalled"
    CLIENT_CLOSED = "closed by the client"


#: The states of a goAway move: a connection that ends in one of them ended as moved.
MOVED = frozenset({State.MOVING, State.CLOSE_FIRST, State.DRAINING, State.RETIRED})
#: The states no event leaves.
FINAL = frozenset({State.RETIRED, State.CLIENT_CLOSED})
#: The states of a connection that serves: connected, healthy or not yet.
SERVING = frozenset({State.CONNECTED, State.HEALTHY})


class LifecycleError(RuntimeError):
    """The watch fed the lifecycle an event that cannot come in its state (a bug)."""


# -- the value -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Lifecycle:
    """Where one connection is: its :class:`State` and the facts that hold beside it."""

    state: State = State.CONNECTED
    #: Why the session is being moved off this connection (``None``: no move began), and
    #: who began the move.
    why_moved: str | None = None
    move_origin: MoveOrigin = "go_away"
    #: A move asked for and not begun yet.
    asked: Asked | None = None
    #: ``now + delay`` of the goAway timer (``None``: no goAway yet).
    deadline: float | None = None
    #: The time the connection was first seen lost.
    lost_at: float | None = None
    #: The send step's error, if sending failed.
    send_error: BaseException | None = None
    #: A server message was read.
    proved: bool = False
    timer_running: bool = False
    #: The connection is over: no timer starts.
    finished: bool = False
    go_away_read: bool = False
    #: A goAway was read off a safe point: the move waits for the next handle.
    move_on_handle: bool = False
    #: A failed opening ahead left this connection serving; the move is to be tried again.
    retry_pending: bool = False
    #: The next connection is being opened ahead (or took over): sends are held for it.
    ahead: bool = False
    sends_stopped: bool = False
    #: A :class:`CloseSocket` was returned.
    close_asked: bool = False
    #: The model's answer was still going at the last message read.
    turn_open: bool = False
    read: int = 0
    #: Messages that arrived on the socket (``None``: not counted).
    arrived: int | None = None

    def all_read(self) -> bool:
        """No answer is in flight, and every message that arrived has been read."""
        return not self.turn_open and (self.arrived is None or self.read >= self.arrived)

    @property
    def closed_by_us(self) -> bool:
        """The socket goes because we close it (a move, or the client's close): no loss."""
        return self.why_moved is not None or self.state in (State.CLIENT_CLOSED, State.STALLED)


# -- the steps: each gives the next value and the actions ------------------------------------

Outcome = tuple[Lifecycle, list[Action]]


def _frames_counted(now: Lifecycle, _: FramesCounted) -> Outcome:
    return replace(now, arrived=now.read), []


def _frame_arrived(now: Lifecycle, _: FrameArrived) -> Outcome:
    if now.arrived is None:
        return now, []
    return _with(now, arrived=now.arrived + 1), []


def _with(now: Lifecycle, **changes: Any) -> Lifecycle:
    """``now`` with ``changes``: ``dataclasses.replace`` without its per-field work (about
    5 µs, for every server frame and message: this takes under 1 µs; :class:`Lifecycle` has
    no ``__post_init__`` to run)."""
    changed = object.__new__(Lifecycle)
    changed.__dict__.update(now.__dict__, **changes)
    return changed


def _counted(now: Lifecycle, turn_open: bool) -> Lifecycle:
    """``now`` with one more message read."""
    return _with(now, read=now.read + 1, turn_open=turn_open)


def _message_read(now: Lifecycle, event: MessageRead) -> Outcome:
    """Count it; the first proves the connection healthy; a draining one that read all that
    arrived retires."""
    now = _counted(now, event.turn_open)
    actions: list[Action] = []
    if not now.proved:
        now = replace(now, proved=True)
        actions.append(ProveHealthy())
        if now.state is State.CONNECTED:
            now = replace(now, state=State.HEALTHY)
    if now.state is State.DRAINING and now.all_read():
        return replace(now, state=State.RETIRED), [*actions, Retire()]
    return now, actions


def _start_deadline(now: Lifecycle, time_left: float | None, at: float, margin: float) -> Outcome:
    """The first goAway starts the deadline's timer (none after the finish)."""
    if now.deadline is not None or now.finished:
        return now, []
    delay = 0.0 if time_left is None else max(0.0, time_left - margin)
    now = replace(now, deadline=at + delay, timer_running=True)
    return now, [NoteGoAway(time_left, delay), StartTimer(delay)]


def _dial_ahead(now: Lifecycle) -> list[Action]:
    """The move waits for a safe point: the next socket's handshakes overlap the rest of the
    turn (a move at once connects at once: dialing ahead would gain nothing)."""
    return [] if now.why_moved is not None else [DialAhead(now.deadline)]


def _go_away_frame(now: Lifecycle, event: GoAwayFrame) -> Outcome:
    """The deadline runs from the frame's arrival; dial ahead unless the move can be now."""
    now, actions = _start_deadline(now, event.time_left, event.now, event.margin)
    return now, actions if event.safe else actions + _dial_ahead(now)


def _go_away_read(now: Lifecycle, event: GoAwayRead) -> Outcome:
    """Once: at a safe point the move begins now, else at the next handle."""
    if now.go_away_read:
        return now, []
    now, actions = _start_deadline(
        replace(now, go_away_read=True), event.time_left, event.now, event.margin
    )
    if event.safe:
        now, moved = _begin_move(now, "goAway at a safe point", "go_away")
        return now, actions + moved
    now = replace(now, move_on_handle=True)
    return now, actions + _dial_ahead(now)


def _handle_changed(now: Lifecycle, event: HandleChanged) -> Outcome:
    """A goAway that waits for its safe point moves; else an asked move begins."""
    if not event.safe:
        return now, []
    if now.move_on_handle:
        return _begin_move(now, "goAway at a safe point", "go_away")
    return _safe_point(now, SafePoint())


def _takes_asks(now: Lifecycle) -> bool:
    return (
        now.why_moved is None
        and now.asked is None
        and not now.finished
        and now.state not in (State.CLIENT_CLOSED, State.STALLED, State.LOST)
    )


def _move_asked(now: Lifecycle, event: MoveAsked) -> Outcome:
    """Kept until a safe point (now, if ``safe``); one at a time, none once finished."""
    if not _takes_asks(now):
        return now, []
    now = replace(now, asked=event.asked)
    return _safe_point(now, SafePoint()) if event.safe else (now, [])


def _safe_point(now: Lifecycle, _: SafePoint) -> Outcome:
    if now.asked is None or now.why_moved is not None:
        return now, []
    return _begin_move(now, now.asked.why, now.asked.origin)


def _timer_fired(now: Lifecycle, _: TimerFired) -> Outcome:
    """Move now; a move whose next connection is not ready yet closes this socket now (the
    margin is for the server's deadline)."""
    now = replace(now, timer_running=False)
    if now.why_moved is None:
        return _begin_move(now, "goAway deadline", "go_away")
    if now.state is State.RETIRED:
        return now, []
    return _close(now, abort=False)


def _move_now(now: Lifecycle, event: MoveNow) -> Outcome:
    return _begin_move(now, event.why, event.origin)


def _begin_move(now: Lifecycle, why: str, origin: MoveOrigin) -> Outcome:
    """Open the next connection ahead; a move asked for is carried out by this one (its
    reason and origin are the asked move's)."""
    if now.why_moved is not None or now.state in (State.CLIENT_CLOSED, State.STALLED):
        return now, []
    asked = now.asked
    if asked is not None:
        why, origin = asked.why, asked.origin
    now = replace(now, asked=None, why_moved=why, move_origin=origin, state=State.MOVING)
    return now, [*([NoteMove(asked)] if asked is not None else []), OpenAhead()]


def _ahead_started(now: Lifecycle, event: AheadStarted) -> Outcome:
    if event.started:
        return replace(now, ahead=True), []
    return _close(replace(now, state=State.CLOSE_FIRST), abort=False)


def _next_opened(now: Lifecycle, event: NextOpened) -> Outcome:
    """Ready: retire this one (after reading what arrived). Failed in a way a later try may
    not, while this one serves and its deadline is to come: serve on; else close."""
    if not event.ok:
        if (
            event.retry_in is not None
            and not event.refused
            and now.state is State.MOVING
            and now.ahead
            and not now.close_asked
            and now.lost_at is None
            and (now.deadline is None or now.timer_running)  # (its deadline to come)
        ):
            now = replace(
                now,
                state=State.HEALTHY if now.proved else State.CONNECTED,
                why_moved=None,
                ahead=False,
                move_on_handle=False,  # (not before the wait: RetryDue)
                retry_pending=True,
            )
            return now, [ServeOn(event.retry_in)]
        now, closing = _close(now, abort=False)
        return now, ([StopOpeningAhead()] if event.refused else []) + closing
    if now.close_asked or now.state is not State.MOVING:
        return now, []  # closing already (the deadline came first), or the client closed
    if not now.all_read():
        # What the server already sent, and the answer in flight, are read to their end
        # here instead of being asked again on the new connection.
        return replace(now, state=State.DRAINING), []
    return replace(now, state=State.RETIRED), [Retire()]


def _retry_due(now: Lifecycle, event: RetryDue) -> Outcome:
    """The move happens at the next safe point (now, if ``safe``), on a serving connection."""
    if now.state not in SERVING or not now.retry_pending or now.finished:
        return now, []
    now = replace(now, retry_pending=False, move_on_handle=True)
    return _begin_move(now, "goAway at a safe point", "go_away") if event.safe else (now, [])


def _lost(now: Lifecycle, at: float) -> Lifecycle:
    """The first sign of a loss counts; a serving connection is lost by it."""
    if now.lost_at is None:
        now = replace(now, lost_at=at)
    if now.state in SERVING:
        now = replace(now, state=State.LOST)
    return now


def _receive_failed(now: Lifecycle, event: ReceiveFailed) -> Outcome:
    return _lost(now, event.now), [OpenAfterDrop()]


def _close_frame(now: Lifecycle, event: CloseFrame) -> Outcome:
    if now.closed_by_us:
        return now, []
    return _lost(now, event.now), [DialAfterClose(event.code, event.reason)]


def _socket_closed(now: Lifecycle, event: SocketClosed) -> Outcome:
    if now.closed_by_us:
        return now, []
    return _lost(now, event.now), []


def _send_failed(now: Lifecycle, event: SendFailed) -> Outcome:
    """Unblock the receive side (its socket may never answer)."""
    now = _lost(replace(now, send_error=event.error), event.now)
    return _close(now, abort=event.abort)


def _client_closed(now: Lifecycle, _: ClientClosed) -> Outcome:
    if now.state is State.RETIRED:
        return now, []
    return replace(now, state=State.CLIENT_CLOSED), []


def _stalled(now: Lifecycle, event: Stalled) -> Outcome:
    """Close the socket; the outage counts from the stall (``lost_at``)."""
    if now.state not in SERVING:
        return now, []
    lost_at = event.now if now.lost_at is None else now.lost_at
    now = replace(now, state=State.STALLED, lost_at=lost_at, sends_stopped=True)
    return _close(now, abort=False)


def _sends_stopped(now: Lifecycle, _: SendsStopped) -> Outcome:
    return replace(now, sends_stopped=True), []


def _finished(now: Lifecycle, event: Finished) -> Outcome:
    """No timer runs after this, and none starts; a graceful end closes the socket (unless
    retired: it closes in the background)."""
    actions: list[Action] = []
    if now.timer_running:
        actions.append(CancelTimer())
    now = replace(now, finished=True, timer_running=False)
    if event.graceful and now.state is not State.RETIRED:
        now, closing = _close(now, abort=False)
        actions += closing
    return now, actions


def _close(now: Lifecycle, *, abort: bool) -> Outcome:
    if now.close_asked:
        return now, []
    return replace(now, close_asked=True), [CloseSocket(abort)]


# -- the table -------------------------------------------------------------------------------

Step = Callable[[Lifecycle, Any], Outcome]


@dataclass(frozen=True)
class Rule:
    """What an event does in a state: ``step`` gives the next value and the actions; the
    state after it is the same or one of ``to`` (the diagram's arrows)."""

    step: Step
    to: frozenset[State] = frozenset()


@dataclass(frozen=True)
class Ignored:
    """The event changes nothing in this state (``why``, in words)."""

    why: str


@dataclass(frozen=True)
class Misfit:
    """The event cannot come in this state (``why``): feeding it raises :class:`LifecycleError`."""

    why: str


Entry = Rule | Ignored | Misfit
ALL = frozenset(State)
_MOVED_BY_US = "a move began: no other begins, and the socket closes on our side"
_NO_MOVE = "a stalled connection, or one the client closed, begins no move"


def _rule(step: Step, *to: State) -> Rule:
    return Rule(step, frozenset(to))


def _table(rows: Iterable[tuple[type[Event], frozenset[State], Entry]]) -> dict[Key, Entry]:
    table: dict[Key, Entry] = {}
    for event, states, entry in rows:
        for state in states:
            if (state, event) in table:
                raise ValueError(f"{event.__name__} in {state.name} has two entries")
            table[(state, event)] = entry
    return table


Key = tuple[State, type[Event]]
_S, _M = SERVING, MOVED
_CC, _ST, _LOST = State.CLIENT_CLOSED, State.STALLED, State.LOST
_HALTED = frozenset({_ST, _CC})

#: The rules: (state, event kind) -> what follows. Every pair is here (the table's test).
TABLE: dict[Key, Entry] = _table(
    [
        (FramesCounted, ALL, _rule(_frames_counted)),
        (FrameArrived, ALL, _rule(_frame_arrived)),
        (MessageRead, frozenset({State.CONNECTED}), _rule(_message_read, State.HEALTHY)),
        (MessageRead, frozenset({State.DRAINING}), _rule(_message_read, State.RETIRED)),
        (MessageRead, ALL - {State.CONNECTED, State.DRAINING}, _rule(_message_read)),
        (GoAwayFrame, ALL, _rule(_go_away_frame)),
        (GoAwayRead, _S | {_LOST}, _rule(_go_away_read, State.MOVING)),
        (GoAwayRead, _M | _HALTED, _rule(_go_away_read)),  # (the deadline only)
        (HandleChanged, _S | {_LOST}, _rule(_handle_changed, State.MOVING)),
        (HandleChanged, _M, Ignored(_MOVED_BY_US)),
        (HandleChanged, _HALTED, Ignored(_NO_MOVE)),
        (MoveAsked, _S, _rule(_move_asked, State.MOVING)),
        (MoveAsked, _M, Ignored(_MOVED_BY_US)),
        (MoveAsked, _HALTED | {_LOST}, Ignored("the next connection takes the asked moves")),
        (SafePoint, _S | {_LOST}, _rule(_safe_point, State.MOVING)),
        (SafePoint, _M, Ignored(_MOVED_BY_US)),
        (SafePoint, _HALTED, Ignored(_NO_MOVE)),
        (TimerFired, _S | {_LOST}, _rule(_timer_fired, State.MOVING)),
        (TimerFired, ALL - _S - {_LOST}, _rule(_timer_fired)),  # (a move not ready closes)
        (MoveNow, _S | {_LOST}, _rule(_move_now, State.MOVING)),
        (MoveNow, _M, Ignored(_MOVED_BY_US)),
        (MoveNow, _HALTED, Ignored(_NO_MOVE)),
        (AheadStarted, frozenset({State.MOVING}), _rule(_ahead_started, State.CLOSE_FIRST)),
        (AheadStarted, ALL - {State.MOVING}, Misfit("it answers an OpenAhead, at once")),
        (
            NextOpened,
            frozenset({State.MOVING}),
            _rule(_next_opened, State.CONNECTED, State.HEALTHY, State.DRAINING, State.RETIRED),
        ),
        (NextOpened, frozenset({_CC}), _rule(_next_opened)),  # (a failure closes)
        (
            NextOpened,
            ALL - {State.MOVING, _CC},
            Misfit("only a move under way (or the client's close) waits for it"),
        ),
        (RetryDue, _S, _rule(_retry_due, State.MOVING)),
        (RetryDue, _M, Ignored(_MOVED_BY_US)),
        (RetryDue, _HALTED | {_LOST}, Ignored("the next connection makes the move")),
        (ReceiveFailed, _S, _rule(_receive_failed, _LOST)),
        (ReceiveFailed, ALL - _S, _rule(_receive_failed)),  # (its time kept, if the first)
        (CloseFrame, _S, _rule(_close_frame, _LOST)),
        (CloseFrame, frozenset({_LOST}), _rule(_close_frame)),
        (CloseFrame, _M | _HALTED, Ignored("closed by us: no loss")),
        (SocketClosed, _S, _rule(_socket_closed, _LOST)),
        (SocketClosed, frozenset({_LOST}), Ignored("lost already: the first sign's time counts")),
        (SocketClosed, _M | _HALTED, Ignored("closed by us: no loss")),
        (SendFailed, _S, _rule(_send_failed, _LOST)),
        (SendFailed, ALL - _S, _rule(_send_failed)),  # (the error kept, the socket closed)
        (ClientClosed, ALL - FINAL, _rule(_client_closed, _CC)),
        (ClientClosed, FINAL, Ignored("final: the next connection took over, or closed")),
        (Stalled, _S, _rule(_stalled, _ST)),
        (Stalled, ALL - _S, Ignored("a stall counts only on a serving connection")),
        (SendsStopped, ALL, _rule(_sends_stopped)),
        (Finished, ALL, _rule(_finished)),
    ]
)


#: The events of every server frame and message, made once (they are values).
_FRAME_ARRIVED = FrameArrived()
_MESSAGE_READ = {False: MessageRead(False), True: MessageRead(True)}


class ConnectionState:
    """The lifecycle of one connection: events in, actions out (see the module)."""

    def __init__(self) -> None:
        #: The lifecycle's value, replaced by each event (:data:`TABLE`).
        self.now = Lifecycle()

    def handle(self, event: Event) -> list[Action]:
        """Feed ``event``: the table says what follows; return the actions, in order."""
        before = self.now.state
        entry = TABLE[(before, type(event))]
        if isinstance(entry, Ignored):
            return []
        if isinstance(entry, Misfit):
            raise LifecycleError(
                f"{type(event).__name__} cannot come in {before.name}, a bug: please report it "
                f"({entry.why})"
            )
        self.now, actions = entry.step(self.now, event)
        after = self.now.state
        if after is not before and after not in entry.to:
            raise LifecycleError(
                f"{type(event).__name__} led {before.name} to {after.name}, not in its rule, a "
                "bug: please report it"
            )
        return actions

    # -- what the state says ----------------------------------------------------------------

    @property
    def state(self) -> State:
        return self.now.state

    @property
    def why_moved(self) -> str | None:
        """Why the session is being moved off this connection (``None``: no move began)."""
        return self.now.why_moved

    @property
    def move_origin(self) -> MoveOrigin:
        """Who began the move."""
        return self.now.move_origin

    @property
    def asked(self) -> Asked | None:
        """A move asked for and not begun yet (see the module's guarantees)."""
        return self.now.asked

    @property
    def deadline(self) -> float | None:
        """``now + delay`` of the goAway timer (``None``: no goAway yet)."""
        return self.now.deadline

    @property
    def lost_at(self) -> float | None:
        """The time the connection was first seen lost."""
        return self.now.lost_at

    @property
    def send_error(self) -> BaseException | None:
        """The send step's error, if sending failed."""
        return self.now.send_error

    @property
    def proved(self) -> bool:
        """A server message was read."""
        return self.now.proved

    @property
    def timer_running(self) -> bool:
        return self.now.timer_running

    @property
    def holds_sends(self) -> bool:
        """Client sends go to the outbox only, not this socket: the next connection is being
        opened ahead (or took over), or the connection is being taken down."""
        return self.now.ahead or self.now.sends_stopped

    @property
    def opening_ahead(self) -> bool:
        """The next connection is being opened ahead to take over (sends are held for it)."""
        return self.now.ahead and self.now.state is not State.RETIRED

    @property
    def closed_by_us(self) -> bool:
        """The socket goes because we close it (a move, or the client's close): no loss."""
        return self.now.closed_by_us

    @property
    def move_pending(self) -> bool:
        """A move waits for a safe point: a goAway was read (it waits for a new handle), or a
        move was asked for."""
        now = self.now
        return (now.move_on_handle or now.asked is not None) and now.why_moved is None

    @property
    def takes_asks(self) -> bool:
        """A move asked for now can still begin on this connection (none began, none is
        asked, and the connection is not closed by the client, stalled or over)."""
        return _takes_asks(self.now)

    @property
    def unread_frames(self) -> bool:
        """Messages arrived on the socket that ADK's reading has not reached yet (known only
        while frames are counted)."""
        arrived = self.now.arrived
        return arrived is not None and arrived > self.now.read

    # -- the events, by name ----------------------------------------------------------------

    def count_frames(self) -> None:
        """Frames are counted from now on, as they arrive (:meth:`frame_arrived`)."""
        self.handle(FramesCounted())

    def frame_arrived(self) -> None:
        self.handle(_FRAME_ARRIVED)

    def message_read(self, *, turn_open: bool) -> list[Action]:
        """A server message was read (``turn_open``: the model's answer is still going)."""
        return self.handle(_MESSAGE_READ[turn_open])

    def go_away_frame(
        self, time_left: float | None, *, now: float, margin: float, safe: bool
    ) -> list[Action]:
        """A goAway frame arrived on the socket (ADK may read it later): the deadline runs
        from now; the next socket is dialed ahead unless the move can happen at once."""
        return self.handle(GoAwayFrame(time_left, now, margin, safe))

    def go_away_read(
        self, time_left: float | None, *, now: float, margin: float, safe: bool
    ) -> list[Action]:
        """The goAway reached ADK's reading: everything before it was handled, so ``safe``
        (the newest handle holds everything) decides whether the move happens now or at the
        next handle (:meth:`handle_changed`)."""
        return self.handle(GoAwayRead(time_left, now, margin, safe))

    def handle_changed(self, *, safe: bool) -> list[Action]:
        """A new handle arrived, or what held the safe point let go (an unknown
        ``interactionStatus`` timed out); a goAway that waits for its safe point may move
        now."""
        return self.handle(HandleChanged(safe))

    def move_asked(self, asked: Asked, *, safe: bool) -> list[Action]:
        """A move is asked for (see :attr:`takes_asks`; else nothing happens): it begins now
        if ``safe``, else at the next :meth:`safe_point`."""
        return self.handle(MoveAsked(asked, safe))

    def safe_point(self) -> list[Action]:
        """The connection is at a safe point: an asked move begins."""
        return self.handle(SafePoint())

    def timer_fired(self) -> list[Action]:
        """``timeLeft - go_away_margin`` has come: move now; a move whose next connection is
        not ready yet closes this socket now (the margin is for the server's deadline)."""
        return self.handle(TimerFired())

    def move(self, why: str, origin: MoveOrigin = "go_away") -> list[Action]:
        """Move the session to a new connection on purpose: open it ahead while this one is
        still open, or else close this socket so the loop resumes. A move asked for and not
        begun yet is carried out by this one (its reason and origin are the asked move's)."""
        return self.handle(MoveNow(why, origin))

    def ahead_started(self, started: bool) -> list[Action]:
        """Whether the :class:`OpenAhead` just returned started opening the next connection."""
        return self.handle(AheadStarted(started))

    def next_opened(
        self, *, ok: bool, refused: bool = False, retry_in: float | None = None
    ) -> list[Action]:
        """The connection opened ahead is ready (``ok``: retire this one) or not. Not ready:
        the server refused the resume beside this open socket (``refused``: close this one,
        the loop then retries as after a drop, and closes first from now on); it failed in a
        way a later try may not (``retry_in``, the seconds to wait before it: this one serves
        on, if it is serving, not lost or its close asked for already, and before its
        goAway's deadline, else it closes); or it failed otherwise (close this one)."""
        return self.handle(NextOpened(ok, refused, retry_in))

    def retry_move(self, *, safe: bool) -> list[Action]:
        """The wait after a failed opening ahead is over (:class:`ServeOn`): the move happens
        at the next safe point (now, if ``safe``), the goAway's deadline still the latest."""
        return self.handle(RetryDue(safe))

    def receive_failed(self, *, now: float) -> list[Action]:
        """Reading the socket failed."""
        return self.handle(ReceiveFailed(now))

    def close_frame(self, code: int, reason: str = "", *, now: float) -> list[Action]:
        """The server's close frame arrived (google-genai reports it a round trip later)."""
        return self.handle(CloseFrame(code, reason, now))

    def socket_closed(self, *, now: float) -> None:
        """The websocket closed."""
        self.handle(SocketClosed(now))

    def send_failed(self, error: BaseException, *, abort: bool, now: float) -> list[Action]:
        """The send step failed: unblock the receive side (its socket may never answer)."""
        return self.handle(SendFailed(error, abort, now))

    def client_closed(self) -> None:
        """The client closed the request queue (ADK closed the session)."""
        self.handle(ClientClosed())

    def stalled(self, *, now: float) -> list[Action]:
        """The session stalled on this connection: close its socket; the loop recovers (the
        outage counts from ``now``, kept as ``lost_at``)."""
        return self.handle(Stalled(now))

    def stop_sends(self) -> None:
        """The connection is being taken down: what is still sent goes to the outbox."""
        self.handle(SendsStopped())

    def finish(self, *, graceful: bool) -> list[Action]:
        """The connection is over: no timer runs after this, and none starts. ``graceful``:
        the socket closes with a close frame (unless retired: closed in the background);
        otherwise the caller aborts it."""
        return self.handle(Finished(graceful))
