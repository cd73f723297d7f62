"""What a connection's lifecycle takes in and gives out: its events and its actions.

The vocabulary of :class:`~.connection_state.ConnectionState`: the watch feeds
it one event (a frozen value, named for what happened) and carries out the actions it
returns, in order (:data:`Action`). Which event does what in which state is the lifecycle's
table (:data:`~.connection_state.TABLE`).

Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

#: Who began a move: the server's ``goAway`` (or ADK's own reconnect request after it), the
#: app (:func:`~adk_live_resume.request_move`), or the run itself (a fresh session it needs).
MoveOrigin = Literal["go_away", "requested", "run"]


# -- the actions ---------------------------------------------------------------------------


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


# -- the events ------------------------------------------------------------------------------


@dataclass(frozen=True)
class FramesCounted:
    """Frames are counted from now on, as they arrive."""


@dataclass(frozen=True)
class FrameArrived:
    """A frame arrived on the socket (ADK reads it later)."""


@dataclass(frozen=True)
class MessageRead:
    """A server message was read (``turn_open``: the model's answer is still going)."""

    turn_open: bool


@dataclass(frozen=True)
class GoAwayFrame:
    """A goAway frame arrived on the socket (``safe``: the newest handle holds everything)."""

    time_left: float | None
    now: float
    margin: float
    safe: bool


@dataclass(frozen=True)
class GoAwayRead:
    """The goAway reached ADK's reading."""

    time_left: float | None
    now: float
    margin: float
    safe: bool


@dataclass(frozen=True)
class HandleChanged:
    """A new handle arrived, or what held the safe point let go."""

    safe: bool


@dataclass(frozen=True)
class MoveAsked:
    """A move is asked for."""

    asked: Asked
    safe: bool


@dataclass(frozen=True)
class SafePoint:
    """The connection is at a safe point."""


@dataclass(frozen=True)
class TimerFired:
    """The goAway timer fired: the move deadline has come."""


@dataclass(frozen=True)
class MoveNow:
    """Move the session to a new connection on purpose, now."""

    why: str
    origin: MoveOrigin


@dataclass(frozen=True)
class AheadStarted:
    """The answer to an :class:`OpenAhead`: whether opening the next connection started."""

    started: bool


@dataclass(frozen=True)
class NextOpened:
    """The connection opened ahead is ready (``ok``) or failed (``refused``, ``retry_in``)."""

    ok: bool
    refused: bool
    retry_in: float | None


@dataclass(frozen=True)
class RetryDue:
    """The wait after a failed opening ahead is over (:class:`ServeOn`)."""

    safe: bool


@dataclass(frozen=True)
class ReceiveFailed:
    """Reading the socket failed."""

    now: float


@dataclass(frozen=True)
class CloseFrame:
    """The server's close frame arrived."""

    code: int
    reason: str
    now: float


@dataclass(frozen=True)
class SocketClosed:
    """The websocket closed."""

    now: float


@dataclass(frozen=True)
class SendFailed:
    """The send step failed (``abort``: close without a close frame)."""

    error: BaseException
    abort: bool
    now: float


@dataclass(frozen=True)
class ClientClosed:
    """The client closed the request queue."""


@dataclass(frozen=True)
class Stalled:
    """The session stalled on this connection."""

    now: float


@dataclass(frozen=True)
class SendsStopped:
    """The connection is being taken down: what is still sent goes to the outbox."""


@dataclass(frozen=True)
class Finished:
    """The connection is over (``graceful``: close the socket with a close frame)."""

    graceful: bool


Event = (
    FramesCounted
    | FrameArrived
    | MessageRead
    | GoAwayFrame
    | GoAwayRead
    | HandleChanged
    | MoveAsked
    | SafePoint
    | TimerFired
    | MoveNow
    | AheadStarted
    | NextOpened
    | RetryDue
    | ReceiveFailed
    | CloseFrame
    | SocketClosed
    | SendFailed
    | ClientClosed
    | Stalled
    | SendsStopped
    | Finished
)
#: Every kind of event, in the table's order.
EVENTS: tuple[type[Event], ...] = (
    FramesCounted,
    FrameArrived,
    MessageRead,
    GoAwayFrame,
    GoAwayRead,
    HandleChanged,
    MoveAsked,
    SafePoint,
    TimerFired,
    MoveNow,
    AheadStarted,
    NextOpened,
    RetryDue,
    ReceiveFailed,
    CloseFrame,
    SocketClosed,
    SendFailed,
    ClientClosed,
    Stalled,
    SendsStopped,
    Finished,
)
