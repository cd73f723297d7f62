"""The lifecycle's table (connection_state.TABLE) against its steps: every pair, every state.

The table is the lifecycle's rules; these tests keep it honest. Every (state, event kind)
pair has an entry; each event kind has one step; walking every value the events reach
(breadth first, a few events deep) shows every state reachable, every rule taken, every
arrow the table declares taken and none it does not, and every pair the table names as
ignored changing nothing (its event's step, run anyway, gives back the same value and no
action). A misfit raises.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from adk_live_resume.rules.connection_state import (
    TABLE,
    ConnectionState,
    Ignored,
    Lifecycle,
    LifecycleError,
    Misfit,
    Rule,
    State,
    Step,
)
from adk_live_resume.rules.lifecycle_events import (
    EVENTS,
    AheadStarted,
    Asked,
    ClientClosed,
    CloseFrame,
    Event,
    Finished,
    FrameArrived,
    FramesCounted,
    GoAwayFrame,
    GoAwayRead,
    HandleChanged,
    MessageRead,
    MoveAsked,
    MoveNow,
    NextOpened,
    ReceiveFailed,
    RetryDue,
    SafePoint,
    SendFailed,
    SendsStopped,
    SocketClosed,
    Stalled,
    TimerFired,
)

_ERROR = ConnectionError("gone")
#: One of each event, with the arguments that lead different ways.
_ALPHABET: tuple[Event, ...] = (
    FramesCounted(),
    FrameArrived(),
    MessageRead(turn_open=True),
    MessageRead(turn_open=False),
    GoAwayFrame(30.0, now=1.0, margin=5.0, safe=True),
    GoAwayFrame(30.0, now=1.0, margin=5.0, safe=False),
    GoAwayRead(30.0, now=1.0, margin=5.0, safe=True),
    GoAwayRead(30.0, now=1.0, margin=5.0, safe=False),
    HandleChanged(safe=True),
    HandleChanged(safe=False),
    MoveAsked(Asked("why", "requested"), safe=True),
    MoveAsked(Asked("why", "requested"), safe=False),
    SafePoint(),
    TimerFired(),
    MoveNow("why", "go_away"),
    AheadStarted(started=True),
    AheadStarted(started=False),
    NextOpened(ok=True, refused=False, retry_in=None),
    NextOpened(ok=False, refused=True, retry_in=None),
    NextOpened(ok=False, refused=False, retry_in=1.0),
    NextOpened(ok=False, refused=False, retry_in=None),
    RetryDue(safe=True),
    RetryDue(safe=False),
    ReceiveFailed(now=2.0),
    CloseFrame(1011, "", now=2.0),
    SocketClosed(now=2.0),
    SendFailed(_ERROR, abort=True, now=2.0),
    ClientClosed(),
    Stalled(now=2.0),
    SendsStopped(),
    Finished(graceful=True),
    Finished(graceful=False),
)
_DEPTH = 5


def _steps() -> dict[type[Event], Step]:
    steps: dict[type[Event], Step] = {}
    for (_, event), entry in TABLE.items():
        if isinstance(entry, Rule):
            assert steps.setdefault(event, entry.step) is entry.step, f"{event} has two steps"
    return steps


def _walk() -> Iterator[tuple[Lifecycle, Event]]:
    """Every (value, event) pair reachable within ``_DEPTH`` events from a new connection."""
    start = Lifecycle()
    seen, frontier = {start}, [start]
    for _ in range(_DEPTH):
        reached: list[Lifecycle] = []
        for now in frontier:
            for event in _ALPHABET:
                yield now, event
                entry = TABLE[(now.state, type(event))]
                if isinstance(entry, Rule):
                    after, _ = entry.step(now, event)
                    if after not in seen:
                        seen.add(after)
                        reached.append(after)
        frontier = reached


def test_every_pair_of_state_and_event_has_an_entry() -> None:
    assert set(TABLE) == {(state, event) for state in State for event in EVENTS}
    assert {type(event) for event in _ALPHABET} == set(EVENTS)
    assert set(_steps()) == set(EVENTS), "an event ignored in every state"


def test_the_steps_do_what_the_table_says_in_every_value_reached() -> None:
    steps = _steps()
    states: set[State] = set()
    taken: set[tuple[State, type[Event]]] = set()
    arrows: set[tuple[State, State]] = set()
    for now, event in _walk():
        states.add(now.state)
        key = (now.state, type(event))
        entry = TABLE[key]
        if isinstance(entry, Misfit):
            continue
        after, actions = steps[type(event)](now, event)
        if isinstance(entry, Ignored):
            assert (after, actions) == (now, []), f"{key} is named ignored but acts: {actions}"
            continue
        taken.add(key)
        if after.state is not now.state:
            assert after.state in entry.to, f"{key} led to {after.state}, not in the table"
            arrows.add((now.state, after.state))
    assert states == set(State), "a state no event reaches"
    rules = {key for key, entry in TABLE.items() if isinstance(entry, Rule)}
    assert taken == rules, f"rules never taken: {rules - taken}"
    declared = {
        (state, to)
        for (state, _), entry in TABLE.items()
        if isinstance(entry, Rule)
        for to in entry.to
    }
    assert arrows == declared, f"arrows declared and never taken: {declared - arrows}"


def test_final_states_have_no_arrow_out() -> None:
    for (state, event), entry in TABLE.items():
        if state in (State.RETIRED, State.CLIENT_CLOSED) and isinstance(entry, Rule):
            assert not entry.to, (state, event)


def test_an_event_that_cannot_come_in_a_state_raises() -> None:
    core = ConnectionState()
    assert isinstance(TABLE[(State.CONNECTED, AheadStarted)], Misfit)
    with pytest.raises(LifecycleError, match="AheadStarted cannot come in CONNECTED"):
        core.ahead_started(True)
    assert core.state is State.CONNECTED
