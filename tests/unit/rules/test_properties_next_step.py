"""A Hypothesis model of a run's connections and what follows each end (next_step).

Random runs of connections, each ending as the field says they may (closes with the codes
and reasons of the failure classes, aborts, refused setups, quiet connections, stalls,
moves, answered or not, connected for a second or for minutes), are decided one after the
other as the loop does, with the handle a real run would have. Checked after every step:

* the run never opens more than ``max_attempts`` connections in a row after failures
  without progress (an answer, or a minute connected; ``setupComplete`` alone is none);
* at most one handle is given up for a fresh start per outage because resuming it failed
  (refused, poisoned, a stall's second step);
* a give-up error names its class (its type, and the class's words in its message) and
  quotes the last close;
* the retry hooks are asked at most once per end, and never about a stall or a move.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import example, given
from hypothesis import strategies as st

from adk_live_resume.rules.errors import (
    Drop,
    IdleCloseError,
    LiveResumeError,
    ModelRefusedError,
    PoisonedSessionError,
    QuotaExceededError,
    ReconnectFailedError,
    SessionLimitError,
    SessionNotResumableError,
    SessionStalledError,
)
from adk_live_resume.rules.next_step import (
    GIVEN_UP_ON,
    FreshStart,
    GiveUp,
    Resume,
    RunView,
    Step,
    next_step,
)
from adk_live_resume.rules.outage import PROGRESS_CONNECTED, AttemptEnd, Outage
from adk_live_resume.rules.policy import ResumePolicy
from adk_live_resume.testing.faults import INTERNAL_ERROR_REASON, QUOTA_REASON

#: Words each give-up's message holds, by its type: the class it names.
CLASS_WORDS: dict[type[LiveResumeError], str] = {
    QuotaExceededError: "quota is spent",
    IdleCloseError: "idle connection",
    PoisonedSessionError: "dies before any answer",
    ModelRefusedError: "refuses every setup",
    SessionStalledError: "stalled",
    SessionLimitError: "15 minutes",
    SessionNotResumableError: "server",
    ReconnectFailedError: "gave up",
}

REASONS = [
    "",
    INTERNAL_ERROR_REASON,
    QUOTA_REASON,
    "Deadline expired before operation could complete.",
    "RESOURCE_EXHAUSTED: Maximum concurrent sessions",
    "Invalid resumption handle",
]


@dataclass(frozen=True)
class Connection:
    """How one connection of the run goes (the model's draw)."""

    kind: str
    code: int
    reason: str
    at_connect: bool
    answered: bool
    connected_for: float
    quiet: float
    after_go_away: bool
    silence: bool
    unusable: bool


connections = st.builds(
    Connection,
    kind=st.sampled_from(["drop"] * 6 + ["stall", "stall", "moved"]),
    code=st.sampled_from([1000, 1006, 1007, 1008, 1008, 1011, 1011, 1011, 1013]),
    reason=st.sampled_from(REASONS),
    at_connect=st.booleans(),
    answered=st.sampled_from([False, False, False, True]),
    connected_for=st.sampled_from([0.8, 2.0, 5.0, 59.0, PROGRESS_CONNECTED, 151.0]),
    quiet=st.sampled_from([0.0, 0.5, 0.9, 1.0]),
    after_go_away=st.sampled_from([False, False, False, True]),
    silence=st.booleans(),
    unusable=st.sampled_from([False, False, False, False, True]),
)
policies = st.builds(
    ResumePolicy,
    max_attempts=st.integers(1, 6),
    outage_timeout=st.sampled_from([60.0, 600.0, 100_000.0]),
    fresh_start_when_handle_dead=st.sampled_from([True, True, False]),
    max_reconnects_per_minute=st.just(1000),
)
answers = st.lists(st.one_of(st.none(), st.none(), st.just(False), st.just(2.0)), max_size=40)


def _end(drawn: Connection, *, resumed: bool, at: float) -> AttemptEnd:
    if drawn.kind == "moved":
        return AttemptEnd("moved", at=at, what="goAway", answered=drawn.answered, resumed=resumed)
    if drawn.kind == "stall":
        return AttemptEnd(
            "stall",
            at=at,
            what=f"no answer after turn {at:.0f}",
            silence=drawn.silence,
            answered=drawn.answered,
            resumed=resumed,
            connected_for=drawn.connected_for,
        )
    at_connect = drawn.at_connect
    drop = Drop("closed", drawn.code, drawn.reason, after_go_away=drawn.after_go_away)
    return AttemptEnd(
        "drop",
        at=at,
        drop=drop,
        at_connect=at_connect,
        resumed=resumed,
        answered=drawn.answered and not at_connect,
        connected_for=0.0 if at_connect else drawn.connected_for,
        quiet_for=0.0 if at_connect else drawn.connected_for * drawn.quiet,
    )


def _drop(code: int = 1011, *, at_connect: bool = False, reason: str = "") -> Connection:
    return Connection("drop", code, reason, at_connect, False, 2.0, 0.0, False, False, False)


# Runs the random draws rarely reach whole (they end early, a give-up per few ends): a handle
# refused again after the fresh start of the same outage; a poisoned handle after one; a
# poisoned handle, then the fresh session dying the same way.
@example(
    policy=ResumePolicy(),
    run=[_drop(1008, at_connect=True), _drop(), _drop(1008, at_connect=True)],
    hook_answers=[],
    first_resumes=True,
    session_limited=False,
)
@example(
    policy=ResumePolicy(),
    run=[_drop(1008, at_connect=True), *[_drop(reason=INTERNAL_ERROR_REASON)] * 4],
    hook_answers=[],
    first_resumes=True,
    session_limited=False,
)
@example(
    policy=ResumePolicy(),
    run=[_drop(reason=INTERNAL_ERROR_REASON)] * 4,
    hook_answers=[],
    first_resumes=True,
    session_limited=False,
)
@given(
    policy=policies,
    run=st.lists(connections, min_size=1, max_size=25),
    hook_answers=answers,
    first_resumes=st.booleans(),
    session_limited=st.booleans(),
)
def test_what_follows_each_end_keeps_the_run_bounded_and_says_why(
    policy: ResumePolicy,
    run: list[Connection],
    hook_answers: list[bool | float | None],
    first_resumes: bool,
    session_limited: bool,
) -> None:
    asked: list[int] = []
    replies = iter(hook_answers)

    def hook(drop: Drop, attempt: int) -> bool | float | None:
        asked.append(attempt)
        return next(replies, None)

    outage: Outage | None = None
    handle = resumes = first_resumes
    in_a_row = 0  # connections opened after failures since the last progress
    left_behind = 0  # handles left for a fresh start in this outage
    now = 0.0
    for drawn in run:
        if not resumes:
            # a fresh session has a handle once it is set up (the model's simplification:
            # it gives one at once); a resume carries the run's
            handle = not drawn.at_connect or drawn.kind != "drop"
        now += 1.0 + drawn.connected_for
        end = _end(drawn, resumed=resumes, at=now)
        # progress as the guarantees say it, not as the code under test computes it
        progress = drawn.answered and not (drawn.kind == "drop" and drawn.at_connect)
        if drawn.kind == "drop" and not drawn.at_connect:
            progress = progress or drawn.connected_for >= PROGRESS_CONNECTED
        view = RunView(
            policy,
            model="gemini-live-fake",
            handle=handle,
            unusable="too old" if drawn.unusable and handle else None,
            session_limited=session_limited,
            hooks=(hook,),
        )
        asked.clear()
        step: Step = next_step(end, outage, view, now=now)
        # the hooks: at most once per end, never about a stall or a move
        assert len(asked) <= (1 if end.kind == "drop" else 0)
        if isinstance(step, GiveUp):
            _names_its_class_and_the_last_close(step, end)
            return
        if end.kind == "moved":
            assert step.outage is (None if outage is None or progress else outage)
        else:
            if progress or outage is None:
                in_a_row = left_behind = 0
                # (progress begins a new outage: setupComplete alone never does)
                assert step.outage is not None and step.outage.attempts == 1
            else:
                assert step.outage is not None and step.outage.attempts == outage.attempts + 1
            in_a_row += 1
            given_up = isinstance(step, FreshStart) and step.abandons
            left_behind += given_up and step.failure in GIVEN_UP_ON
            assert in_a_row <= policy.max_attempts
            assert left_behind <= 1
            outage = step.outage
        resumes = isinstance(step, Resume)


def _names_its_class_and_the_last_close(step: GiveUp, end: AttemptEnd) -> None:
    error = step.error
    message = str(error)
    assert type(error) in CLASS_WORDS, type(error)
    assert CLASS_WORDS[type(error)] in message, (type(error).__name__, message)
    if end.kind == "stall":
        assert end.what in message
        return
    drop = end.drop
    assert drop is not None and str(drop.code) in message
    assert drop.reason in message, (drop.reason, message)
