"""How one connection of a live run ended, read from the state its lifecycle ended in.

Pure: no I/O. :func:`classify_end` fills an :class:`Outcome` from the error the receive step
raised (if any), the send step's error, and the connection's final
:class:`~adk_live_resume.connection_state.State`: closed by the client, moved (a goAway
move, :data:`~adk_live_resume.connection_state.MOVED`), stalled (closed by us after a stall),
or else lost.

Guarantees: an error :func:`~adk_live_resume.errors.classify` does not know (a bug, not a
lost connection) always ends as ``DROPPED`` with no ``drop``, so the loop re-raises it instead
of reconnecting; a receive step that ended on its own without an error is a drop with
close code 1000 (:data:`ENDED`); the drop of a connection that had received a ``goAway``
says so (:attr:`~adk_live_resume.errors.Drop.after_go_away`), for the retry decision.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Protocol

from .connection_state import MOVED, State
from .errors import Drop, classify
from .retry_decision import seen_after_go_away
from .tap import ConnectionRetired

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
