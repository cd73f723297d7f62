"""The outage value (outage.Outage, outage.AttemptEnd): immutable, with its history. Pure."""

from __future__ import annotations

import dataclasses

import pytest

from adk_live_resume.rules.errors import Drop
from adk_live_resume.rules.outage import PROGRESS_CONNECTED, AttemptEnd, Outage

INTERNAL = Drop("closed", 1011, "Internal error encountered.")


def _drop(**fields: object) -> AttemptEnd:
    return dataclasses.replace(AttemptEnd("drop", at=10.0, drop=INTERNAL), **fields)


@pytest.mark.parametrize(
    ("end", "progress"),
    [
        (_drop(answered=True), True),
        (_drop(connected_for=PROGRESS_CONNECTED), True),
        # setupComplete alone is no progress: a spent quota closes a second after it
        (_drop(connected_for=0.8), False),
        (_drop(at_connect=True), False),
        (_drop(connected_for=PROGRESS_CONNECTED - 0.1), False),
        # a stalled connection progressed only if a user turn got content before the stall
        (AttemptEnd("stall", at=1.0, what="x", connected_for=90.0), False),
        (AttemptEnd("stall", at=1.0, what="x", answered=True), True),
    ],
)
def test_progress_is_an_answer_or_a_minute_connected(end: AttemptEnd, progress: bool) -> None:
    assert end.progress is progress


def test_the_same_way_is_the_same_close_code_and_reason_from_the_server() -> None:
    assert _drop().same_way(_drop(resumed=True, at_connect=True))
    assert _drop(drop=Drop("closed", 1011, " Internal error encountered. ")).same_way(_drop())
    assert not _drop().same_way(_drop(drop=Drop("closed", 1011, "Deadline expired")))
    assert not _drop().same_way(_drop(drop=Drop("closed", 1008, INTERNAL.reason)))
    aborted = _drop(drop=Drop("closed", 1006, "abnormal closure (no close frame)"))
    assert not aborted.closed_by_server and not aborted.same_way(aborted)  # the network's
    failed = _drop(drop=Drop("connect_failed", None, "timed out"))
    assert not failed.same_way(failed)
    assert not AttemptEnd("stall", at=0.0).same_way(AttemptEnd("stall", at=0.0))


def test_an_end_says_how_it_ended() -> None:
    assert _drop().describe() == "1011 Internal error encountered."
    assert AttemptEnd("stall", at=0.0, what="no answer").describe() == "stall: no answer"
    assert AttemptEnd("moved", at=0.0, what="goAway deadline").describe() == "goAway deadline"


def test_increment_returns_a_new_outage_with_the_history_and_leaves_the_old_one() -> None:
    first = _drop(answered=True)
    begun = Outage.after(first, None)
    assert begun == Outage(started_at=10.0) and begun.attempts == 0 and begun.last is None
    after = begun.increment(first, "resume", abandoned=False)
    assert begun.history == () and after.attempts == 1
    resumed = _drop(at=11.0, resumed=True, connected_for=0.8)
    later = after.increment(resumed, "fresh_start", "poisoned_handle", abandoned=True)
    assert [t.end for t in later.history] == [first, resumed] and after.attempts == 1
    assert later.last is not None and later.last.failure == "poisoned_handle"
    assert later.abandoned == 1 and after.abandoned == 0
    assert later.read_as("poisoned_handle") == [later.history[1]]
    with pytest.raises(dataclasses.FrozenInstanceError):
        later.started_at = 0.0  # type: ignore[misc]


def test_an_end_with_progress_begins_a_new_outage_and_one_without_goes_on() -> None:
    going = Outage.after(_drop(), None).increment(_drop(), "resume", abandoned=False)
    assert Outage.after(_drop(at=20.0, connected_for=0.8), going) is going
    fresh = Outage.after(_drop(at=20.0, answered=True), going)
    assert fresh == Outage(started_at=20.0)


def test_the_outage_timeout_counts_the_time_disconnected_only() -> None:
    first = _drop(at=100.0, answered=True)
    outage = Outage.after(first, None).increment(first, "resume", abandoned=False)
    # the first end's connection was before the outage: its time is not the outage's
    assert outage.elapsed(101.0) == 1.0
    second = _drop(at=131.0, resumed=True, connected_for=30.0)
    # deciding about the second end: 31 s since the start, 30 of them connected
    assert outage.elapsed(131.0, second) == pytest.approx(1.0)
    outage = outage.increment(second, "resume", abandoned=False)
    assert outage.connected == 30.0 and outage.elapsed(133.0) == pytest.approx(3.0)


def test_what_each_stall_of_the_outage_saw_in_order() -> None:
    one = AttemptEnd("stall", at=1.0, what="no answer 15.0 s after a typed turn", answered=True)
    two = AttemptEnd("stall", at=20.0, what="3 turns in a row answered with nothing")
    outage = Outage.after(one, None).increment(one, "resume", "stall", abandoned=False)
    outage = outage.increment(_drop(at=21.0), "resume", abandoned=False)
    outage = outage.increment(two, "fresh_start", "stall", abandoned=True)
    assert outage.stalls() == [one.what, two.what]
