"""The ``--inject SPEC`` reader and the proxy command's stdin commands: pure, no sockets."""

from __future__ import annotations

import pytest

from adk_live_resume.fault_proxy.inject_spec import (
    InjectSchedule,
    InjectSpecError,
    parse_inject_spec,
)
from adk_live_resume.testing.proxy_cli import CommandError, parse_command


def test_a_goaway_and_a_drop_every_so_often_read_as_two_timers() -> None:
    schedule = parse_inject_spec("goaway-every=60,drop-every=90")
    assert schedule == InjectSchedule(goaway_every=60.0, drop_every=90.0)
    assert schedule.describe() == "goAway every 60s (timeLeft 10s), drop after 90s"


def test_every_key() -> None:
    schedule = parse_inject_spec(
        "goaway-every=1.5, goaway-time-left=2,close-every=3,close-code=4000,latency=0.1,"
        "refuse-resume=2,drop-every=9,goaway-close-code=1011"
    )
    assert schedule == InjectSchedule(
        goaway_every=1.5,
        goaway_time_left=2.0,
        drop_every=9.0,
        close_every=3.0,
        close_code=4000,
        latency=0.1,
        refuse_resume=2,
        goaway_close_code=1011,
    )
    assert "close 1011" in schedule.describe()


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("", "empty SPEC"),
        ("goaway-every", "is not KEY=VALUE"),
        ("goaway-every=", "is not KEY=VALUE"),
        ("goaway=60", "unknown key 'goaway'"),
        ("goaway-every=soon", "not a number of seconds"),
        ("drop-every=-1", "finite number >= 0"),
        ("drop-every=inf", "finite number >= 0"),
        ("drop-every=nan", "finite number >= 0"),
        ("drop-every=0", "use > 0"),
        ("close-code=999", "1000-4999"),
        ("goaway-close-code=1000", "1008 or 1011"),
        ("close-code=1.5", "not a whole number"),
        ("refuse-resume=-1", ">= 0"),
        ("latency=1,latency=2", "given twice"),
    ],
)
def test_a_bad_spec_names_its_fault_and_the_form(spec: str, says: str) -> None:
    with pytest.raises(InjectSpecError) as raised:
        parse_inject_spec(spec)
    assert says in str(raised.value)
    assert "expected KEY=VALUE" in str(raised.value)
    assert "goaway-every=60,drop-every=90" in str(raised.value)


def test_stdin_commands_read() -> None:
    assert parse_command("   ") is None
    for line in (
        "goaway 5",
        "close 1011 a reason",
        "abort",
        "latency 0.2",
        "hold-pongs",
        "release-pongs",
        "hold-handles",
        "release-handles",
        "refuse-resume",
        "refuse-resume 3",
        "status",
        "help",
    ):
        assert callable(parse_command(line)), line


@pytest.mark.parametrize(
    "line", ["goaway", "goaway soon", "close", "close x", "close 999", "abort now", "jump"]
)
def test_a_bad_command_is_refused_with_the_list(line: str) -> None:
    with pytest.raises(CommandError):
        parse_command(line)
