"""The retry decision (retry_decision.decide): the wait before an attempt after a drop, or
giving up. Pure, no sockets, no clock."""

from __future__ import annotations

import math
import random
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adk_live_resume.rules import retry_hooks
from adk_live_resume.rules.errors import Drop
from adk_live_resume.rules.policy import ResumePolicy
from adk_live_resume.rules.retry_decision import (
    NOW,
    RetryHook,
    decide,
    retryable,
    seen_after_go_away,
)
from adk_live_resume.testing import GO_AWAY_DEADLINE_REASON

CLOSED_1011 = Drop("closed", 1011, "internal error")
REFUSED_429 = Drop(
    "connect_failed", None, "HTTP 429 during the websocket handshake", status=429, retry_after=3.0
)


@pytest.fixture(autouse=True)
def _no_backoff_waits() -> Iterator[None]:
    """Overrides the suite-wide switch: these tests look at the real waits."""
    yield


def test_the_first_attempt_goes_now_and_later_ones_wait_under_the_doubling_cap() -> None:
    policy = ResumePolicy(initial_wait=0.5, max_wait=4.0)
    rng = random.Random(3)
    assert decide(CLOSED_1011, 1, policy=policy) is NOW
    for attempt, cap in {2: 0.5, 3: 1.0, 4: 2.0, 5: 4.0, 8: 4.0}.items():
        decisions = [decide(CLOSED_1011, attempt, policy=policy, rng=rng) for _ in range(100)]
        assert all(d.action == "wait" and 0 <= d.seconds <= cap for d in decisions)
        # full jitter: spread over the whole interval
        assert (
            min(d.seconds for d in decisions)
            < cap * 0.2
            < cap * 0.8
            < max(d.seconds for d in decisions)
        )


def test_first_attempt_jitter_makes_the_first_attempt_a_wait() -> None:
    policy = ResumePolicy(first_attempt_jitter=0.5)
    decision = decide(CLOSED_1011, 1, policy=policy, rng=random.Random(1))
    assert decision.action == "wait" and 0 <= decision.seconds <= 0.5


def test_under_the_testing_switch_a_wait_stays_a_wait_of_zero() -> None:
    decision = decide(CLOSED_1011, 3, policy=ResumePolicy(), testing=True)
    assert (decision.action, decision.seconds) == ("wait", 0.0)
    assert decide(CLOSED_1011, 1, policy=ResumePolicy(), testing=True) is NOW


def test_gives_up_after_max_attempts() -> None:
    policy = ResumePolicy(max_attempts=3, jitter=False)
    actions = [decide(CLOSED_1011, n, policy=policy).action for n in range(1, 5)]
    assert actions == ["now", "wait", "wait", "give_up"]
    decision = decide(CLOSED_1011, 4, policy=policy)
    assert decision.cause == "attempts" and "3 connection attempts failed" in decision.why


def test_gives_up_after_outage_timeout_and_never_waits_past_it() -> None:
    policy = ResumePolicy(
        max_attempts=100, outage_timeout=10.0, initial_wait=8.0, max_wait=8.0, jitter=False
    )
    assert decide(CLOSED_1011, 1, policy=policy, elapsed=0.0) is NOW
    decision = decide(CLOSED_1011, 2, policy=policy, elapsed=5.0)
    assert (decision.action, decision.seconds) == ("wait", 5.0)  # the 5 s left, not 8 s
    decision = decide(CLOSED_1011, 3, policy=policy, elapsed=10.5)
    assert decision.cause == "outage_timeout" and "10.5 s" in decision.why


def test_what_the_policy_never_retries_gives_up_unless_a_failure_class_retries_it() -> None:
    policy = ResumePolicy()
    decision = decide(Drop("closed", 1008, "policy violation"), 1, policy=policy)
    assert decision.cause == "not_retryable" and "1008" in decision.why
    rejected = Drop("rejected", None, "HTTP 403 during the websocket handshake", status=403)
    assert decide(rejected, 1, policy=policy).cause == "not_retryable"
    assert decide(Drop("closed", 1008, ""), 1, policy=policy, retried_by_class=True) is NOW


def test_a_1008_after_a_go_away_is_retried_like_any_drop_and_elsewhere_is_not() -> None:
    """The service closes a client late for its goAway's deadline with 1008 (a recorded run):
    on a connection that had a goAway that is a move the client missed, not a bad request."""
    policy = ResumePolicy()
    late = Drop("closed", 1008, GO_AWAY_DEADLINE_REASON, after_go_away=True)
    assert retryable(late, policy) and decide(late, 1, policy=policy) is NOW
    assert decide(late, 3, policy=policy, testing=True).action == "wait"
    # the caps still hold for it, and no other code is freed by a goAway
    assert decide(late, policy.max_attempts + 1, policy=policy).cause == "attempts"
    invalid = Drop("closed", 1007, "Request contains an invalid argument.", after_go_away=True)
    assert decide(invalid, 1, policy=policy).cause == "not_retryable"
    assert not retryable(Drop("closed", 1008, GO_AWAY_DEADLINE_REASON), policy)
    assert seen_after_go_away(Drop("closed", 1008, ""), False) == Drop("closed", 1008, "")
    assert seen_after_go_away(Drop("closed", 1008, ""), True).after_go_away


def test_a_full_reconnect_rate_gives_up() -> None:
    decision = decide(CLOSED_1011, 1, policy=ResumePolicy(), rate_has_room=False)
    assert decision.cause == "rate" and "20 reconnects within 60 s" in decision.why


def test_retry_after_is_honoured_beyond_max_wait_and_even_under_the_testing_switch() -> None:
    policy = ResumePolicy(max_wait=1.0)
    for testing in (False, True):
        decision = decide(REFUSED_429, 1, policy=policy, testing=testing)
        assert (decision.action, decision.seconds) == ("wait", 3.0)
    # a later attempt waits the longer of the two
    decision = decide(REFUSED_429, 4, policy=policy.replace(jitter=False))
    assert decision.seconds == 3.0
    long_backoff = policy.replace(initial_wait=8.0, max_wait=8.0, jitter=False)
    assert decide(REFUSED_429, 2, policy=long_backoff).seconds == 8.0


def test_a_retry_after_past_the_outage_deadline_gives_up_at_once() -> None:
    policy = ResumePolicy(outage_timeout=10.0)
    drop = Drop("connect_failed", None, "HTTP 429", status=429, retry_after=30.0)
    decision = decide(drop, 1, policy=policy)
    assert decision.cause == "outage_timeout"
    assert "the server (Retry-After) asked to wait 30 s" in decision.why
    assert "outage_timeout=10 s" in decision.why
    # just inside the deadline: honoured
    assert decide(drop, 2, policy=policy.replace(outage_timeout=60.0), elapsed=29.0).seconds == 30


def test_the_hook_can_keep_give_up_retry_or_choose_the_wait() -> None:
    policy = ResumePolicy(jitter=False)
    asked: list[tuple[Drop, int]] = []

    def answer(value: bool | float | None) -> RetryHook:
        def hook(drop: Drop, attempt: int) -> bool | float | None:
            asked.append((drop, attempt))
            return value

        return hook

    kept = decide(CLOSED_1011, 2, policy=policy, hooks=(answer(None),))
    assert kept.seconds == 0.25 and not kept.by_hook
    assert asked == [(CLOSED_1011, 2)]
    gave_up = decide(CLOSED_1011, 2, policy=policy, hooks=(answer(False),))
    assert gave_up.cause == "hook" and "gave up on attempt 2" in gave_up.why and gave_up.by_hook
    assert decide(CLOSED_1011, 3, policy=policy, hooks=(answer(True),)).seconds == 0.5
    retried = decide(CLOSED_1011, 1, policy=policy, hooks=(answer(True),))
    assert retried.now and retried.by_hook
    chosen = decide(CLOSED_1011, 1, policy=policy, hooks=(answer(7.5),), testing=True)
    assert (chosen.action, chosen.seconds) == ("wait", 7.5)  # the user's own wait
    at_once = decide(CLOSED_1011, 5, policy=policy, hooks=(answer(0),))
    assert at_once.now and at_once.by_hook
    # never shorter than the server's Retry-After
    assert decide(REFUSED_429, 1, policy=policy, hooks=(answer(1.0),)).seconds == 3.0
    # the first answer that is not None counts
    first = decide(CLOSED_1011, 2, policy=policy, hooks=(answer(None), answer(2.0), answer(9)))
    assert first.seconds == 2.0
    # a wait past the outage's deadline gives up now
    late = decide(CLOSED_1011, 2, policy=policy, hooks=(answer(120.0),))
    assert late.cause == "outage_timeout" and "the retry hook asked to wait 120 s" in late.why


def test_the_hook_is_not_asked_when_a_cap_gives_up() -> None:
    asked: list[int] = []

    def hook(drop: Drop, attempt: int) -> bool:
        asked.append(attempt)
        return True

    policy = ResumePolicy(max_attempts=2)
    assert decide(CLOSED_1011, 3, policy=policy, hooks=(hook,)).cause == "attempts"
    assert decide(Drop("closed", 1007, ""), 1, policy=policy, hooks=(hook,)).cause == (
        "not_retryable"
    )
    assert asked == []


@pytest.mark.parametrize(
    ("value", "problem"),
    [("soon", "answered 'soon'"), (-1.0, "answered -1.0 seconds"), (math.nan, "answered nan")],
)
def test_a_hook_answering_nonsense_gives_up_naming_it(value: object, problem: str) -> None:
    def odd_hook(drop: Drop, attempt: int) -> object:
        return value

    decision = decide(CLOSED_1011, 1, policy=ResumePolicy(), hooks=(odd_hook,))  # type: ignore[arg-type]
    assert decision.cause == "hook" and "odd_hook" in decision.why and problem in decision.why


def test_a_hook_that_raises_gives_up_with_its_error_and_never_raises_itself() -> None:
    boom = ZeroDivisionError("division by zero")

    def broken_hook(drop: Drop, attempt: int) -> float:
        raise boom

    decision = decide(CLOSED_1011, 1, policy=ResumePolicy(), hooks=(broken_hook,))
    assert decision.cause == "hook" and decision.error is boom
    assert "broken_hook raised ZeroDivisionError: division by zero" in decision.why


# ---- now is a decision, not a draw ---------------------------------------------------------

drops = st.one_of(
    st.builds(
        Drop,
        st.just("closed"),
        st.sampled_from([1000, 1001, 1006, 1007, 1008, 1011, 1013, 4000]),
        st.text(max_size=5),
        after_go_away=st.booleans(),
    ),
    st.builds(
        Drop,
        st.sampled_from(["connect_failed", "rejected"]),
        st.none(),
        st.just(""),
        status=st.sampled_from([None, 403, 429, 503]),
        retry_after=st.one_of(st.none(), st.sampled_from([0.0, 0.5, 2.0, 90.0])),
    ),
)
policies = st.builds(
    ResumePolicy,
    max_attempts=st.integers(1, 4),
    outage_timeout=st.sampled_from([1.0, 10.0, 60.0]),
    initial_wait=st.sampled_from([0.0, 0.25, 1.0]),
    max_wait=st.just(5.0),
    jitter=st.booleans(),
    first_attempt_jitter=st.sampled_from([0.0, 0.0, 0.5]),
    max_reconnects_per_minute=st.integers(1, 4),
)
answers = st.one_of(st.none(), st.booleans(), st.sampled_from([0.0, 0.0, 0.3, 5.0]))


@given(
    policy=policies,
    drop=drops,
    attempt=st.integers(1, 5),
    elapsed=st.sampled_from([0.0, 0.5, 9.0, 70.0]),
    room=st.booleans(),
    answer=answers,
    testing=st.booleans(),
)
def test_now_exactly_when_nothing_asks_for_a_wait(
    policy: ResumePolicy,
    drop: Drop,
    attempt: int,
    elapsed: float,
    room: bool,
    answer: bool | float | None,
    testing: bool,
) -> None:
    decision = decide(
        drop,
        attempt,
        policy=policy,
        elapsed=elapsed,
        rate_has_room=room,
        hooks=(lambda _drop, _attempt: answer,),
        testing=testing,
    )
    caps_allow = (
        (
            drop.kind == "connect_failed"
            or policy.is_retryable_code(drop.code)
            or (drop.after_go_away and drop.code == 1008)
        )
        and attempt <= policy.max_attempts
        and elapsed < policy.outage_timeout
        and room
    )
    server = drop.retry_after or 0.0
    if isinstance(answer, bool) or answer is None:
        asks_nothing = server == 0 and policy.wait_bound(attempt) == 0
    else:
        asks_nothing = server == 0 and answer == 0
    assert decision.now == (caps_allow and answer is not False and asks_nothing)
    if decision.action == "wait":
        remaining = policy.outage_timeout - elapsed
        assert server <= decision.seconds <= remaining
        if not testing and not isinstance(answer, float):
            assert decision.seconds <= max(server, policy.wait_bound(attempt))


def test_on_retry_refuses_what_is_not_callable_and_removes_once() -> None:
    with pytest.raises(TypeError, match="on_retry"):
        retry_hooks.on_retry(5)  # type: ignore[arg-type]

    def hook(drop: Drop, attempt: int) -> None:
        return None

    remove = retry_hooks.on_retry(hook)
    assert retry_hooks.registered()[-1] is hook
    remove()
    remove()
    assert hook not in retry_hooks.registered()
