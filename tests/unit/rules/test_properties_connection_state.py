"""Property: a connection's lifecycle keeps its guarantees whatever order the events come in.

A state machine plays the shell around :class:`ConnectionState` (what the watch does): it
feeds every event in any order (messages read, frames arrived, goAways as frames and as
read, handle updates, the timer, moves, moves asked for and safe points, the connection
opened ahead ready or failed, drops of every kind, the client's close, the take-down, the
finish) and carries out the actions
as the watch would (a timer runs until it fires or is cancelled; an :class:`OpenAhead` is
answered at once, started or not). The reference is the module's guarantees: no client send
reaches the connection once the next one is being opened; exactly one way to end, that of
the events seen (client close over a move over a loss); at most one timer, none left after
the finish; one retirement, only once everything that arrived was read; final states stay;
an opening ahead that failed in a way a later try may not, before the goAway's deadline,
leaves the socket serving (and the move to be tried again), and only a server that refused
the resume beside it stops opening ahead;
a move asked for is carried out by the first move that begins, noted once, just before it.
"""

from __future__ import annotations

from collections import Counter

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from adk_live_resume.rules.connection_state import (
    FINAL,
    MOVED,
    Action,
    Asked,
    CancelTimer,
    CloseSocket,
    ConnectionState,
    DialAhead,
    NoteGoAway,
    NoteMove,
    OpenAhead,
    ProveHealthy,
    Retire,
    ServeOn,
    StartTimer,
    State,
    StopOpeningAhead,
)

TIMES_LEFT = st.sampled_from([None, 0.0, 3.0, 30.0])


def _ending(state: State) -> str:
    """The way a connection in ``state`` ends (as :func:`classify_end` reads it)."""
    if state is State.CLIENT_CLOSED:
        return "client closed"
    if state in MOVED:
        return "moved"
    if state is State.LOST:
        return "lost"
    return "not ended"


class ConnectionStateMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.core = ConnectionState()
        self.now = 0.0
        self.actions: Counter[type] = Counter()
        #: The reference, from the events fed and the actions carried out.
        self.timer_armed = False
        self.ahead_opening = False  # an OpenAhead started (the next connection is opening)
        self.next_reported = False
        self.moved = False
        self.client_closed = False
        self.lost = False
        self.read = 0
        self.arrived: int | None = None
        self.turn_open = False
        self.finished = False
        self.sends_stopped = False
        self.final: State | None = None
        self.start_ahead = True
        self.go_away_seen = False
        #: Failed openings ahead after which the socket served on (ServeOn), and whether the
        #: move's next try is still to come.
        self.serve_ons = 0
        self.retry_pending = False
        self.asked = False

    # -- the shell ---------------------------------------------------------------------------

    def carry_out(self, actions: list[Action]) -> list[Action]:
        done: list[Action] = []
        for number, action in enumerate(actions):
            done.append(action)
            self.actions[type(action)] += 1
            if isinstance(action, StartTimer):
                assert not self.timer_armed, "a second timer while one runs"
                assert not self.finished, "a timer started after the finish"
                self.timer_armed = True
            elif isinstance(action, CancelTimer):
                assert self.timer_armed, "a timer cancelled that does not run"
                self.timer_armed = False
            elif isinstance(action, NoteMove):
                assert self.asked, "a move noted that nobody asked for"
                assert actions[number + 1 :][:1] == [OpenAhead()], "noted, not just before"
                self.asked = False
            elif isinstance(action, OpenAhead):
                assert not self.asked, "a move began without carrying out the one asked for"
                assert not self.moved, "a second move"
                assert not self.client_closed, "a move after the client closed"
                self.moved = True
                done += self.carry_out(self.core.ahead_started(self.start_ahead))
                self.ahead_opening = self.start_ahead
            elif isinstance(action, DialAhead):
                assert not self.moved, "dialed ahead for a move under way"
            elif isinstance(action, Retire):
                assert self.next_reported and self.ahead_opening
                assert not self.turn_open, "retired while an answer was in flight"
                assert self.arrived is None or self.read >= self.arrived, "retired unread"
        return done

    # -- the events ------------------------------------------------------------------------

    @rule(seconds=st.sampled_from([0.0, 0.5, 10.0]))
    def time_passes(self, seconds: float) -> None:
        self.now += seconds

    @rule(turn_open=st.booleans())
    def message_read(self, turn_open: bool) -> None:
        first = self.read == 0
        self.read += 1
        self.turn_open = turn_open
        done = self.carry_out(self.core.message_read(turn_open=turn_open))
        assert (ProveHealthy() in done) == first

    @precondition(lambda self: self.arrived is None and self.read == 0)
    @rule()
    def count_frames(self) -> None:
        self.core.count_frames()
        self.arrived = self.read

    @rule()
    def frame_arrived(self) -> None:
        if self.arrived is not None:
            self.arrived += 1
        self.core.frame_arrived()

    @rule(time_left=TIMES_LEFT, safe=st.booleans())
    def go_away_frame(self, time_left: float | None, safe: bool) -> None:
        self.carry_out(self.core.go_away_frame(time_left, now=self.now, margin=5.0, safe=safe))

    @rule(time_left=TIMES_LEFT, safe=st.booleans())
    def go_away_read(self, time_left: float | None, safe: bool) -> None:
        first = not self.go_away_seen
        self.go_away_seen = True
        could_move = first and not self.moved and not self.client_closed
        done = self.carry_out(
            self.core.go_away_read(time_left, now=self.now, margin=5.0, safe=safe)
        )
        assert (OpenAhead() in done) == (safe and could_move), "a goAway read at a safe point"
        if first and not self.finished:
            assert self.core.deadline is not None, "a goAway without a deadline"

    @rule(safe=st.booleans())
    def handle_changed(self, safe: bool) -> None:
        pending = self.core.move_pending
        done = self.carry_out(self.core.handle_changed(safe=safe))
        could_move = pending and not self.client_closed
        assert (OpenAhead() in done) == (could_move and safe), "a move at the wrong handle"

    @precondition(lambda self: self.timer_armed)
    @rule()
    def timer_fires(self) -> None:
        self.timer_armed = False
        could_move = not self.moved and not self.client_closed
        done = self.carry_out(self.core.timer_fired())
        if could_move:
            assert OpenAhead() in done, "the deadline did not move the session"

    @rule(start_ahead=st.booleans())
    def move(self, start_ahead: bool) -> None:
        self.start_ahead = start_ahead
        could_move = not self.moved and not self.client_closed
        done = self.carry_out(self.core.move("ADK reconnect request"))
        assert (OpenAhead() in done) == could_move

    @rule(safe=st.booleans(), fresh=st.booleans())
    def move_asked(self, safe: bool, fresh: bool) -> None:
        takes = not (self.moved or self.asked or self.finished or self.client_closed or self.lost)
        assert self.core.takes_asks == takes
        if takes:
            self.asked = True
        done = self.carry_out(self.core.move_asked(Asked("why", "requested", fresh), safe=safe))
        assert (OpenAhead() in done) == (takes and safe), "an asked move at the wrong time"
        if takes and safe:
            assert done[:2] == [NoteMove(Asked("why", "requested", fresh)), OpenAhead()]

    @rule()
    def safe_point(self) -> None:
        could_move = self.asked and not self.moved and not self.client_closed
        done = self.carry_out(self.core.safe_point())
        assert (OpenAhead() in done) == could_move

    @precondition(lambda self: self.ahead_opening and not self.next_reported)
    @rule(ok=st.booleans(), failure=st.sampled_from(["refused", "transient", "other"]))
    def next_opened(self, ok: bool, failure: str) -> None:
        self.next_reported = True
        refused = not ok and failure == "refused"
        retry_in = 1.0 if not ok and failure == "transient" else None
        could_serve_on = (
            retry_in is not None
            and self.core.state is State.MOVING
            and self.actions[CloseSocket] == 0
            and not self.lost
            and (self.core.deadline is None or self.timer_armed)
        )
        done = self.carry_out(self.core.next_opened(ok=ok, refused=refused, retry_in=retry_in))
        assert (StopOpeningAhead() in done) == refused
        if could_serve_on:
            assert done == [ServeOn(1.0)], "an open socket before its deadline serves on"
            self.moved = self.ahead_opening = self.next_reported = False
            self.serve_ons += 1
            self.retry_pending = True
            assert not self.core.holds_sends or self.sends_stopped
        elif not ok and not self.finished:
            assert self.actions[CloseSocket] == 1, "a failed opening ahead left the socket open"
        if ok and Retire() not in done and self.core.state is State.DRAINING:
            assert self.turn_open or (self.arrived is not None and self.read < self.arrived)

    @rule(safe=st.booleans())
    def retry_move(self, safe: bool) -> None:
        """The wait after a failed opening ahead is over (or a stray call: nothing happens)."""
        could_move = (
            self.retry_pending
            and not self.moved
            and not self.client_closed
            and not self.finished
            and not self.lost
            and self.core.state in (State.CONNECTED, State.HEALTHY)
        )
        pending, self.retry_pending = self.retry_pending, False
        done = self.carry_out(self.core.retry_move(safe=safe))
        assert (OpenAhead() in done) == (could_move and safe)
        if pending and could_move and not safe:
            assert self.core.move_pending, "the move waits for the next safe point"

    @rule()
    def receive_failed(self) -> None:
        self.lost = True
        self.carry_out(self.core.receive_failed(now=self.now))
        assert self.core.lost_at is not None

    @rule(code=st.sampled_from([1000, 1006, 1011]))
    def close_frame(self, code: int) -> None:
        if not (self.moved or self.client_closed):
            self.lost = True
        self.carry_out(self.core.close_frame(code, now=self.now))

    @rule()
    def socket_closed(self) -> None:
        if not (self.moved or self.client_closed):
            self.lost = True
        self.core.socket_closed(now=self.now)

    @rule(abort=st.booleans())
    def send_failed(self, abort: bool) -> None:
        self.lost = True
        self.carry_out(self.core.send_failed(ConnectionError("gone"), abort=abort, now=self.now))
        assert self.actions[CloseSocket] == 1, "a failed send left the socket open"

    @rule()
    def client_closes(self) -> None:
        if self.core.state is not State.RETIRED:
            self.client_closed = True
        self.core.client_closed()

    @rule()
    def stop_sends(self) -> None:
        self.sends_stopped = True
        self.core.stop_sends()

    @precondition(lambda self: not self.finished)
    @rule(graceful=st.booleans())
    def finish(self, graceful: bool) -> None:
        self.carry_out(self.core.finish(graceful=graceful))
        self.finished = True
        assert not self.timer_armed, "a timer left after the end"

    # -- the invariants --------------------------------------------------------------------

    @invariant()
    def no_send_reaches_a_connection_being_replaced(self) -> None:
        assert self.core.holds_sends == (self.ahead_opening or self.sends_stopped)

    @invariant()
    def exactly_one_ending_that_of_the_events(self) -> None:
        if self.client_closed:
            expected = "client closed"
        elif self.moved:
            expected = "moved"
        elif self.lost:
            expected = "lost"
        else:
            expected = "not ended"
        assert _ending(self.core.state) == expected, (self.core.state, expected)

    @invariant()
    def lost_only_by_a_loss_not_ours(self) -> None:
        assert (self.core.lost_at is not None) == self.lost

    @invariant()
    def a_move_that_could_not_open_ahead_closes_first(self) -> None:
        if self.moved and not self.ahead_opening and not self.client_closed:
            assert self.core.state is State.CLOSE_FIRST

    @invariant()
    def one_of_each(self) -> None:
        for kind in (StartTimer, NoteGoAway, Retire, CloseSocket, ProveHealthy):
            assert self.actions[kind] <= 1, kind
        assert self.actions[OpenAhead] <= 1 + self.serve_ons, "a second move at once"
        # (an asked move that could not open ahead serves on: a move asked again meanwhile
        # begins on its own, and is told as its own)
        assert self.actions[NoteMove] <= 1 + self.serve_ons, "an asked move told twice"
        assert (self.actions[Retire] == 1) == (self.core.state is State.RETIRED)

    @invariant()
    def final_states_stay(self) -> None:
        if self.final is not None:
            assert self.core.state is self.final
        elif self.core.state in FINAL:
            self.final = self.core.state

    @invariant()
    def deadline_and_timer_agree(self) -> None:
        assert self.core.timer_running == self.timer_armed
        assert (self.core.deadline is not None) == (self.actions[StartTimer] == 1)

    @invariant()
    def an_asked_move_waits_in_the_state_until_one_begins(self) -> None:
        assert (self.core.asked is not None) == self.asked

    @invariant()
    def healthy_once_read(self) -> None:
        assert self.core.proved == (self.read > 0)
        if self.read and not (self.moved or self.client_closed or self.lost):
            assert self.core.state is State.HEALTHY


TestConnectionState = ConnectionStateMachine.TestCase
