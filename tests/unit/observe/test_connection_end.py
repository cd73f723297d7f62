"""How one connection ended (connection_end.classify_end, a read of the final state): pure."""

from __future__ import annotations

from dataclasses import dataclass

from websockets.exceptions import ConnectionClosedError
from websockets.frames import Close

from adk_live_resume.compat.tap import ConnectionRetired
from adk_live_resume.observe.connection_end import ENDED, End, Outcome, classify_end
from adk_live_resume.rules.connection_state import State


@dataclass
class Signs:
    send_error: BaseException | None = None
    state: State = State.HEALTHY
    move_by: float | None = None


def _closed(code: int) -> ConnectionClosedError:
    return ConnectionClosedError(Close(code, "bye"), None)


def _ended(signs: Signs, error: BaseException | None, start: End = End.DROPPED) -> Outcome:
    outcome = Outcome(start)
    classify_end(signs, outcome, error)
    return outcome


def test_a_retired_connection_was_moved_whatever_else_happened() -> None:
    outcome = _ended(Signs(send_error=RuntimeError("bug")), ConnectionRetired())
    assert outcome.end is End.MOVED and outcome.drop is None


def test_an_end_decided_while_receiving_stays() -> None:
    for decided in (End.TRANSFER, End.RERUN, End.TASK_COMPLETED):
        assert _ended(Signs(state=State.MOVING), None, start=decided).end is decided


def test_a_receive_step_that_just_ends_is_a_normal_close() -> None:
    outcome = _ended(Signs(), None)
    assert outcome.end is End.DROPPED and outcome.drop is ENDED and outcome.error is None


def test_a_close_is_a_drop_with_its_code_and_one_we_asked_for_a_move() -> None:
    dropped = _ended(Signs(), _closed(1011))
    assert dropped.end is End.DROPPED
    assert dropped.drop is not None and dropped.drop.code == 1011
    moved = _ended(Signs(state=State.CLOSE_FIRST), _closed(1000))
    assert moved.end is End.MOVED and moved.drop is not None and moved.drop.code == 1000


def test_a_drop_after_a_go_away_says_so_for_the_retry_decision() -> None:
    late = _ended(Signs(move_by=12.5), _closed(1008))
    assert late.end is End.DROPPED and late.drop is not None
    assert late.drop.code == 1008 and late.drop.after_go_away
    plain = _ended(Signs(), _closed(1008))
    assert plain.drop is not None and not plain.drop.after_go_away


def test_an_unknown_error_is_raised_not_reconnected_after() -> None:
    """A bug (receive or send) ends as a drop without ``drop``: the loop re-raises it."""
    bug = ValueError("bug")
    for outcome in (
        _ended(Signs(), bug),
        _ended(Signs(send_error=bug), _closed(1006)),
        _ended(Signs(state=State.CLIENT_CLOSED), bug),
        _ended(Signs(state=State.MOVING), bug),
    ):
        assert outcome.end is End.DROPPED and outcome.drop is None and outcome.error is bug


def test_the_clients_close_ends_the_run_even_if_the_socket_dropped_too() -> None:
    assert _ended(Signs(state=State.CLIENT_CLOSED), _closed(1006)).end is End.CLIENT_CLOSED
    assert _ended(Signs(state=State.CLIENT_CLOSED), None).end is End.CLIENT_CLOSED
    # a lost connection on the send side is no bug: the close decides
    assert _ended(Signs(send_error=_closed(1006), state=State.CLIENT_CLOSED), None).end is (
        End.CLIENT_CLOSED
    )


def test_every_moving_state_ends_as_a_move_and_the_others_as_a_drop() -> None:
    for state in State:
        outcome = _ended(Signs(state=state), _closed(1000))
        if state is State.CLIENT_CLOSED:
            assert outcome.end is End.CLIENT_CLOSED
        elif state in (State.MOVING, State.CLOSE_FIRST, State.DRAINING, State.RETIRED):
            assert outcome.end is End.MOVED, state
        elif state is State.STALLED:
            assert outcome.end is End.STALLED
        else:
            assert outcome.end is End.DROPPED, state
