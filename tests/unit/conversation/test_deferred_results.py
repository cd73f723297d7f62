"""Unit tests of :mod:`adk_live_resume.conversation.deferred_results` (pure: no sockets)."""

from __future__ import annotations

from google.genai import types

from adk_live_resume.conversation.deferred_results import MAX_WAIT_SECONDS, DeferredResults, Send


def _reply_turn(*ids: str) -> Send:
    parts = [
        types.Part(function_response=types.FunctionResponse(id=i, name="job", response={}))
        for i in ids
    ]
    return "send_client_content", {
        "turns": [types.Content(role="user", parts=parts)],
        "turn_complete": True,
    }


def test_a_turn_waits_while_the_user_is_busy_and_goes_once_in_order() -> None:
    deferred = DeferredResults()
    first, second = _reply_turn("a"), _reply_turn("b")
    deferred.hold(first, now=0.0)
    deferred.hold(second, now=1.0)
    assert deferred.due(user_busy=True, now=2.0) == []
    assert deferred.due(user_busy=False, now=3.0) == [first, second]
    assert not deferred and deferred.due(user_busy=False, now=4.0) == []


def test_a_turn_never_waits_longer_than_the_bound() -> None:
    deferred = DeferredResults()
    turn = _reply_turn("a")
    deferred.hold(turn, now=10.0)
    assert deferred.due(user_busy=True, now=10.0 + MAX_WAIT_SECONDS - 0.1) == []
    assert deferred.due(user_busy=True, now=10.0 + MAX_WAIT_SECONDS) == [turn]


def test_a_fresh_session_drops_only_the_turns_its_history_holds() -> None:
    deferred = DeferredResults()
    held, lacked = _reply_turn("a"), _reply_turn("b", "c")
    deferred.hold(held, now=0.0)
    deferred.hold(lacked, now=0.0)
    deferred.on_fresh_session(["a", "b"])  # c is not in the history
    assert deferred.due(user_busy=False, now=1.0) == [lacked]
