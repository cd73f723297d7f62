"""Property: a held background result goes once, in order, never splits an utterance, and
never waits past its bound.

A state machine holds turns carrying background results in :class:`DeferredResults` while the
user speaks or is quiet, asks what is due as time passes, and starts fresh sessions whose
history holds some of the responses. The reference is the module's guarantees: every turn
held is given once, in the order held; none while the user is busy unless the oldest waited
:data:`MAX_WAIT_SECONDS`; a fresh session drops exactly the turns whose every response its
history holds.
"""

from __future__ import annotations

import itertools
from typing import Any

from google.genai import types
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from adk_live_resume.conversation.deferred_results import MAX_WAIT_SECONDS, DeferredResults, Send


def _turn(ids: list[str]) -> Send:
    parts = [
        types.Part(function_response=types.FunctionResponse(id=i, name="job", response={}))
        for i in ids
    ]
    kwargs: dict[str, Any] = {"turns": [types.Content(role="user", parts=parts)]}
    return ("send_client_content", kwargs)


class DeferredResultsMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.deferred = DeferredResults()
        self.now = 0.0
        self.ids = itertools.count(1)
        #: The reference: turns held and not given, with their responses and when held.
        self.held: list[tuple[Send, frozenset[str], float]] = []
        #: Every turn given (kept alive, so that their ids stay theirs).
        self.given: list[Send] = []

    @rule(responses=st.integers(1, 2))
    def hold_a_result(self, responses: int) -> None:
        ids = [f"r{next(self.ids)}" for _ in range(responses)]
        turn = _turn(ids)
        self.deferred.hold(turn, self.now)
        self.held.append((turn, frozenset(ids), self.now))

    @rule(seconds=st.sampled_from([0.0, 0.5, 3.0, 14.9, 15.0]))
    def time_passes(self, seconds: float) -> None:
        self.now += seconds

    @rule(user_busy=st.booleans())
    def next_send(self, user_busy: bool) -> None:
        due = self.deferred.due(user_busy=user_busy, now=self.now)
        overdue = bool(self.held) and self.now - self.held[0][2] >= MAX_WAIT_SECONDS
        expected = [turn for turn, _, _ in self.held] if not user_busy or overdue else []
        assert [id(t) for t in due] == [id(t) for t in expected], (
            f"due {len(due)} turn(s), the contract {len(expected)} (busy={user_busy})"
        )
        self.given.extend(due)
        if due:
            self.held = []

    @precondition(lambda self: self.held)
    @rule(data=st.data())
    def fresh_session(self, data: st.DataObject) -> None:
        every = sorted(set().union(*(ids for _, ids, _ in self.held)))
        in_history = set(data.draw(st.lists(st.sampled_from(every), unique=True)))
        self.deferred.on_fresh_session(in_history)
        self.held = [item for item in self.held if not item[1] <= in_history]

    @invariant()
    def each_turn_is_given_once_and_the_rest_still_held(self) -> None:
        assert len(self.given) == len({id(t) for t in self.given}), "a turn was given twice"
        assert bool(self.deferred) is bool(self.held)


TestAHeldResultGoesOnceInOrderWhenTheUserIsQuietOrItWaitedItsBound = DeferredResultsMachine.TestCase
