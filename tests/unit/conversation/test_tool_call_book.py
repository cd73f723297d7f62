"""ToolCallBook cases the state machine does not play: what ADK's session holds before the book.

ADK writes a background (NON_BLOCKING) tool's result to its session before its sender sends
the response; a fresh session's history may hold a result the book has not seen yet.
"""

from __future__ import annotations

from adk_live_resume.conversation.tool_calls import ToolCallBook


def _fresh_session_holding_a_running_calls_result() -> ToolCallBook:
    book = ToolCallBook()
    book.on_calls([("c1", "job", {"name": "mail"})], running=lambda *_: True)
    book.on_handle()  # (its state holds the call, still running)
    book.on_fresh_session(answered_in_history=["c1"])  # (ADK's session has its result)
    book.on_handle()
    return book


def test_a_result_in_a_fresh_history_is_not_given_again_to_a_session_resumed_from_it() -> None:
    book = _fresh_session_holding_a_running_calls_result()
    book.on_resumed()
    book.on_result("c1", {"done": "yes"})  # (the response reaches the send path only now)
    assert book.is_unknown("c1"), "the resumed session knows no earlier id"
    assert not book.goes_as_turn("c1"), "its history had the result"
    assert book.take_late() == []


def test_a_result_in_a_fresh_history_is_not_told_when_the_replay_drops_it() -> None:
    book = _fresh_session_holding_a_running_calls_result()
    book.on_result("c1", {"done": "yes"})
    book.on_resumed()
    book.dropped_from_replay(["c1"])
    book.on_answered()
    assert book.take_late() == []


def test_a_result_told_as_content_is_told_again_to_a_session_resumed_from_before_it() -> None:
    # (the state machine found it: "told" as content on one connection is not "held" by a
    # session resumed from a handle older than the telling; only a fresh history holds it)
    book = ToolCallBook()
    book.on_calls([("c1", "balance", {})], running=lambda *_: False)
    book.on_handle()  # (its state holds the call, no result yet)
    book.on_resumed()
    book.on_result("c1", {"balance": 3})
    assert book.goes_as_turn("c1"), "the resumed session gets it as content"
    book.on_resumed()  # (from the same handle: that session never got the content)
    book.dropped_from_replay(["c1"])
    book.on_answered()
    assert [late.call_id for late in book.take_late()] == ["c1"]
