"""How one connection of a live run ended, read from the state its lifecycle ended in.

Pure: no I/O. :func:`classify_end` fills an :class:`Outcome` from the error the receive step
raised (if any), the send step's error, and the connection's final
:class:`~adk_live_resume.rules.connection_state.State`: closed by the client, moved (a goAway
move, :data:`~adk_live_resume.rules.connection_state.MOVED`), stalled (closed by us after a stall),
or else lost.

The outcome is the one way what a connection learnt reaches the run: besides how it ended
and what serving it did, its :class:`ConnectionReport` (from the connection's watch, once it
is over) holds the stall, why and by whom it was moved, the goAway's deadline, the model's
turn left open, when it was lost, the move asked for and not begun, and the connection's
:class:`~adk_live_resume.conversation.connection_figures.Figures` (tokens, answers). The loop reads
nothing of the watch after the connection is served.

Guarantees: an error :func:`~adk_live_resume.rules.errors.classify` does not know (a bug, not a
lost connection) always ends as ``DROPPED`` with no ``drop``, so the loop re-raises it instead
of reconnecting; a receive step that ended on its own without an error is a drop with
close code 1000 (:data:`ENDED`); the drop of a connection that had received a ``goAway``
says so (:attr:`~adk_live_resume.rules.errors.Drop.after_go_away`), for the retry decision.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Literal, Protocol

from ..compat.tap import ConnectionRetired
from ..conversation.connection_figures import Figures
from ..rules.connection_state import MOVED, State
from ..rules.errors import Drop, classify
from ..rules.lifecycle_events import Asked, MoveOrigin
from ..rules.outage import AttemptEnd, EndKind
from ..rules.retry_decision import seen_after_go_away
from ..rules.stall_rule import Stall

#: A receive step that ended without an error: the server closed normally.
ENDED = Drop("closed", 1000, "connection ended without an error")


class End(enum.Enum):
    """How one connection ended, as far as the loop is concerned."""

    CLIENT_CLOSED = "client closed"
    TASK_COMPLETED = "task completed"
    TRANSFER = "transfer"
    RERUN = "rerun"
    MOVED = "moved"
    STALLED = "stalled"
    DROPPED = "dropped"


@dataclass(frozen=True)
class AfterEnd:
    """What the run does once a connection ended (:func:`after_end`)."""

    #: A connection opened ahead stays for the next connection (a drop, a move).
    keeps_opening: bool
    #: The model was cut off mid-turn: the client is told to stop playing it.
    interrupted: bool
    #: The run is over, a next run takes the invocation over, or the run reconnects.
    then: Literal["over", "next_run", "reconnect"]


def after_end(end: End, *, turn_open: bool) -> AfterEnd:
    """What follows the end ``end`` of a connection, the model's turn left open or not."""
    lost = end in (End.DROPPED, End.MOVED)
    if end in (End.CLIENT_CLOSED, End.TASK_COMPLETED):
        then: Literal["over", "next_run", "reconnect"] = "over"
    elif end in (End.TRANSFER, End.RERUN):
        then = "next_run"
    else:
        then = "reconnect"
    return AfterEnd(keeps_opening=lost, interrupted=turn_open and lost, then=then)


@dataclass(frozen=True)
class ConnectionReport:
    """What a connection's watch learnt of it, as it was over (or, for a decision made at the
    end's first sign, as it was then)."""

    #: The connection's number in the run (from 1).
    number: int
    #: Its setup carried a handle.
    resumed: bool = False
    #: The stall that ended it (``None``: none).
    stall: Stall | None = None
    #: Why the session was moved off it, and who began the move (``None``: no move).
    moved_why: str | None = None
    move_origin: MoveOrigin = "go_away"
    #: ``loop.time()`` by which a goAway move had to happen (``None``: no goAway).
    move_by: float | None = None
    #: The model was in the middle of a turn when it ended.
    turn_open: bool = False
    #: ``loop.time()`` of the first sign that it was lost (``None``: not lost).
    lost_at: float | None = None
    #: The model answered on it (output or a tool call); turns a stall rule counted as
    #: answered with content.
    answered: bool = False
    stall_answers: int = 0
    #: ``loop.time()`` of its setup and of its latest traffic (``None``: never set up).
    connected_at: float | None = None
    last_traffic: float | None = None
    #: A move asked for and not begun on it: the next connection carries it out.
    asked: Asked | None = None
    #: Whether the session kept its context on it, if it resumed one (see
    #: :mod:`..conversation.context_check`; ``None``: not a resume, or nothing to tell).
    context_restored: bool | None = None
    figures: Figures = field(default_factory=Figures)

    def attempt_end(
        self,
        kind: EndKind,
        *,
        drop: Drop | None,
        resumed: bool,
        now: float,
        at_connect: bool = False,
    ) -> AttemptEnd:
        """How the connection ended (``kind``, the close ``drop``), as the decision about
        what follows reads it (:func:`~adk_live_resume.rules.next_step.next_step`) at ``now``."""
        stall = self.stall
        if kind == "stall":
            assert stall is not None
            what = stall.seen
        else:
            what = (self.moved_why or "goAway") if kind == "moved" else ""
        connected, last = self.connected_at, self.last_traffic
        return AttemptEnd(
            kind=kind,
            at=self.lost_at if self.lost_at is not None else now,
            drop=drop,
            what=what,
            silence=stall is not None and stall.kind == "silence",
            at_connect=at_connect,
            resumed=resumed,
            # (a stalled connection answered only if a user turn got content before it)
            answered=self.stall_answers > 0 if kind == "stall" else self.answered,
            connected_for=0.0 if connected is None else max(0.0, now - connected),
            quiet_for=0.0 if last is None else max(0.0, now - last),
        )


@dataclass
class Outcome:
    """What serving one connection came to: how it ended, and what it did on the way (the
    run's counters are added up from these by the run, once the connection is over)."""

    end: End
    drop: Drop | None = None
    error: BaseException | None = None
    transfer_to: str | None = None
    #: The connection failed before it was established (connect or setup).
    at_connect: bool = True
    #: Its setup carried a handle (a resume).
    resumed: bool = False
    #: A fresh session's history was sent on it.
    history_sent: bool = False
    #: Messages replayed on it.
    replayed_messages: int = 0
    #: The input transcription ADK had shown in pieces and not finished when it ended
    #: (``None``: no connection was made, the run's stays as it was).
    unfinished_input: str | None = None
    #: What its watch learnt (see the module); set once the connection is over.
    report: ConnectionReport | None = None

    def decided(self, end: End, *, transfer_to: str | None = None) -> None:
        """How the connection ends was decided while receiving (rerun, transfer, ...)."""
        self.end, self.transfer_to = end, transfer_to

    def resuming(self, handle: str | None) -> None:
        """The connection is opened with ``handle`` (``None``: a fresh session)."""
        self.resumed = bool(handle)

    def connected(self) -> None:
        """The connection was established: what fails from now on fails after connect."""
        self.at_connect = False

    def sending_history(self) -> None:
        """A fresh session's history goes on the connection (counted even if it fails)."""
        self.history_sent = True

    def replayed(self, messages: int) -> None:
        """``messages`` were sent again on the connection to restore the session."""
        self.replayed_messages = messages

    def left_unfinished(self, input_transcription: str) -> None:
        """The input transcription ADK showed in pieces and had not finished at the end."""
        self.unfinished_input = input_transcription

    def learnt(self, report: ConnectionReport) -> None:
        """The connection is over: ``report`` is what its watch learnt of it."""
        self.report = report

    def ended_without_error(self) -> None:
        """ADK's receive step ended on its own: the connection is over (a normal close)."""
        self.end, self.drop = End.DROPPED, ENDED


class EndSigns(Protocol):
    """The connection's final state, and the send step's error."""

    @property
    def state(self) -> State: ...

    @property
    def send_error(self) -> BaseException | None: ...

    @property
    def move_by(self) -> float | None:
        """Set (not ``None``) once the connection received a ``goAway``."""


def classify_end(watch: EndSigns, outcome: Outcome, error: BaseException | None) -> None:
    """Fill ``outcome`` from how the connection ended (``error`` is what receive raised)."""
    if isinstance(error, ConnectionRetired):
        outcome.end = End.MOVED  # the next connection, opened ahead, took over
        return
    if error is None and outcome.end is not End.DROPPED:
        return  # rerun, transfer, task_completed: decided while receiving
    send_error = watch.send_error
    if send_error is not None and classify(send_error) is None:
        outcome.end, outcome.error, outcome.drop = End.DROPPED, send_error, None
        return
    if watch.state is State.CLIENT_CLOSED:
        outcome.end = End.CLIENT_CLOSED
        if error is not None and classify(error) is None:
            outcome.end, outcome.error, outcome.drop = End.DROPPED, error, None
        return
    if error is not None:
        drop = classify(error)
        outcome.error = error
        if drop is None:
            outcome.end, outcome.drop = End.DROPPED, None
            return
        outcome.drop = seen_after_go_away(drop, watch.move_by is not None)
    if watch.state in MOVED:
        outcome.end = End.MOVED
        return
    if watch.state is State.STALLED:
        outcome.end = End.STALLED  # closed by us: the loop recovers from the stall
        return
    outcome.end = End.DROPPED
    if outcome.drop is None:
        outcome.drop = ENDED
