"""What follows a connection's end (next_step.next_step), class by class: pure, table-driven.

Each row plays a run's ends in order (each decided with the outage the step before left) and
names the steps taken: ``resume``, ``fresh`` or the error the run gave up with.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import pytest

from adk_live_resume.rules.errors import (
    Drop,
    IdleCloseError,
    ModelRefusedError,
    PoisonedSessionError,
    QuotaExceededError,
    ReconnectFailedError,
    SessionLimitError,
    SessionNotResumableError,
    SessionStalledError,
)
from adk_live_resume.rules.next_step import FreshStart, GiveUp, Resume, RunView, Step, next_step
from adk_live_resume.rules.outage import AttemptEnd, Outage
from adk_live_resume.rules.policy import ResumePolicy
from adk_live_resume.rules.retry_decision import RetryHook
from adk_live_resume.testing.faults import INTERNAL_ERROR_REASON, QUOTA_REASON

MODEL = "gemini-live-fake"
LONG_MODEL = "gemini-2.5-flash-native-audio-preview-09-2025"
INTERNAL = Drop("closed", 1011, INTERNAL_ERROR_REASON)
QUOTA = Drop("closed", 1011, QUOTA_REASON)
SESSIONS = Drop("closed", 1011, "RESOURCE_EXHAUSTED: Maximum concurrent sessions")
IDLE = Drop("closed", 1008, "")
REFUSED = Drop("closed", 1008, "Invalid resumption handle")
ABORTED = Drop("closed", 1006, "abnormal closure (no close frame)")


def answered(drop: Drop) -> AttemptEnd:
    """A connection that served (the model answered) and then was lost with ``drop``."""
    return AttemptEnd("drop", at=0.0, drop=drop, answered=True, connected_for=20.0)


def resumed(drop: Drop, *, at_connect: bool = False, after: float = 0.8) -> AttemptEnd:
    """A resume that died with ``drop`` before any answer (``after`` s after its setup)."""
    return AttemptEnd(
        "drop",
        at=0.0,
        drop=drop,
        resumed=True,
        at_connect=at_connect,
        connected_for=0.0 if at_connect else after,
        quiet_for=0.0 if at_connect else after,
    )


def fresh(drop: Drop, *, at_connect: bool = False) -> AttemptEnd:
    """A fresh session that died with ``drop`` before any answer."""
    return dataclasses.replace(resumed(drop, at_connect=at_connect), resumed=False)


def idle(*, quiet: float = 151.0, resumed_: bool = False) -> AttemptEnd:
    """The service's close of a connection without traffic for ``quiet`` seconds."""
    return AttemptEnd(
        "drop", at=0.0, drop=IDLE, resumed=resumed_, connected_for=quiet, quiet_for=quiet
    )


def stall(*, answered_before: bool = False, silence: bool = True) -> AttemptEnd:
    seen = "no answer 15.0 s after a typed turn" if silence else "3 turns answered with nothing"
    return AttemptEnd(
        "stall", at=0.0, what=seen, silence=silence, answered=answered_before, connected_for=16
    )


def play(
    ends: Sequence[AttemptEnd],
    *,
    policy: ResumePolicy | None = None,
    handle: bool = True,
    hooks: tuple[RetryHook, ...] = (),
    **view: object,
) -> list[Step]:
    """Decide about ``ends`` in order, one second apart, as the loop does: after a fresh
    start the run has a handle again once a session was set up (say it gives one at once)."""
    steps: list[Step] = []
    outage: Outage | None = None
    now = 0.0
    for end in ends:
        if steps and isinstance(steps[-1], FreshStart):
            handle = not end.at_connect
        now += 1.0 + end.connected_for
        end = dataclasses.replace(end, at=now)
        seen = RunView(
            policy or ResumePolicy(), handle=handle, hooks=hooks, **{"model": MODEL, **view}
        )  # type: ignore[arg-type]
        step = next_step(end, outage, seen, now=now)
        steps.append(step)
        if isinstance(step, GiveUp):
            break
        outage = step.outage
    return steps


def names(steps: Sequence[Step]) -> list[str]:
    return [
        "resume"
        if isinstance(step, Resume)
        else "fresh"
        if isinstance(step, FreshStart)
        else type(step.error).__name__
        for step in steps
    ]


CLASSES = [
    pytest.param([answered(INTERNAL)], ["resume"], id="a transient 1011 resumes"),
    pytest.param([answered(QUOTA), resumed(QUOTA)], ["resume", "QuotaExceededError"], id="quota"),
    pytest.param(
        [answered(SESSIONS), resumed(SESSIONS)],
        ["resume", "QuotaExceededError"],
        id="quota: concurrent sessions",
    ),
    pytest.param(
        [answered(QUOTA), answered(QUOTA), resumed(QUOTA)],
        ["resume", "resume", "QuotaExceededError"],
        id="quota: an answer in between starts over",
    ),
    pytest.param(
        [answered(QUOTA), resumed(ABORTED), resumed(QUOTA)],
        ["resume", "resume", "QuotaExceededError"],
        id="quota: one confirming attempt per outage",
    ),
    pytest.param([idle(), idle(quiet=4.0, resumed_=True)], ["resume", "IdleCloseError"], id="idle"),
    pytest.param(
        [idle(), resumed(REFUSED, at_connect=True)], ["resume", "fresh"], id="idle: refused"
    ),
    pytest.param(
        [idle(), resumed(REFUSED, at_connect=True), idle(quiet=4.0)],
        ["resume", "fresh", "IdleCloseError"],
        id="idle: refused, then idle again",
    ),
    pytest.param(
        [dataclasses.replace(idle(), quiet_for=0.5)],
        ["SessionNotResumableError"],
        id="1008 while in use",
    ),
    pytest.param(
        [answered(INTERNAL), resumed(INTERNAL), resumed(INTERNAL)],
        ["resume", "resume", "fresh"],
        id="poisoned handle",
    ),
    pytest.param(
        [answered(INTERNAL), resumed(INTERNAL), resumed(INTERNAL), fresh(INTERNAL)],
        ["resume", "resume", "fresh", "PoisonedSessionError"],
        id="poisoned: the fresh session dies too",
    ),
    pytest.param(
        [resumed(INTERNAL), resumed(INTERNAL), fresh(ABORTED), resumed(INTERNAL)],
        ["resume", "fresh", "resume", "resume"],
        id="poisoned: the fresh session dies otherwise",
    ),
    pytest.param(
        [answered(INTERNAL), resumed(INTERNAL, at_connect=True), resumed(INTERNAL)],
        ["resume", "resume", "fresh"],
        id="poisoned: at setup or at the first input",
    ),
    pytest.param(
        [
            answered(INTERNAL),
            resumed(INTERNAL),
            resumed(Drop("closed", 1011, "Deadline expired")),
            resumed(INTERNAL),
        ],
        ["resume", "resume", "resume", "resume"],
        id="not poisoned: each close another",
    ),
    pytest.param(
        [
            resumed(REFUSED, at_connect=True),
            fresh(INTERNAL),
            resumed(INTERNAL),
            resumed(INTERNAL),
        ],
        ["fresh", "resume", "resume", "PoisonedSessionError"],
        id="poisoned after the outage gave a handle up already",
    ),
    pytest.param(
        [answered(ABORTED), resumed(ABORTED), resumed(ABORTED)],
        ["resume", "resume", "resume"],
        id="not poisoned: the network",
    ),
    pytest.param(
        [
            answered(INTERNAL),
            resumed(INTERNAL, at_connect=True),
            resumed(INTERNAL, at_connect=True),
            fresh(INTERNAL, at_connect=True),
        ],
        ["resume", "resume", "fresh", "ModelRefusedError"],
        id="refused model, with a handle and without",
    ),
    pytest.param(
        [answered(INTERNAL), resumed(REFUSED, at_connect=True)],
        ["resume", "fresh"],
        id="refused handle",
    ),
    pytest.param(
        [answered(INTERNAL), resumed(Drop("closed", 1007, "invalid argument"))],
        ["resume", "fresh"],
        id="refused handle at the first input",
    ),
    pytest.param(
        [
            answered(INTERNAL),
            resumed(REFUSED, at_connect=True),
            resumed(REFUSED, at_connect=True),
        ],
        ["resume", "fresh", "SessionNotResumableError"],
        id="refused handle twice in an outage",
    ),
    pytest.param(
        [answered(Drop("closed", 1007, "Request contains an invalid argument."))],
        ["SessionNotResumableError"],
        id="1007 mid-session",
    ),
    pytest.param(
        [stall(answered_before=True), stall(), stall()],
        ["resume", "fresh", "SessionStalledError"],
        id="stall ladder",
    ),
    pytest.param(
        [stall(answered_before=True, silence=False), stall()],
        ["fresh", "SessionStalledError"],
        id="degenerate turns skip the resume",
    ),
    pytest.param(
        [stall(answered_before=True), resumed(REFUSED, at_connect=True), stall()],
        ["resume", "fresh", "SessionStalledError"],
        id="stall, the resume refused, stall again",
    ),
    pytest.param(
        [stall(answered_before=True), stall(answered_before=True), stall(answered_before=True)],
        ["resume", "resume", "resume"],
        id="an answer starts the ladder over",
    ),
]


@pytest.mark.parametrize(("ends", "expected"), CLASSES)
def test_each_class_takes_its_own_ladder(ends: list[AttemptEnd], expected: list[str]) -> None:
    assert names(play(ends)) == expected


def test_a_transient_close_resumes_at_once() -> None:
    (step,) = play([answered(INTERNAL)])
    assert isinstance(step, Resume) and step.at_once and step.wait == 0.0
    assert step.outage is not None and step.outage.attempts == 1 and step.failure == ""


def test_every_give_up_names_its_class_and_quotes_the_last_close() -> None:
    quota = play([answered(QUOTA), resumed(QUOTA)])[-1]
    assert isinstance(quota, GiveUp) and isinstance(quota.error, QuotaExceededError)
    assert QUOTA_REASON in str(quota.error) and "quota is spent" in str(quota.error)
    assert quota.error.reason == QUOTA_REASON and quota.error.code == 1011
    idle_again = play([idle(), idle(quiet=4.0, resumed_=True)])[-1]
    assert isinstance(idle_again, GiveUp) and isinstance(idle_again.error, IdleCloseError)
    assert "idle connection twice in a row" in str(idle_again.error)
    poisoned = play([answered(INTERNAL), resumed(INTERNAL), resumed(INTERNAL), fresh(INTERNAL)])
    error = poisoned[-1].error if isinstance(poisoned[-1], GiveUp) else None
    assert isinstance(error, PoisonedSessionError) and error.model == MODEL
    assert MODEL in str(error) and INTERNAL_ERROR_REASON in str(error)
    refused = play([fresh(INTERNAL, at_connect=True)] * 2, handle=False)
    error = refused[-1].error if isinstance(refused[-1], GiveUp) else None
    assert isinstance(error, ModelRefusedError) and error.model == MODEL
    assert repr(MODEL) in str(error) and INTERNAL_ERROR_REASON in str(error)
    long_name = play([fresh(INTERNAL, at_connect=True)] * 2, handle=False, model=LONG_MODEL)
    poisoned_long = play(
        [answered(INTERNAL), resumed(INTERNAL), resumed(INTERNAL), fresh(INTERNAL)],
        model=LONG_MODEL,
    )
    for step in (quota, idle_again, poisoned[-1], refused[-1], long_name[-1], poisoned_long[-1]):
        assert isinstance(step, GiveUp)
        # what happened and what to do, in the first sentence, within 120 bytes
        first = str(step.error).split(". ")[0]
        assert len(first.encode()) <= 120 and ": " in first, first


def test_a_fresh_start_for_want_of_a_handle_is_no_step_of_the_stall_ladder() -> None:
    """The first session is lost before it gave a handle: a fresh session follows, and when
    that one stalls (turns answered with nothing), its own fresh start is the ladder's."""
    ends = [answered(ABORTED), stall(silence=False), stall()]
    steps = play(ends, handle=False)
    assert names(steps) == ["fresh", "fresh", "SessionStalledError"]
    assert isinstance(steps[1], FreshStart) and steps[1].failure == "stall"


def test_a_model_refused_at_every_setup_of_a_new_run_ends_after_two() -> None:
    steps = play([fresh(INTERNAL, at_connect=True)] * 3, handle=False)
    assert names(steps) == ["fresh", "ModelRefusedError"]
    assert isinstance(steps[0], FreshStart) and not steps[0].abandons


def test_without_fresh_starts_a_poisoned_handle_ends_the_run_saying_so() -> None:
    policy = ResumePolicy(fresh_start_when_handle_dead=False)
    steps = play([answered(INTERNAL), resumed(INTERNAL), resumed(INTERNAL)], policy=policy)
    assert names(steps) == ["resume", "resume", "PoisonedSessionError"]
    assert "fresh_start_when_handle_dead=False" in str(steps[-1].error)  # type: ignore[union-attr]


def test_a_refused_handle_without_fresh_starts_or_past_the_audio_limit_ends_the_run() -> None:
    refused = resumed(REFUSED, at_connect=True)
    off = play([refused], policy=ResumePolicy(fresh_start_when_handle_dead=False))
    assert isinstance(off[0], GiveUp) and "while resuming with a handle" in str(off[0].error)
    limit = resumed(Drop("closed", 1007, "invalid argument"), at_connect=True)
    (ended,) = play([limit], session_limited=True)
    assert isinstance(ended, GiveUp) and isinstance(ended.error, SessionLimitError)


def test_the_poisoned_fresh_start_says_why_and_leaves_the_handle() -> None:
    step = play([answered(INTERNAL), resumed(INTERNAL), resumed(INTERNAL)])[-1]
    assert isinstance(step, FreshStart) and step.abandons and step.failure == "poisoned_handle"
    assert "two resumes in a row" in step.why and "1011" in step.why


def test_a_quota_hook_may_choose_to_wait_instead() -> None:
    asked: list[tuple[int | None, int]] = []

    def wait_for_the_bucket(drop: Drop, attempt: int) -> float | None:
        asked.append((drop.code, attempt))
        return 30.0 if "quota" in drop.reason else None

    steps = play([answered(QUOTA), resumed(QUOTA)], hooks=(wait_for_the_bucket,))
    assert names(steps) == ["resume", "resume"] and asked == [(1011, 1), (1011, 2)]
    assert isinstance(steps[1], Resume) and steps[1].wait == 30.0 and steps[1].failure == "quota"
    no = play([answered(QUOTA), resumed(QUOTA)], hooks=(lambda _d, a: None if a < 2 else False,))
    assert isinstance(no[-1], GiveUp) and type(no[-1].error) is ReconnectFailedError
    assert "gave up on attempt 2" in str(no[-1].error)


def test_the_hooks_are_never_asked_about_a_stall_or_a_move() -> None:
    asked: list[Drop] = []

    def hook(drop: Drop, attempt: int) -> None:
        asked.append(drop)

    moved = AttemptEnd("moved", at=0.0, what="goAway at a safe point", answered=True)
    steps = play([stall(answered_before=True), stall(), moved], hooks=(hook,))
    assert names(steps) == ["resume", "fresh", "resume"] and asked == []
    assert len(play([answered(INTERNAL)], hooks=(hook,))) == 1 and asked == [INTERNAL]


def test_a_move_is_no_attempt_and_starts_fresh_without_a_usable_handle() -> None:
    moved = AttemptEnd("moved", at=0.0, what="goAway deadline", answered=True)
    (step,) = play([moved])
    assert isinstance(step, Resume) and step.at_once and step.outage is None
    (step,) = play([moved], unusable="the handle is older than handle_ttl")
    assert isinstance(step, FreshStart) and step.abandons and "handle_ttl" in step.why


def test_no_more_than_max_attempts_connections_without_progress() -> None:
    policy = ResumePolicy(max_attempts=3)
    steps = play([answered(ABORTED), *[resumed(ABORTED)] * 5], policy=policy)
    assert names(steps) == ["resume", "resume", "resume", "ReconnectFailedError"]
    error = steps[-1].error  # type: ignore[union-attr]
    assert "3 connection attempts failed" in str(error) and error.attempts == 3
    assert "1006" in str(error)
    stalls = play([stall(answered_before=True), *[resumed(ABORTED)] * 4], policy=policy)
    assert names(stalls)[-1] == "ReconnectFailedError"


def test_a_full_reconnect_rate_gives_up_whatever_the_end() -> None:
    for end in (answered(INTERNAL), stall(answered_before=True), idle()):
        (step,) = play([end], rate_has_room=False)
        assert isinstance(step, GiveUp) and "reconnects within 60 s" in str(step.error)


def test_a_stall_ladder_that_gives_up_lists_what_each_stall_saw() -> None:
    steps = play([stall(answered_before=True), stall(), stall(silence=False)])
    error = steps[-1].error  # type: ignore[union-attr]
    assert isinstance(error, SessionStalledError)
    assert str(error).startswith(
        "live session stalled 3 times; a resume and a fresh session brought no answer."
    )
    assert "3 turns answered with nothing" in str(error)
    # (a ladder whose stalls had no handle to resume names only the fresh session)
    alone = play([stall(answered_before=True, silence=False), stall()], handle=False)
    assert isinstance(alone[-1], GiveUp)
    assert str(alone[-1].error).startswith(
        "live session stalled twice; a fresh session brought no answer."
    )


def test_a_drop_after_a_go_away_deadline_resumes_and_elsewhere_1008_ends_the_run() -> None:
    late = Drop("closed", 1008, "the client failed to close", after_go_away=True)
    assert names(play([answered(late)])) == ["resume"]
    ended = play([answered(Drop("closed", 1008, "policy violation"))])
    assert isinstance(ended[0], GiveUp) and isinstance(ended[0].error, SessionNotResumableError)
    assert "this close is not retryable" in str(ended[0].error)
