"""A connection's lifecycle (connection_state.ConnectionState), one path at a time: pure."""

from __future__ import annotations

from adk_live_resume.rules.connection_state import (
    Asked,
    CancelTimer,
    CloseSocket,
    ConnectionState,
    DialAfterClose,
    DialAhead,
    NoteGoAway,
    NoteMove,
    OpenAfterDrop,
    OpenAhead,
    ProveHealthy,
    Retire,
    ServeOn,
    StartTimer,
    State,
    StopOpeningAhead,
)


def _open() -> ConnectionState:
    core = ConnectionState()
    assert core.message_read(turn_open=False) == [ProveHealthy()]
    assert core.state is State.HEALTHY
    return core


def test_a_go_away_at_a_safe_point_opens_ahead_holds_sends_and_retires_when_ready() -> None:
    core = _open()
    actions = core.go_away_read(30.0, now=100.0, margin=10.0, safe=True)
    assert actions == [NoteGoAway(30.0, 20.0), StartTimer(20.0), OpenAhead()]
    assert core.deadline == 120.0 and core.state is State.MOVING
    assert core.ahead_started(True) == []
    assert core.holds_sends
    assert core.next_opened(ok=True) == [Retire()]
    assert core.state is State.RETIRED
    assert core.finish(graceful=True) == [CancelTimer()]  # (a retired socket closes apart)


def test_a_go_away_mid_turn_dials_ahead_and_moves_at_the_next_safe_handle() -> None:
    core = _open()
    actions = core.go_away_read(None, now=5.0, margin=10.0, safe=False)
    assert actions == [NoteGoAway(None, 0.0), StartTimer(0.0), DialAhead(5.0)]
    assert core.move_pending and not core.holds_sends and core.state is State.HEALTHY
    assert core.handle_changed(safe=False) == []
    assert core.handle_changed(safe=True) == [OpenAhead()]
    assert core.why_moved == "goAway at a safe point"
    assert core.go_away_read(None, now=6.0, margin=10.0, safe=True) == []  # read once


def test_the_go_away_frame_starts_the_deadline_once_and_dials_only_when_it_must_wait() -> None:
    core = _open()
    assert core.go_away_frame(12.0, now=0.0, margin=2.0, safe=True) == [
        NoteGoAway(12.0, 10.0),
        StartTimer(10.0),
    ]
    assert core.go_away_frame(12.0, now=1.0, margin=2.0, safe=False) == [DialAhead(10.0)]
    assert core.go_away_read(12.0, now=2.0, margin=2.0, safe=True) == [OpenAhead()]


def test_the_next_connection_ready_mid_answer_drains_this_one_first() -> None:
    core = _open()
    core.count_frames()
    core.move("goAway deadline")
    core.ahead_started(True)
    core.frame_arrived()
    core.message_read(turn_open=True)
    core.frame_arrived()
    core.frame_arrived()
    assert core.next_opened(ok=True) == []
    assert core.state is State.DRAINING
    assert core.message_read(turn_open=False) == []  # one frame arrived and is not read yet
    assert core.message_read(turn_open=False) == [Retire()]
    assert core.state is State.RETIRED


def test_the_deadline_closes_a_socket_whose_successor_is_not_ready() -> None:
    core = _open()
    core.go_away_read(0.0, now=0.0, margin=0.0, safe=False)
    assert core.timer_fired() == [OpenAhead()]
    assert core.ahead_started(True) == []
    assert core.timer_fired() == [CloseSocket(False)]
    assert core.next_opened(ok=True) == []  # the loop moves on when it ends
    assert core.state is State.MOVING


def test_a_move_that_cannot_open_ahead_closes_first_and_still_takes_sends() -> None:
    core = _open()
    assert core.move("goAway deadline") == [OpenAhead()]
    assert core.ahead_started(False) == [CloseSocket(False)]
    assert core.state is State.CLOSE_FIRST and not core.holds_sends
    assert core.move("again") == []


def test_an_opening_ahead_the_server_refused_closes_this_socket_and_stops_opening_ahead() -> None:
    core = _open()
    core.move("goAway at a safe point")
    core.ahead_started(True)
    assert core.next_opened(ok=False, refused=True) == [StopOpeningAhead(), CloseSocket(False)]
    assert core.state is State.MOVING and core.holds_sends


def test_an_opening_ahead_that_failed_otherwise_closes_this_socket_only() -> None:
    core = _open()
    core.move("ADK reconnect request")
    core.ahead_started(True)
    assert core.next_opened(ok=False) == [CloseSocket(False)]


def test_a_transient_failure_before_the_deadline_serves_on_and_moves_later() -> None:
    """HTTP 429 on the connection opened ahead at a goAway with time left: this connection
    takes sends again, and the move is tried again after the wait, at a safe point."""
    core = _open()
    core.go_away_read(30.0, now=0.0, margin=5.0, safe=True)
    core.ahead_started(True)
    assert core.next_opened(ok=False, retry_in=2.0) == [ServeOn(2.0)]
    assert core.state is State.HEALTHY and not core.holds_sends and core.why_moved is None
    assert core.handle_changed(safe=True) == [], "not before the wait"
    assert core.retry_move(safe=False) == [] and core.move_pending
    assert core.handle_changed(safe=True) == [OpenAhead()]
    assert core.ahead_started(True) == [] and core.holds_sends
    assert core.next_opened(ok=True) == [Retire()]


def test_a_move_asked_again_while_a_failed_one_waits_to_retry_is_told_as_its_own() -> None:
    """An asked move whose opening ahead failed for now serves on; a move the app asks for
    meanwhile begins at once and is told to the app as its own (a notice per move begun)."""
    core = _open()
    first, again = Asked("a language switch", "requested"), Asked("again", "requested")
    assert core.move_asked(first, safe=True) == [NoteMove(first), OpenAhead()]
    core.ahead_started(True)
    assert core.next_opened(ok=False, retry_in=1.0) == [ServeOn(1.0)]
    assert core.takes_asks
    assert core.move_asked(again, safe=True) == [NoteMove(again), OpenAhead()]
    assert core.retry_move(safe=True) == [], "the move asked again is the retry"


def test_a_transient_failure_at_the_deadline_closes_this_socket() -> None:
    core = _open()
    core.go_away_read(6.0, now=0.0, margin=5.0, safe=False)
    assert core.timer_fired() == [OpenAhead()]
    core.ahead_started(True)
    assert core.next_opened(ok=False, retry_in=2.0) == [CloseSocket(False)]
    assert core.retry_move(safe=True) == []


def test_a_close_of_ours_is_no_loss_and_a_close_of_the_servers_is() -> None:
    moved = _open()
    moved.move("goAway")
    moved.ahead_started(False)
    assert moved.close_frame(1000, now=3.0) == []
    moved.socket_closed(now=3.0)
    assert moved.lost_at is None and moved.state is State.CLOSE_FIRST
    lost = _open()
    assert lost.close_frame(1011, now=4.0) == [DialAfterClose(1011)]
    assert lost.state is State.LOST and lost.lost_at == 4.0
    assert lost.receive_failed(now=5.0) == [OpenAfterDrop()]
    assert lost.lost_at == 4.0  # (the first sign counts)


def test_a_failed_send_closes_the_socket_once() -> None:
    core = _open()
    error = ConnectionError("gone")
    assert core.send_failed(error, abort=True, now=1.0) == [CloseSocket(True)]
    assert core.send_error is error and core.state is State.LOST
    assert core.finish(graceful=True) == []  # closing already


def test_the_clients_close_is_final() -> None:
    core = _open()
    core.client_closed()
    assert core.state is State.CLIENT_CLOSED and core.closed_by_us
    assert core.move("goAway deadline") == []
    assert core.close_frame(1006, now=1.0) == []
    assert core.state is State.CLIENT_CLOSED and core.lost_at is None


def test_no_timer_is_left_after_the_finish() -> None:
    core = _open()
    core.go_away_frame(30.0, now=0.0, margin=10.0, safe=False)
    assert core.finish(graceful=False) == [CancelTimer()]
    assert not core.timer_running
    late = ConnectionState()
    late.finish(graceful=False)
    assert late.go_away_frame(30.0, now=0.0, margin=10.0, safe=False) == [DialAhead(None)]
    assert not late.timer_running


def test_sends_stop_when_the_connection_is_taken_down() -> None:
    core = _open()
    assert not core.holds_sends
    core.stop_sends()
    assert core.holds_sends


def test_a_retired_connection_stays_retired_whatever_comes_after() -> None:
    core = _open()
    core.move("goAway at a safe point")
    core.ahead_started(True)
    core.next_opened(ok=True)
    core.client_closed()
    assert core.receive_failed(now=1.0) == [OpenAfterDrop()]
    assert core.timer_fired() == []
    assert core.state is State.RETIRED


def test_an_asked_move_waits_for_a_safe_point_then_notes_itself_before_opening_ahead() -> None:
    core = _open()
    asked = Asked("the model keeps refusing", "requested")
    assert core.move_asked(asked, safe=False) == []
    assert core.move_pending and core.asked == asked and not core.takes_asks
    assert core.move_asked(Asked("again", "requested"), safe=True) == []  # one at a time
    assert core.handle_changed(safe=False) == []
    assert core.handle_changed(safe=True) == [NoteMove(asked), OpenAhead()]
    assert (core.why_moved, core.move_origin) == ("the model keeps refusing", "requested")
    assert core.asked is None and not core.move_pending and not core.takes_asks
    assert core.safe_point() == []  # begun once


def test_an_asked_move_at_a_safe_point_begins_at_once() -> None:
    core = _open()
    asked = Asked("the context was lost on resume", "run", fresh=True)
    assert core.move_asked(asked, safe=True) == [NoteMove(asked), OpenAhead()]
    assert core.move_origin == "run"


def test_a_go_away_move_carries_out_the_move_asked_for() -> None:
    core = _open()
    asked = Asked("start over", "requested", fresh=True)
    core.move_asked(asked, safe=False)
    actions = core.go_away_read(30.0, now=0.0, margin=10.0, safe=True)
    assert actions == [NoteGoAway(30.0, 20.0), StartTimer(20.0), NoteMove(asked), OpenAhead()]
    assert (core.why_moved, core.move_origin) == ("start over", "requested")


def test_no_move_is_asked_of_a_connection_that_cannot_begin_one() -> None:
    stalled = _open()
    stalled.stalled(now=1.0)
    lost = _open()
    lost.receive_failed(now=1.0)
    over = _open()
    over.finish(graceful=False)
    moving = _open()
    moving.move("goAway deadline")
    for core in (stalled, lost, over, moving):
        assert not core.takes_asks
        assert core.move_asked(Asked("why", "requested"), safe=True) == []
        assert core.asked is None
    # one that ends before its safe point keeps the ask, for the next connection
    waiting = _open()
    waiting.move_asked(Asked("why", "requested"), safe=False)
    waiting.receive_failed(now=2.0)
    assert waiting.asked == Asked("why", "requested")
