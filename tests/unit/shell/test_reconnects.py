"""What a run remembers of its reconnects (reconnects.Reconnects): pure, no sockets, no clock."""

from __future__ import annotations

from adk_live_resume.conversation.connection_figures import Figures
from adk_live_resume.conversation.token_usage import TokenUsage
from adk_live_resume.observe.connection_end import ConnectionReport
from adk_live_resume.rules.errors import Drop, ReconnectFailedError
from adk_live_resume.rules.next_step import FreshStart, GiveUp, Resume, RunView, next_step
from adk_live_resume.rules.outage import AttemptEnd
from adk_live_resume.rules.policy import ResumePolicy
from adk_live_resume.shell.reconnects import ReconnectRecord, Reconnects, Why

STALL = AttemptEnd(
    "stall", at=1.0, what="no answer 15.0 s after a typed turn", silence=True, answered=True
)
REFUSED = AttemptEnd(
    "drop", at=2.0, drop=Drop("closed", 1008, "Invalid handle"), at_connect=True, resumed=True
)


def test_a_stall_recovery_whose_first_attempt_fails_is_still_a_stall_recovery() -> None:
    reconnects = Reconnects(ResumePolicy())
    view = RunView(ResumePolicy(), handle=True)
    reconnects.lost(1.0)
    step = next_step(STALL, reconnects.outage, view, now=1.0)
    assert isinstance(step, Resume)
    reconnects.decided(STALL, step, 1.0)
    # the resume is refused at its setup: the recovery goes on with a fresh start
    refused = next_step(REFUSED, reconnects.outage, view, now=2.0)
    assert isinstance(refused, FreshStart)
    reconnects.decided(REFUSED, refused, 2.0)
    record = reconnects.record
    assert record is not None
    assert (record.why, record.detail) == (Why.STALL, STALL.what)
    assert record.cause == f"stall: {STALL.what}" and reconnects.lost_at == 1.0
    assert record.failure == "refused_handle" and reconnects.attempt == 2
    assert record.reason(state_restored=False) == "stall"
    assert (reconnects.stalls, reconnects.stall_fresh_starts) == (1, 0)
    assert reconnects.last_cause == "1008 Invalid handle"
    reconnects.reported()  # the fresh session is up
    assert reconnects.record is None and reconnects.lost_at is None


def test_a_move_is_reported_as_a_go_away_and_counted_against_the_rate() -> None:
    reconnects = Reconnects(ResumePolicy(max_reconnects_per_minute=1))
    moved = AttemptEnd("moved", at=5.0, what="goAway at a safe point", answered=True)
    step = next_step(moved, None, RunView(ResumePolicy(), handle=True), now=5.0)
    reconnects.decided(moved, step, 5.0)
    record = reconnects.record
    assert record is not None and reconnects.attempt == 1
    assert (record.why, record.cause) == (Why.GO_AWAY, "goAway at a safe point")
    assert record.reason(state_restored=True) == "go_away"
    assert record.reason(state_restored=False) == "restart"
    assert not reconnects.has_room(6.0) and reconnects.has_room(65.0)


def test_a_move_the_app_asked_for_is_reported_as_requested_with_its_reason() -> None:
    reconnects = Reconnects(ResumePolicy())
    usage = TokenUsage(prompt_tokens=10, response_tokens=4, total_tokens=14, reports=1)
    left = ConnectionReport(
        1, moved_why="the model keeps refusing", move_origin="requested", figures=Figures(usage)
    )
    moved = AttemptEnd("moved", at=5.0, what="the model keeps refusing", answered=True)
    step = next_step(moved, None, RunView(ResumePolicy(), handle=True), now=5.0)
    reconnects.decided(moved, step, 5.0, left)
    record = reconnects.record
    assert record == ReconnectRecord(Why.REQUESTED, "the model keeps refusing", "", "", left)
    # whether resumed or started fresh, it was asked for: the cause is the app's reason
    assert record.reason(state_restored=True) == record.reason(state_restored=False)
    assert record.reason(state_restored=True) == "requested"
    assert record.left is not None and record.left.figures.usage == usage


def test_the_runs_own_move_to_a_fresh_session_is_a_restart() -> None:
    reconnects = Reconnects(ResumePolicy())
    left = ConnectionReport(1, moved_why="the context was lost on resume", move_origin="run")
    moved = AttemptEnd("moved", at=5.0, what="the context was lost on resume", answered=True)
    step = next_step(moved, None, RunView(ResumePolicy(), handle=False), now=5.0)
    reconnects.decided(moved, step, 5.0, left)
    record = reconnects.record
    assert record is not None and record.why is Why.RUN
    assert record.reason(state_restored=False) == "restart"
    assert record.cause == "the context was lost on resume"


def test_a_give_up_changes_only_the_last_cause() -> None:
    reconnects = Reconnects(ResumePolicy())
    error = ReconnectFailedError("gave up", attempts=1, elapsed=0.0)
    reconnects.decided(STALL, GiveUp(error), 1.0)
    assert reconnects.record is None and reconnects.outage is None
    assert reconnects.stalls == 1 and reconnects.last_cause.startswith("stall: ")
    assert reconnects.has_room(1.0)
