"""ResumePolicy refuses wrong types and senseless values at construction (pure)."""

from __future__ import annotations

import dataclasses
import math

import pytest

from adk_live_resume.rules.policy import ResumePolicy, check_field_types


def test_the_policy_is_keyword_only() -> None:
    with pytest.raises(TypeError):
        ResumePolicy(5)  # type: ignore[misc]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"max_attempts": True}, "max_attempts must be an integer, not True"),
        ({"max_attempts": 2.0}, "max_attempts must be an integer, not 2.0"),
        ({"max_attempts": "5"}, "max_attempts must be an integer, not '5'"),
        ({"outage_timeout": False}, "outage_timeout must be a number, not False"),
        ({"outage_timeout": "60"}, "outage_timeout must be a number"),
        ({"initial_wait": math.nan}, "initial_wait must be a finite number, not nan"),
        ({"max_wait": math.inf}, "max_wait must be a finite number, not inf"),
        ({"jitter": 1}, "jitter must be True or False, not 1"),
        ({"transparent": "yes"}, "transparent must be True or False"),
        ({"retryable_close_codes": {1000, "1011"}}, "retryable_close_codes must be a frozenset"),
        ({"retryable_close_codes": 1011}, "retryable_close_codes must be a frozenset"),
    ],
)
def test_wrong_types_are_type_errors_naming_the_field(
    changes: dict[str, object], message: str
) -> None:
    with pytest.raises(TypeError, match="invalid ResumePolicy: .*" + message.replace("(", r"\(")):
        ResumePolicy(**changes)  # type: ignore[arg-type]


def test_every_wrong_field_is_named_at_once() -> None:
    with pytest.raises(TypeError) as caught:
        ResumePolicy(max_attempts=True, jitter=0)  # type: ignore[arg-type]
    assert "max_attempts" in str(caught.value) and "jitter" in str(caught.value)


def test_ints_are_fine_for_floats() -> None:
    assert ResumePolicy(outage_timeout=30, go_away_margin=0).outage_timeout == 30


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"initial_wait": 6.0, "max_wait": 5.0}, r"initial_wait \(6.0\) must be <= max_wait"),
        ({"retryable_close_codes": {1000, 1007}}, r"must not contain \[1007\]"),
        ({"retryable_close_codes": [1008, 1011]}, r"must not contain \[1008\]"),
        ({"retryable_close_codes": {1000, 200}}, r"websocket close codes, not \[200\]"),
        ({"close_timeout": 0}, "close_timeout must be > 0"),
        ({"max_reconnects_per_minute": 0}, "max_reconnects_per_minute must be >= 1"),
        ({"handle_ttl": -1}, "handle_ttl must be >= 0"),
        ({"handle_store_interval": -1}, "handle_store_interval must be >= 0"),
    ],
)
def test_senseless_values_are_value_errors(changes: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ResumePolicy(**changes)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=message):
        ResumePolicy().replace(**changes)


def test_a_list_or_set_of_codes_becomes_a_frozenset() -> None:
    policy = ResumePolicy(retryable_close_codes=[1000, 1011])  # type: ignore[arg-type]
    assert policy.retryable_close_codes == frozenset({1000, 1011})


def test_fields_added_later_are_type_checked_from_their_annotation() -> None:
    """The check reads the annotations, so a new field needs no new validation code."""

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Later:
        window: float = 1.0
        name: str | None = None
        mode: int = 0

        def __post_init__(self) -> None:
            check_field_types(self)

    assert Later(window=2, name=None).window == 2
    with pytest.raises(TypeError, match="window must be a number, not True"):
        Later(window=True)
    with pytest.raises(TypeError, match="name must be a str, not 3"):
        Later(name=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="mode must be an integer, not None"):
        Later(mode=None)  # type: ignore[arg-type]
