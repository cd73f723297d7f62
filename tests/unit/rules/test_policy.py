"""ResumePolicy: backoff formula, caps, validation (pure)."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from adk_live_resume.rules.policy import (
    DEFAULT_RETRYABLE_CLOSE_CODES,
    ReconnectRate,
    ResumePolicy,
    is_testing,
    testing_backoff,
)


@pytest.fixture(autouse=True)
def _no_backoff_waits() -> Iterator[None]:
    """Overrides the suite-wide switch: these tests measure the real waits."""
    yield


def test_first_retry_is_immediate_then_full_jitter_under_the_doubling_cap() -> None:
    policy = ResumePolicy(initial_wait=0.5, max_wait=4.0)
    rng = random.Random(7)
    assert policy.wait_before(1, rng) == 0.0
    caps = {2: 0.5, 3: 1.0, 4: 2.0, 5: 4.0, 6: 4.0, 9: 4.0}
    for attempt, cap in caps.items():
        waits = [policy.wait_before(attempt, rng) for _ in range(200)]
        assert all(0.0 <= w <= cap for w in waits), attempt
        # full jitter spreads over the whole interval, not just near the cap
        assert min(waits) < cap * 0.2 and max(waits) > cap * 0.8, attempt


def test_without_jitter_the_cap_itself_is_used() -> None:
    policy = ResumePolicy(initial_wait=0.25, max_wait=1.0, jitter=False)
    assert [policy.wait_before(n) for n in range(1, 6)] == [0.0, 0.25, 0.5, 1.0, 1.0]


def test_testing_switch_turns_waits_off_and_restores() -> None:
    policy = ResumePolicy(initial_wait=1.0, jitter=False)
    assert not is_testing()
    with testing_backoff():
        assert is_testing()
        assert policy.wait_before(5) == 0.0
    assert policy.wait_before(3) == 2.0


def test_reconnect_rate_is_a_sliding_window() -> None:
    rate = ReconnectRate(limit=3)
    assert [rate.allow(t) for t in (0.0, 1.0, 2.0, 3.0)] == [True, True, True, False]
    assert rate.allow(60.5)  # the first one left the window


def test_reconnect_rate_has_room_records_nothing() -> None:
    rate = ReconnectRate(limit=1)
    assert rate.has_room(0.0) and rate.has_room(0.0)
    assert rate.allow(0.0)
    assert not rate.has_room(30.0) and rate.has_room(60.0)


def test_retryable_codes_default_and_override() -> None:
    policy = ResumePolicy()
    assert {1000, 1001, 1006, 1011, 1012, 1013, 1014} == set(DEFAULT_RETRYABLE_CLOSE_CODES)
    assert policy.is_retryable_code(1011) and not policy.is_retryable_code(1008)
    assert not policy.is_retryable_code(None)
    custom = policy.replace(retryable_close_codes={1011})
    assert isinstance(custom.retryable_close_codes, frozenset)
    assert custom.is_retryable_code(1011) and not custom.is_retryable_code(1000)


def test_policy_is_frozen_and_validated() -> None:
    policy = ResumePolicy()
    with pytest.raises(AttributeError):
        policy.max_attempts = 3  # type: ignore[misc]
    with pytest.raises(ValueError, match="max_attempts must be >= 1"):
        ResumePolicy(max_attempts=0)
    with pytest.raises(ValueError, match="outage_timeout must be >= 0"):
        policy.replace(outage_timeout=-1)


def test_stall_nudge_is_off_by_default_and_set_by_its_variable() -> None:
    from adk_live_resume.launch.config import changes_from_environment

    assert ResumePolicy().stall_nudge is False
    changes = changes_from_environment({"ADK_LIVE_RESUME_STALL_NUDGE": "true"})
    assert ResumePolicy(**changes).stall_nudge is True  # type: ignore[arg-type]
