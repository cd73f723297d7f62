"""The stall rule and the stall ending of a connection, without sockets (the ladder that
follows a stall is next_step's: tests/unit/rules/test_next_step.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adk_live_resume.rules.connection_state import CloseSocket, ConnectionState, State
from adk_live_resume.rules.stall_rule import (
    EXCUSE_POLL,
    Excuses,
    StallRule,
    degenerate,
    give_up_message,
)

NONE = Excuses()


def ready(timeout: float = 10.0, turns: int = 3) -> StallRule:
    rule = StallRule(timeout, turns)
    rule.setup_completed(0.0)
    return rule


def test_a_turn_without_an_answer_is_a_silence_at_the_timeout_not_before() -> None:
    rule = ready()
    rule.user_turn("a typed turn", 1.0)
    assert rule.next_check(1.0) == 10.0
    assert rule.check(10.9, NONE) is None
    stall = rule.check(11.0, NONE)
    assert stall is not None and stall.kind == "silence"
    assert stall.seen == "no answer 10.0 s after a typed turn"
    assert rule.check(30.0, NONE) is None  # one per connection


def test_an_answer_ends_the_wait() -> None:
    rule = ready()
    rule.user_turn("a typed turn", 0.0)
    rule.answered()
    assert rule.check(100.0, NONE) is None and rule.next_check(100.0) is None


def test_the_oldest_unanswered_turn_counts() -> None:
    rule = ready()
    rule.user_turn("a typed turn", 0.0)
    rule.user_turn("a function response", 5.0)
    stall = rule.check(10.0, NONE)
    assert stall is not None and "typed turn" in stall.seen


def test_a_turn_sent_before_the_answer_to_an_older_one_is_waited_for_from_a_cut() -> None:
    # A barge-in typed before the client read the first words of the answer it cuts: those
    # words answer the older turn; the server's interrupted says it took the later one in.
    rule = ready(1.0)
    rule.user_turn("a typed turn", 0.0)
    rule.user_turn("a later typed turn", 0.5)
    rule.answered()
    assert rule.idle and rule.check(5.0, NONE) is None
    rule.cut_after_output(6.0)
    assert rule.next_check(6.0) == 1.0 and rule.check(6.9, NONE) is None
    stall = rule.check(7.0, NONE)
    assert stall is not None and stall.seen == "no answer 1.0 s after a later typed turn"


def test_a_later_turn_is_not_waited_for_after_a_turn_ended_or_a_cut_before_output() -> None:
    for claim in ("turn_ended", "cut_before_output"):
        rule = ready(1.0)
        rule.user_turn("a typed turn", 0.0)
        rule.user_turn("a later typed turn", 0.5)
        if claim == "turn_ended":
            rule.answered()
            rule.turn_ended("")  # (the model may have answered both in this turn)
        else:
            rule.cut_before_output()  # (the wait that goes on is for both)
            rule.answered()
        rule.cut_after_output(2.0)
        assert rule.idle and rule.check(10.0, NONE) is None, claim


def test_a_cut_after_output_starts_no_wait_without_a_later_turn() -> None:
    rule = ready(1.0)
    rule.user_turn("a typed turn", 0.0)
    rule.answered()
    rule.cut_after_output(1.0)
    assert rule.idle and rule.check(10.0, NONE) is None
    rule.user_turn("a typed turn", 11.0)  # a wait of its own, begun at its sending
    rule.user_turn("a later typed turn", 11.5)
    rule.cut_after_output(12.0)  # (a turn waits: it goes on)
    stall = rule.check(12.0, NONE)
    assert stall is not None and stall.seen == "no answer 1.0 s after a typed turn"


def test_nothing_before_the_setup_completed() -> None:
    rule = StallRule(1.0, 1)
    rule.user_turn("a typed turn", 0.0)
    rule.turn_ended("turnComplete with no content")
    assert rule.check(50.0, NONE) is None
    rule.setup_completed(50.0)
    stall = rule.check(50.0, NONE)
    assert stall is not None and stall.kind == "degenerate"


def test_an_excuse_holds_the_wait_and_it_starts_over_after() -> None:
    rule = ready(10.0)
    rule.user_turn("a typed turn", 0.0)
    assert rule.check(20.0, Excuses(tool_running=True)) is None
    assert rule.next_check(20.0) == EXCUSE_POLL
    assert rule.check(29.0, NONE) is None  # 9 s since the excuse was last seen
    assert rule.check(30.0, NONE) is not None


SPEAKING = Excuses(user_speaking=True)


def test_the_user_speaking_starts_the_wait_over() -> None:
    rule = ready(3.0)
    rule.user_turn("an utterance the server transcribed", 0.0)
    assert rule.check(2.0, SPEAKING) is None
    assert rule.check(4.5, NONE) is None  # 2.5 s since the user was last heard
    assert rule.check(5.0, NONE) is not None


def test_after_a_cut_that_said_nothing_the_user_speaking_only_pauses_the_wait() -> None:
    """The server cut a generation that had said nothing (``interrupted`` as the user spoke
    again): the quiet stretches before and after the user spoke add up."""
    rule = ready(3.0)
    rule.user_turn("an utterance the server transcribed", 0.0)
    assert rule.check(1.0, NONE) is None
    assert rule.check(2.0, SPEAKING) is None  # 2 s waited before the user spoke again
    rule.cut_before_output()  # (the server's cut arrives just after their first chunk)
    assert rule.check(4.0, SPEAKING) is None
    assert rule.next_check(4.0) == EXCUSE_POLL
    assert rule.check(4.5, NONE) is None  # 2 + 0.5
    assert rule.next_check(4.5) == pytest.approx(0.5)
    stall = rule.check(5.0, NONE)
    assert stall is not None and stall.seen == (
        "no answer 3.0 s after an utterance the server transcribed"
    )


def test_a_paused_wait_starts_over_at_an_answer_or_a_sign_of_work() -> None:
    answered = ready(3.0)
    answered.user_turn("an utterance the server transcribed", 0.0)
    answered.cut_before_output()
    assert answered.check(2.5, SPEAKING) is None
    answered.answered()
    answered.user_turn("an utterance the server transcribed", 3.0)
    assert answered.check(3.5, SPEAKING) is None
    assert answered.check(6.0, NONE) is None  # a new wait: the cut was forgotten
    working = ready(3.0)
    working.user_turn("a typed turn", 0.0)
    working.cut_before_output()
    assert working.check(2.5, Excuses(user_speaking=True, tool_running=True)) is None
    assert working.check(5.0, NONE) is None  # the tool's run started it over
    assert working.check(5.5, NONE) is not None


def test_a_cut_seen_before_the_user_speaking_counts_the_same() -> None:
    rule = ready(3.0)
    rule.user_turn("an utterance the server transcribed", 0.0)
    rule.cut_before_output()
    assert rule.check(2.0, SPEAKING) is None
    assert rule.check(3.5, SPEAKING) is None
    assert rule.check(4.0, NONE) is None  # 2 + 0.5
    assert rule.check(4.5, NONE) is not None


def test_a_cut_with_nothing_waiting_is_nothing() -> None:
    rule = ready(3.0)
    rule.cut_before_output()
    rule.user_turn("an utterance the server transcribed", 10.0)
    assert rule.check(11.0, SPEAKING) is None
    assert rule.check(13.5, NONE) is None  # starts over after the user spoke: no cut on it


def test_messages_arrived_but_not_read_yet_are_no_silence() -> None:
    """ADK's reading is behind (a slow session service holds its receive step): the server
    did send something, so the wait starts over once the reader caught up."""
    rule = ready(2.0)
    rule.user_turn("an utterance the server transcribed", 0.0)
    behind = Excuses(reader_behind=True)
    assert behind.why() == "messages arrived that are not read yet"
    assert rule.check(2.5, behind) is None
    assert rule.check(4.0, NONE) is None  # 1.5 s since the reader was last behind
    assert rule.check(4.5, NONE) is not None


def test_off_switches() -> None:
    silent = ready(0.0, 3)
    silent.user_turn("a typed turn", 0.0)
    assert silent.check(1e6, NONE) is None and silent.next_check(0.0) is None
    lenient = ready(10.0, 0)
    for _ in range(50):
        lenient.turn_ended("turnComplete with no content")
    assert lenient.check(1.0, NONE) is None


def test_degenerate_turns_in_a_row_and_content_resets_the_count() -> None:
    rule = ready(0.0, 2)
    rule.turn_ended("turnComplete with no content")
    rule.turn_ended("")
    rule.turn_ended("turnCompleteReason RESPONSE_REJECTED")
    assert rule.check(1.0, NONE) is None
    rule.turn_ended("turnCompleteReason RESPONSE_REJECTED")
    stall = rule.check(1.0, NONE)
    assert stall is not None and stall.kind == "degenerate"
    assert stall.seen == (
        "2 turns in a row answered with nothing (last: turnCompleteReason RESPONSE_REJECTED)"
    )


def test_what_makes_a_turn_degenerate() -> None:
    plain = {"rejected": False, "content": False, "voiced_audio": False, "quiet_audio": False}
    assert degenerate(**plain) == "turnComplete with no content"
    assert degenerate(**{**plain, "quiet_audio": True}) == "answer audio near silence"
    assert degenerate(**{**plain, "quiet_audio": True, "voiced_audio": True}) == ""
    assert degenerate(**{**plain, "content": True}) == ""
    assert "RESPONSE_REJECTED" in degenerate(**{**plain, "rejected": True, "content": True})


excuses = st.builds(Excuses, st.booleans(), st.booleans(), st.booleans(), st.booleans())
events = st.lists(
    st.tuples(
        st.floats(0.0, 5.0),
        st.sampled_from(["turn", "answer", "check", "degenerate", "content", "cut"]),
        excuses,
    ),
    max_size=40,
)


@given(events, st.floats(0.1, 10.0), st.integers(0, 4))
def test_never_a_stall_while_excused_nor_a_silence_before_its_time(
    steps: list[tuple[float, str, Excuses]], timeout: float, turns: int
) -> None:
    rule = ready(timeout, turns)
    now = 0.0
    since: float | None = None  # the wait's start, as the guarantee defines it
    start = 0.0  # when the oldest unanswered turn was sent
    cut = False  # a cut that said nothing came while it waited: the user speaking pauses
    reported = 0
    for step, kind, excused in steps:
        now += step
        if kind == "turn":
            rule.user_turn("a typed turn", now)
            if since is None:
                since = start = now
                cut = False
        elif kind == "answer":
            rule.answered()
            since = None
        elif kind == "cut":
            rule.cut_before_output()
            cut = cut or since is not None
        elif kind == "degenerate":
            rule.turn_ended("turnComplete with no content")
        elif kind == "content":
            rule.turn_ended("")
        else:
            stall = rule.check(now, excused)
            if excused.why() is not None and since is not None:
                since = max(since, now)
            if stall is None:
                continue
            reported += 1
            if stall.kind == "silence":
                assert excused.why() is None
                assert since is not None and now - start >= timeout
                assert cut or now - since >= timeout
    assert reported <= 1


@given(events, st.floats(0.1, 10.0), st.integers(0, 4))
def test_an_idle_rule_finds_nothing_and_needs_no_timer(
    steps: list[tuple[float, str, Excuses]], timeout: float, turns: int
) -> None:
    """What lets the watch skip the rule on every message of an answer: while ``idle``,
    ``check`` finds no stall and changes nothing, and ``next_check`` asks for no timer."""
    rule = ready(timeout, turns)
    now = 0.0
    for step, kind, excused in steps:
        now += step
        if kind == "turn":
            rule.user_turn("a typed turn", now)
        elif kind == "answer":
            rule.answered()
        elif kind == "cut":
            rule.cut_before_output()
        elif kind == "degenerate":
            rule.turn_ended("turnComplete with no content")
        elif kind == "content":
            rule.turn_ended("")
        if rule.idle:
            before = dict(vars(rule))
            assert rule.next_check(now) is None
            assert rule.check(now, excused) is None
            assert vars(rule) == before
        else:
            rule.check(now, excused)


def test_the_give_up_message_says_what_was_seen_and_what_to_check() -> None:
    message = give_up_message(
        ["no answer 1.0 s after a typed turn", "x", "y"], ["resume", "fresh_start"]
    )
    first = message.encode()[:120].decode()
    assert "stalled 3 times; a resume and a fresh session brought no answer" in first
    assert "Check the service status and quota" in first
    assert "1: no answer 1.0 s after a typed turn" in message
    assert "stall_timeout" in message and "RESPONSE_REJECTED" in message


def test_the_give_up_message_names_only_the_recoveries_tried() -> None:
    """Without a handle (a stall on the first utterance), only a fresh session was tried (the
    ladder itself is next_step's: tests/unit/rules/test_next_step.py)."""
    message = give_up_message(["no answer 3.0 s after an utterance"] * 2, ["fresh_start"])
    assert message.startswith("live session stalled twice; a fresh session brought no answer.")
    assert "resume" not in message.split(". Seen:")[0]


def test_a_stall_closes_an_open_connection_once_and_it_ends_as_stalled() -> None:
    state = ConnectionState()
    assert state.stalled(now=1.0) == [CloseSocket(False)]
    assert state.state is State.STALLED and state.lost_at == 1.0 and state.holds_sends
    assert state.stalled(now=2.0) == [] and state.move("goAway deadline") == []
    assert state.close_frame(1000, now=3.0) == [] and state.state is State.STALLED


def test_no_stall_ending_once_a_move_began_or_the_client_closed() -> None:
    moving = ConnectionState()
    moving.message_read(turn_open=False)
    moving.move("goAway at a safe point")
    assert moving.stalled(now=1.0) == [] and moving.state is State.MOVING
    closed = ConnectionState()
    closed.client_closed()
    assert closed.stalled(now=1.0) == [] and closed.state is State.CLIENT_CLOSED


def test_the_same_words_to_another_turn_are_degenerate() -> None:
    assert (
        degenerate(
            rejected=False, content=True, voiced_audio=False, quiet_audio=False, repeated=True
        )
        == "the same answer as to the turn before"
    )
    assert degenerate(rejected=False, content=True, voiced_audio=False, quiet_audio=False) == ""


def test_a_nudged_silence_waits_again_and_may_be_reported_once_more() -> None:
    rule = StallRule(stall_timeout=2.0, degenerate_turns=0)
    rule.setup_completed(0.0)
    rule.user_turn("typed turn", 0.0)
    assert rule.check(2.0, Excuses()) is not None
    assert rule.check(9.0, Excuses()) is None, "one per connection"
    rule.nudged(10.0)
    assert rule.check(11.0, Excuses()) is None and rule.next_check(11.0) == 1.0
    stall = rule.check(12.0, Excuses())
    assert stall is not None and "nudge" in stall.seen
    rule.answered()
    assert rule.check(20.0, Excuses()) is None
