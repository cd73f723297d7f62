"""What follows a lost connection (retry_plan.Reconnects): pure, no sockets, no clock."""

from __future__ import annotations

import pytest

from adk_live_resume.connection_end import End, Outcome
from adk_live_resume.errors import (
    Drop,
    DropKind,
    ReconnectFailedError,
    SessionLimitError,
    SessionNotResumableError,
)
from adk_live_resume.handles import ResumptionState
from adk_live_resume.policy import ResumePolicy
from adk_live_resume.retry_plan import Reconnects

HANDLE = "handle-abcdefghijklmnopqrstuvwxyz"


def _outcome(code: int | None, *, at_connect: bool, kind: DropKind = "closed") -> Outcome:
    error = RuntimeError(f"closed {code}")
    drop = Drop(kind, code, "test")
    return Outcome(End.DROPPED, drop=drop, error=error, at_connect=at_connect)


def _after(
    reconnects: Reconnects,
    outcome: Outcome,
    handles: ResumptionState,
    *,
    now: float = 0.0,
    limited: bool = False,
) -> tuple[float, list[str]]:
    fresh: list[str] = []

    def start_fresh() -> None:
        fresh.append("fresh")
        handles.forget()

    wait = reconnects.after_drop(
        outcome, now, handles=handles, session_limited=lambda: limited, start_fresh=start_fresh
    )
    return wait, fresh


def test_a_retryable_close_is_retried_at_once_then_the_outage_budget_ends_it() -> None:
    reconnects = Reconnects(ResumePolicy(max_attempts=2, first_attempt_jitter=0.0))
    handles = ResumptionState.starting_with(HANDLE)
    wait, fresh = _after(reconnects, _outcome(1011, at_connect=False), handles)
    assert (wait, fresh) == (0.0, [])
    assert reconnects.reason == "drop" and reconnects.attempt == 1
    _after(reconnects, _outcome(1011, at_connect=True), handles, now=0.1)
    outcome = _outcome(1011, at_connect=True)
    with pytest.raises(ReconnectFailedError, match="2 connection attempts failed") as raised:
        _after(reconnects, outcome, handles, now=0.2)
    assert raised.value.__cause__ is outcome.error
    assert HANDLE not in str(raised.value)
    reconnects.healthy()
    assert reconnects.outage is None and reconnects.attempt == 1


def test_a_refused_resume_starts_fresh_when_the_policy_says_so() -> None:
    handles = ResumptionState.starting_with(HANDLE)
    reconnects = Reconnects(ResumePolicy(fresh_start_when_handle_dead=True))
    wait, fresh = _after(reconnects, _outcome(1008, at_connect=True), handles)
    assert fresh == ["fresh"] and handles.handle is None and wait == 0.0


def test_a_refused_resume_ends_the_run_when_the_policy_does_not_start_fresh() -> None:
    handles = ResumptionState.starting_with(HANDLE)
    reconnects = Reconnects(ResumePolicy(fresh_start_when_handle_dead=False))
    with pytest.raises(SessionNotResumableError, match="while resuming with a handle"):
        _after(reconnects, _outcome(1008, at_connect=True), handles)
    assert handles.handle == HANDLE


def test_a_fatal_close_mid_session_is_not_a_refused_resume() -> None:
    handles = ResumptionState.starting_with(HANDLE)
    reconnects = Reconnects(ResumePolicy(fresh_start_when_handle_dead=True))
    with pytest.raises(SessionNotResumableError) as raised:
        _after(reconnects, _outcome(1008, at_connect=False), handles)
    assert "while resuming" not in str(raised.value) and raised.value.code == 1008


def test_a_refused_audio_session_past_its_limit_says_how_to_go_longer() -> None:
    handles = ResumptionState.starting_with(HANDLE)
    reconnects = Reconnects(ResumePolicy())
    with pytest.raises(SessionLimitError, match="sliding_window=True"):
        _after(reconnects, _outcome(1007, at_connect=True), handles, limited=True)


def _closed(code: int) -> Drop:
    return Drop("closed", code, "test")


def test_attempts_at_once_only_when_nothing_stands_in_the_way() -> None:
    policy = ResumePolicy(max_reconnects_per_minute=1)
    reconnects = Reconnects(policy)
    assert reconnects.at_once(_closed(1011), closing=False, close_requested=False, now=0.0)
    assert not reconnects.at_once(_closed(1011), closing=True, close_requested=False, now=0.0)
    assert not reconnects.at_once(_closed(1011), closing=False, close_requested=True, now=0.0)
    assert not reconnects.at_once(_closed(1008), closing=False, close_requested=False, now=0.0)
    jittered = Reconnects(policy.replace(first_attempt_jitter=0.5))
    assert not jittered.at_once(_closed(1011), closing=False, close_requested=False, now=0.0)
    reconnects.count(0.0, None)  # the rate cap is full now
    assert not reconnects.at_once(_closed(1011), closing=False, close_requested=False, now=1.0)
    in_outage = Reconnects(ResumePolicy())  # the second attempt of an outage waits
    _after(in_outage, _outcome(1011, at_connect=False), ResumptionState())
    assert not in_outage.at_once(_closed(1011), closing=False, close_requested=False, now=0.1)


def test_the_reconnect_rate_cap_ends_a_run_that_keeps_dropping() -> None:
    reconnects = Reconnects(ResumePolicy(max_reconnects_per_minute=2))
    reconnects.cause = "1011 test"
    reconnects.count(0.0, None)
    reconnects.count(1.0, None)
    error = RuntimeError("last")
    with pytest.raises(ReconnectFailedError, match="more than 2 reconnects") as raised:
        reconnects.count(2.0, error)
    assert raised.value.__cause__ is error and "1011 test" in str(raised.value)
    reconnects.count(61.0, None)  # the window moved on


def test_an_outage_keeps_its_first_sign_and_a_report_clears_it() -> None:
    reconnects = Reconnects(ResumePolicy())
    reconnects.lost(5.0)
    reconnects.lost(7.0)  # the same outage, seen again: its start does not move
    assert reconnects.lost_at == 5.0
    reconnects.moving("goAway")
    assert (reconnects.reason, reconnects.cause) == ("go_away", "goAway")
    reconnects.reported()
    assert (reconnects.reason, reconnects.lost_at) == (None, None)
    reconnects.lost(9.0)  # the next outage starts anew
    assert reconnects.lost_at == 9.0
